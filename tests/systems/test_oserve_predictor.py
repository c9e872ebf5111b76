"""OServe's workload predictor (§5.1): RRMSE arithmetic, span counting, the LSTM's determinism under a
seed, the baselines, and the predictor CLI at test scale (no data: the pools are monkeypatched)."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.metrics.forecast_error import mean_rrmse, rrmse
from servesim.systems.oserve import predictor as P


def test_rrmse_hand_case():
    a = np.array([[10.0, 1.0], [20.0, 3.0], [30.0, 2.0]])
    p = np.array([[12.0, 1.0], [18.0, 3.0], [30.0, 2.0]])
    # column 0: rmse = sqrt((4 + 4 + 0) / 3), mean 20; column 1: exact
    assert rrmse(a, p) == pytest.approx([100 * np.sqrt(8 / 3) / 20, 0.0])
    assert mean_rrmse(a, p) == pytest.approx(50 * np.sqrt(8 / 3) / 20)
    assert np.isnan(rrmse([0.0, 0.0], [1.0, 1.0])[0])
    with pytest.raises(ValueError):
        rrmse([1.0, 2.0], [1.0])


def test_span_counts_by_minute_and_type():
    wl = pd.DataFrame({"arrival_s": [1.0, 59.9, 60.0, 130.0, 130.5], "app": ["A", "B", "A", "B", "B"]})
    c = P.span_counts(wl, ["A", "B"])
    assert c.tolist() == [[1, 1], [1, 0], [0, 2]]
    with pytest.raises(ValueError):
        P.span_counts(wl.assign(app=["A", "C", "A", "B", "B"]), ["A", "B"])


def _series(n=400, seed=0):
    t = np.arange(n)
    rng = np.random.default_rng(seed)
    base = np.column_stack([100 + 40 * np.sin(2 * np.pi * t / 120 + ph) for ph in (0.0, 1.0, 2.0)])
    return rng.poisson(base).astype(float)


def test_lstm_is_deterministic_for_a_seed_and_differs_across_seeds():
    s = _series()
    kw = dict(lookback=20, hidden=8, layers=1, epochs=3, stride=2)
    a = P.rolling(P.LSTMPredictor(seed=3, **kw).fit(s[:300]), s, 300)
    b = P.rolling(P.LSTMPredictor(seed=3, **kw).fit(s[:300]), s, 300)
    c = P.rolling(P.LSTMPredictor(seed=4, **kw).fit(s[:300]), s, 300)
    assert np.array_equal(a[300:], b[300:])
    assert not np.array_equal(a[300:], c[300:])
    assert np.all(a[300:] >= 0) and np.isnan(a[:300]).all()


def test_a_saved_lstm_forecasts_bit_for_bit_as_the_trained_one(tmp_path):
    s = _series()
    p = P.LSTMPredictor(lookback=20, hidden=8, layers=1, epochs=2, stride=2, seed=5).fit(s[:300])
    p.save(tmp_path / "m.pt")
    q = P.LSTMPredictor.load(tmp_path / "m.pt")
    assert q.settings() == p.settings() and q.history == p.history
    assert np.array_equal(P.rolling(p, s, 300)[300:], P.rolling(q, s, 300)[300:])


def test_moving_average_and_aggregate_baselines():
    s = np.array([[1.0, 3.0], [3.0, 1.0], [5.0, 5.0], [7.0, 1.0]])
    ma = P.MovingAveragePredictor(window=2)
    assert P.rolling(ma, s, 2, pad=False)[2:].tolist() == [[2.0, 2.0], [4.0, 3.0]]
    # padding repeats the first span: the first prediction is that span itself
    assert P.rolling(ma, s, 0, pad=True)[0].tolist() == [1.0, 3.0]
    agg = P.AggregatePredictor(lookback=2, hidden=4, layers=1, epochs=1)
    agg.lstm.predict = lambda X: np.full((len(X), 1), 10.0)  # the split, not the forecast, is under test
    out = agg.predict(s[None, 1:3])  # previous span's mix is 5:5
    assert out.tolist() == [[5.0, 5.0]]
    assert np.array_equal(P.rolling(P.make("oracle"), s, 1)[1:], s[1:])


def test_rolling_reads_the_history_before_the_series():
    s = np.array([[1.0, 3.0], [3.0, 1.0], [5.0, 5.0]])
    h = np.array([[9.0, 9.0], [7.0, 1.0], [5.0, 3.0]])
    ma = P.MovingAveragePredictor(window=2)
    out = P.rolling(ma, s, 0, history=h)
    # span 0 from the last two history spans (never from span 0 itself), span 1 from one of each
    assert out.tolist() == [[6.0, 2.0], [3.0, 3.0], [2.0, 2.0]]
    with pytest.raises(Exception, match="history has 1 types"):
        P.rolling(ma, s, 0, history=h[:, :1])


def test_trace_lead_in_continues_the_trace_back_in_time(monkeypatch):
    from servesim.workload import gen_oserve as G

    monkeypatch.setattr(G, "_azure_shape", lambda m: np.arange(1.0, m + 1.0))
    rel = G._base_rate(80, 30)
    assert np.allclose(rel[30:], np.arange(1.0, 81.0) / 40.5)  # the trace's own shape, mean 1
    assert np.allclose(rel[:30][::-1], rel[30:60])              # minute -k mirrors minute k - 1
    a = G.trace_lead_in("T1", 30, rate_rps=300.0, seed=3, drift_noise=0.0)
    assert a.shape == (30, 4) and np.array_equal(a, G.trace_lead_in("T1", 30, rate_rps=300.0, seed=3, drift_noise=0.0))
    p1 = G._trace_props("T1", 80)[0]
    assert np.allclose(a.sum(0) / a.sum(), p1 / p1.sum(), atol=0.01)   # the trace's opening composition
    assert abs(a.sum() / (300.0 * 60 * rel[:30].sum()) - 1) < 0.01      # at the trace's scale
    # compressed like the served trace: minutes -stride x spans .. -stride
    assert np.array_equal(P.trace_history("T1", 5, 300.0, 3, 4), G.trace_lead_in("T1", 20, 300.0, 3)[::4])
    with pytest.raises(Exception, match="expected T1 or T2"):
        G.trace_lead_in("T9", 3)


def test_predictor_cli_at_test_scale(tmp_path, monkeypatch):
    from servesim.workload import gen_oserve as G

    rng = np.random.default_rng(1)
    pool = pd.DataFrame({"prompt_tokens": rng.integers(50, 800, 400), "output_tokens": rng.integers(2, 300, 400),
                         "type": np.repeat(np.arange(4), 100)})
    monkeypatch.setattr(G, "type_pool", lambda *a, **k: pool)
    monkeypatch.setattr(G, "_base_rate", lambda minutes, lead_in=0: np.ones(minutes + lead_in))
    out = tmp_path / "o"
    assert P.main(["--days", "2", "--hidden", "8", "--layers", "1", "--epochs", "2", "--stride", "8",
                   "--traces", "T1", "--rate", "1.0", "-o", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["lookback_spans"] == 50 and s["train_fraction"] == 0.9
    assert set(s["rrmse_test_pct"]) == {"lstm", "moving_average", "aggregate_lstm", "last_value"}
    err = pd.read_csv(out / "rrmse.csv")
    assert set(err.source) == {"azure_week_test", "T1"} and np.isfinite(err.rrmse_mean).all()
    assert P.LSTMPredictor.load(out / P.MODEL_FILE).settings()["hidden"] == 8  # what the online runs read
    assert P.main(["--days", "0", "-o", str(tmp_path / "bad")]) == 2
