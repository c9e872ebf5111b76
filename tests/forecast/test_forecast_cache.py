"""servesim.forecast.cache: a cached forecast is the fresh one, bit for bit; any input change misses."""

import numpy as np

from servesim.forecast import Arima, MovingAverage
from servesim.forecast.cache import fit_predict


def _hist(seed=0, n=60):
    rng = np.random.default_rng(seed)
    return 1e5 + 2e4 * np.sin(np.arange(n) / 9.0) + rng.normal(0, 3e3, n)


def test_hit_returns_the_fresh_forecast_bit_for_bit(tmp_path):
    y = _hist()
    fresh, info0 = fit_predict(Arima, y, 60, cache=None)
    first, info1 = fit_predict(Arima, y, 60, cache=tmp_path)
    again, info2 = fit_predict(Arima, y, 60, cache=tmp_path)
    assert not info0["cached"] and not info1["cached"] and info2["cached"]
    assert fresh.tobytes() == first.tobytes() == again.tobytes()
    assert info2["train_s"] == info1["train_s"] > 0  # the real fit's measured time, kept with the entry
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_any_input_change_is_a_miss(tmp_path):
    y = _hist()
    fit_predict(Arima, y, 60, cache=tmp_path)
    for make, hist, h in [(Arima, _hist(1), 60), (Arima, y, 30), (lambda: Arima(order=(1, 1, 1)), y, 60),
                          (MovingAverage, y, 60)]:
        _, info = fit_predict(make, hist, h, cache=tmp_path)
        assert not info["cached"]
    assert len(list(tmp_path.rglob("*.json"))) == 5


def test_an_unreadable_entry_is_recomputed(tmp_path):
    y = _hist()
    want, _ = fit_predict(Arima, y, 10, cache=tmp_path)
    (entry,) = tmp_path.rglob("*.json")
    entry.write_text("{not json")
    got, info = fit_predict(Arima, y, 10, cache=tmp_path)
    assert not info["cached"] and got.tobytes() == want.tobytes()


def test_a_hit_does_not_import_statsmodels(tmp_path):
    """ARIMA imports statsmodels at its first fit (outside the fit's clock), not when built: a run
    whose forecasts all come from the cache never pays the import."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from pathlib import Path\n"
            "from servesim.forecast import Arima\n"
            "from servesim.forecast.cache import fit_predict\n"
            "y = 1e5 + 2e4 * np.sin(np.arange(60) / 9.0)\n"
            "_, info = fit_predict(Arima, y, 60, cache=Path(sys.argv[1]))\n"
            "print(info['cached'], 'statsmodels' in sys.modules)\n")
    run = lambda: subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,  # noqa: E731
                                 text=True, check=True).stdout.split()
    assert run() == ["False", "True"]   # a miss fits, importing statsmodels
    assert run() == ["True", "False"]   # a hit reads the cache and never imports it
