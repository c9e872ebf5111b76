"""PreServe serving: the load anticipator's map arithmetic, Eq. 1 on two instances, predicted
lengths on requests, and the routing sweep's CLI at test scale."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.perf import LinearStepTime
from servesim.sim import Cluster, InstanceConfig
from servesim.sim.request import Req
from servesim.systems.preserve.anticipator import LoadAnticipator
from servesim.systems.preserve.routing import PreServeRouter
from tests.data_marks import needs_a40_profile


def test_add_writes_prompt_plus_offset_for_predicted_span():
    a = LoadAnticipator(1000, horizon=64, lookahead=10)
    a.add(1, prompt=100, predicted=4)
    np.testing.assert_allclose(a.window()[:6], [100, 101, 102, 103, 0, 0])
    a.add(2, prompt=10, predicted=2)
    np.testing.assert_allclose(a.window()[:4], [110, 112, 102, 103])
    assert a.remaining_decode() == 6
    # time moves: the map shifts by the iterations passed
    a.advance(1)
    np.testing.assert_allclose(a.window()[:4], [112, 102, 103, 0])
    assert a.remaining_decode() == 4
    assert a.peak() == pytest.approx(0.112)


def test_early_end_subtracts_exactly_what_is_left():
    a = LoadAnticipator(1000, horizon=64, lookahead=10)
    a.add(1, prompt=100, predicted=6)
    a.add(2, prompt=50, predicted=3)
    a.advance(2)
    assert a.end(1)                     # true length 2 < predicted 6
    np.testing.assert_allclose(a.window()[:5], [52, 0, 0, 0, 0])
    assert a.remaining_decode() == 1
    assert not a.end(1)
    a.advance(3)
    a.end(2)
    assert not a.window().any() and a.remaining_decode() == 0


def test_extension_adds_fifth_of_prediction_until_the_request_ends():
    a = LoadAnticipator(1000, horizon=64, lookahead=10, extension=0.2)
    a.add(7, prompt=20, predicted=10)   # extension = 0.2 x 10 = 2 iterations
    a.advance(10)                       # still running at its predicted end
    np.testing.assert_allclose(a.window()[:3], [30, 31, 0])
    a.advance(12)                       # the extension ran out: another one
    np.testing.assert_allclose(a.window()[:3], [32, 33, 0])
    a.advance(13)
    a.end(7)                            # the unused part of the extension leaves
    assert not a.window().any()
    # a request added when already past its prediction is extended at once
    a.add(8, prompt=5, predicted=3, generated=4)
    np.testing.assert_allclose(a.window()[:2], [9, 0])   # ext = max(1, round(0.6)) = 1


def test_peak_with_virtual_add_and_overload_test():
    a = LoadAnticipator(100, horizon=64, lookahead=10)
    a.add(1, prompt=90, predicted=20)   # 90..99 over the next 10 iterations
    assert a.peak() == pytest.approx(0.99)
    # virtual add of P = 20, D = 3: offsets 0..2 gain 20, 21, 22 -> the peak is 92 + 22 at j = 2
    assert a.peak(prompt=20, predicted=3) == pytest.approx(1.14)
    assert a.peak(prompt=5, predicted=3) == pytest.approx(0.99)    # 92 + 7 < the map's own 99
    np.testing.assert_allclose(a.window()[:3], [90, 91, 92])        # a query adds nothing
    # > 95 % of M at offsets j with 90 + j > 95: j = 6..9 -> 4 of 10 iterations > 10 %
    assert a.overloaded()
    b = LoadAnticipator(100, horizon=64, lookahead=10)
    b.add(1, prompt=86, predicted=20)   # 86..95: none strictly above 95
    assert not b.overloaded()


class _Inst:
    def __init__(self, cap, queued):
        self.cfg = InstanceConfig(num_blocks=cap // 16)
        self.queued_prefill_tokens = queued
        self.iterations = 0
        self.now = 0.0

    def sync(self):
        pass


class _Cluster:
    def __init__(self, insts):
        from servesim.sim.routers import InstanceLoad

        self.instances = insts
        self.loads = [InstanceLoad(j) for j in range(len(insts))]
        self.on_request_done = None


def test_eq1_two_instances():
    # instance 0: little queued, but its map is near capacity; instance 1: more queued, empty map
    cl = _Cluster([_Inst(1600, queued=100), _Inst(1600, queued=500)])
    rt = PreServeRouter(t_mem=0.8, beta=1.0, lookahead=100)
    rt.bind(cl, [0, 1])
    rt.track[0].ant.add(99, prompt=1400, predicted=300)
    r = Req(0, 0.0, prompt=50, output=10)
    r.pred = 20
    L = rt.loads(r)
    # L_p = queued + P; L_d = remaining predicted decode + D; L_m = max(0, U_k - 0.8) * M
    assert L[0][0] == 150 and L[1][0] == 550
    assert L[0][1] == 300 + 20 and L[1][1] == 20
    peak0 = (1400 + 99) / 1600          # the map's own peak, above the virtual add's 50 + 19
    assert L[0][2] == pytest.approx((peak0 - 0.8) * 1600)
    assert L[1][2] == 0.0
    # total: 150 + 320 + 219 = 689 > 550 + 20 + 0 = 570 -> instance 1
    assert rt.select(r).seq == 1
    # without the memory term (beta = 0) instance 0 wins: 470 < 570
    rt0 = PreServeRouter(beta=0.0)
    rt0.bind(_Cluster(cl.instances), [0, 1])
    rt0.track[0].ant.add(99, prompt=1400, predicted=300)
    assert rt0.select(r).seq == 0


def test_router_refuses_requests_without_prediction():
    cl = _Cluster([_Inst(1600, 0), _Inst(1600, 0)])
    rt = PreServeRouter()
    rt.bind(cl, [0, 1])
    with pytest.raises(ValueError, match="no predicted length"):
        rt.select(Req(0, 0.0, prompt=5, output=5))


def _workload(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"request_id": np.arange(n), "arrival_s": np.sort(rng.uniform(0, 5, n)),
                         "prompt_tokens": rng.integers(10, 200, n), "output_tokens": rng.integers(5, 80, n),
                         "model": "default", "region": "r0", "tier": "IW-F", "app": "a", "deadline_s": np.nan})


def test_cluster_carries_predictions_and_pending_decode_reads_them():
    wl = _workload()
    cfg = InstanceConfig(num_blocks=400, policy="vllm-v0", max_num_batched_tokens=2048)
    seen = {}

    def spy(cluster, r):
        seen[r.idx] = r.pred
        return 0
    cl = Cluster.uniform(2, cfg, LinearStepTime(), router=spy)
    cl.run(wl, predicted=np.full(len(wl), 7))
    assert set(seen.values()) == {7}
    # predicted=True counts r.pred - generated on what an instance holds; default the true output
    from servesim.sim import Instance, Kernel
    k = Kernel()
    inst = Instance(k, cfg, LinearStepTime())
    for i, (p, o) in enumerate([(10, 30), (20, 40)]):
        r = Req(i, 0.0, p, o)
        r.pred = 5
        inst.submit(r)
    assert inst.pending_decode_tokens() == 70
    assert inst.pending_decode_tokens(predicted=True) == 10
    with pytest.raises(ValueError, match="workload rows"):
        Cluster.uniform(2, cfg, LinearStepTime()).run(wl, predicted=[1, 2])


def test_preserve_router_serves_every_request_and_keeps_maps_consistent():
    wl = _workload(200, seed=1)
    cfg = InstanceConfig(num_blocks=300, policy="vllm-v0", max_num_batched_tokens=2048)
    rt = PreServeRouter()
    cl = Cluster.uniform(3, cfg, LinearStepTime(), router=rt)
    res = cl.run(wl, predicted=wl.output_tokens.to_numpy() // 2 + 1)
    assert (res.requests.state == "finished").all()
    assert len(rt.select_s) == len(wl)
    for tr in rt.track.values():   # every request left its map and its queue
        assert len(tr.ant) == 0 and tr.queued_pred == 0
        assert not tr.ant.window().any()


@needs_a40_profile
def test_routing_sweep_cli_test_scale(tmp_path):
    from servesim.systems.preserve import routing_sweep

    out = tmp_path / "run"
    rc = routing_sweep.main(["--model", "7b", "--router", "preserve", "--qps", "6", "--duration-s", "20",
                             "--max-conversations", "150", "--sample-s", "2", "-o", str(out)])
    assert rc == 0
    pts = pd.read_csv(out / "points.csv")
    assert len(pts) == 1 and pts.n_finished.iloc[0] == pts.n_requests.iloc[0] > 50
    assert pts.overhead_ms.iloc[0] == pytest.approx(45.6)
    s = json.loads((out / "summary.json").read_text())
    assert s["predictions"] == "oracle" and s["router_timed_requests"] == pts.n_requests.iloc[0]
    assert 0 < s["isolated_norm_latency_s"] < 0.2
    ts = pd.read_csv(out / "timeseries.csv")
    assert set(ts.instance) == {0, 1, 2, 3}
    # a bad option is a one-line input error (exit 2) and leaves no folder
    assert routing_sweep.main(["--model", "7b", "--router", "lr", "--qps", "0", "-o", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()


@needs_a40_profile
def test_routing_sweep_true_lengths_changes_only_what_the_router_is_told(tmp_path):
    """--lengths true: the same requests and arrivals, PreServe's router told the true lengths."""
    from servesim.systems.preserve import routing_sweep, serving as sv

    args = ["--model", "7b", "--router", "preserve", "--qps", "6", "--duration-s", "20", "--max-conversations", "150"]
    pool, _ = sv.request_pool(max_conversations=150)
    pool = pool.assign(pred=np.maximum(1, pool["output_tokens"] // 7))  # a poor predictor, far from the truth
    csv = tmp_path / "length_predictions.csv"
    pd.DataFrame({"label_set": "first", "conv_id": range(len(pool)), "turn": 0, "prompt_tokens": pool.prompt_tokens,
                  "output_tokens": pool.output_tokens, "pred_preserve": pool.pred, "pred_museve": pool.pred}).to_csv(csv, index=False)
    runs = {}
    for lengths in ("predicted", "true"):
        out = tmp_path / lengths
        assert routing_sweep.main(args + ["--predictions", str(csv), "--lengths", lengths, "-o", str(out)]) == 0
        runs[lengths] = (pd.read_csv(out / "points.csv"), json.loads((out / "summary.json").read_text()))
    (p_pred, s_pred), (p_true, s_true) = runs["predicted"], runs["true"]
    assert s_pred["lengths"] == "predicted" and s_true["lengths"] == "true"
    assert p_pred.n_requests.iloc[0] == p_true.n_requests.iloc[0]
    assert "true lengths" in s_true["request_source"]
    cols = ["ttft_mean_s", "norm_p99_s", "preemptions"]
    assert not p_pred[cols].equals(p_true[cols])  # the router's decisions followed what it was told


def test_min_use_router_with_a_second_sampler_ends():
    from servesim.systems.preserve.routing import MinUseRouter
    from servesim.systems.preserve.serving import instance_sampler, sample_frame

    wl = _workload(80, seed=2)
    cfg = InstanceConfig(num_blocks=300, policy="vllm-v0", max_num_batched_tokens=2048)
    rt = MinUseRouter()
    cl = Cluster.uniform(2, cfg, LinearStepTime(), router=rt)
    smp = instance_sampler(cl, 0.5)      # two periodic observers must not keep each other alive
    res = cl.run(wl)
    assert (res.requests.state == "finished").all()
    ts = sample_frame(smp)
    assert set(ts.instance) == {0, 1} and (ts.queued_prompt_tokens >= 0).all()
    assert ts.time_s.max() <= res.requests.finish_s.max() + 0.5
    assert 0.0 <= rt.utilisation(0) <= 1.0


def test_norm_latency_series_bins_finishes_per_instance():
    from servesim.systems.preserve.serving import norm_latency_series

    df = pd.DataFrame({"state": ["finished", "finished", "finished", "rejected"], "instance": ["i0", "i0", "i1", "i1"],
                       "finish_s": [0.5, 0.7, 1.2, 1.3], "e2e_s": [2.0, 4.0, 1.0, 9.0], "output_tokens": [10, 10, 5, 1]})
    s = norm_latency_series(df, 1.0, 2).set_index(["time_s", "instance"]).norm_latency_s
    assert s[(0.0, 0)] == pytest.approx(0.3) and s[(1.0, 1)] == pytest.approx(0.2) and len(s) == 2
