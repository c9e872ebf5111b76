import pytest

import math

from servesim.metrics import flatten, seed_band, spread


def test_spread_by_hand():
    runs = [{"a": 1.0, "b": {"c": 2}, "s": "x"}, {"a": 3.0, "b": {"c": 2}, "s": "x"}, {"a": 2.0, "b": {"c": 2}, "s": "y"}]
    sp = spread(runs)
    assert set(sp) == {"a", "b.c"}                                   # strings are not metrics
    assert sp["a"] == {"n": 3, "mean": 2.0, "std": 1.0, "min": 1.0, "max": 3.0, "rel_spread": 1.0}
    assert sp["b.c"]["std"] == 0.0 and sp["b.c"]["rel_spread"] == 0.0


def test_spread_skips_missing_and_single_runs():
    sp = spread([{"a": 1.0}, {"a": None}], keys=["a"])
    assert sp["a"]["n"] == 1 and sp["a"]["std"] is None
    with pytest.raises(ValueError, match="no runs"):
        spread([])


def test_flatten():
    assert flatten({"all": {"p99_ttft_s": 1.0}, "x": 2}) == {"all.p99_ttft_s": 1.0, "x": 2}


def test_seed_band_by_hand():
    per = [{"g": 2.0, "ok": True, "name": "a", "h": 1.0, "h__bound": "lower", "n": 4},
           {"g": 4.0, "ok": False, "name": "b", "h": 3.0, "n": float("nan")},
           {"g": 9.0, "ok": True, "name": "c", "h": 2.0, "n": 5}]
    b = seed_band(per)
    assert (b["g__seed_min"], b["g__seed_max"], b["g__seed_mean"]) == (2.0, 9.0, 5.0)
    assert not any(k.startswith(("ok", "name")) for k in b)          # bools and strings are not metrics
    assert b["h__seed_mean"] == 2.0 and b["h__seed_min__bound"] == b["h__seed_mean__bound"] == "lower"
    assert all(math.isnan(b[f"n__seed_{s}"]) for s in ("min", "max", "mean"))   # no band without every seed
    assert "g__seed_mean__bound" not in b and b["seeds"] == 3
    assert seed_band([]) == {"seeds": 0}
