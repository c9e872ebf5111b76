"""PreServe's stated settings load, validate and resolve TP degrees through the catalog."""

import pytest

from servesim.systems.preserve import PreServeConfig, paper_inputs


def test_defaults_and_overrides():
    c = PreServeConfig.paper()
    assert (c.window_s, c.lookahead_l, c.router_t_mem, c.scaledown_threshold) == (600, 100, 0.8, 0.3)
    assert c.tp_for("llama-2-13b") == 2 and c.tp_for("Llama-2-7b") in (1,)
    assert PreServeConfig.paper(cold_start_s=30).cold_start_s == 30
    with pytest.raises(ValueError, match="unknown"):
        PreServeConfig.paper(coldstart=30)
    with pytest.raises(KeyError, match="no TP degree"):
        c.tp_for("llama-3-8b")


def test_stated_tables_have_consistent_shapes():
    pi = paper_inputs()
    t1 = pi["table1_ape_pct"]
    for method in ("ARIMA", "ETS", "Prophet", "PreServe"):
        assert len(t1[method]["mean"]) == len(t1[method]["max"]) == len(t1["columns"])
        assert all(m <= x for m, x in zip(t1[method]["mean"], t1[method]["max"]))
    for row in pi["table2_length"].values():
        if "mae" in row:
            assert row["acc25"] <= row["acc50"] <= row["acc100"]
