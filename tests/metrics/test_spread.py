import pytest

from servesim.metrics import flatten, spread


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
