"""OServe scheduler core: the α*/Φ objective on hand-checkable flow cases, replica shapes and
placement, the capacity profiler and its cache, Alg. 1's determinism and the exhaustive search."""

import numpy as np
import pytest

from servesim.systems.oserve import (
    CapacityProfiler,
    Shape,
    TypePool,
    evaluate,
    max_flow,
    phi,
    strategies,
)
from servesim.systems.oserve import search as S
from tests.data_marks import needs_azure_code


# ---------------------------------------------------------------- objective
def test_alpha_hand_case_two_replicas_two_types():
    # replica 0 serves 80 type-0 or 50 type-1 per span; replica 1 only type 1, 40 per span
    n = np.array([[80.0, 50.0], [0.0, 40.0]])
    v = evaluate([80, 60], n)
    # type 1 on replica 1 fully (40), the remaining 20 on replica 0 costs 20/50 = 0.4 of it,
    # type 0 then needs 80/80 = 1: total 1.4 > 1. alpha solves a*80/80 + (a*60 - 40)/50 = 1 with
    # a*60 >= 40 on replica 1 saturated (a*60 - 40 > 0 goes to 0): a(1 + 1.2) = 1.8 -> a = 9/11
    assert v.alpha == pytest.approx(9 / 11, rel=1e-9)
    assert set(v.saturated) == {0, 1} and v.underused == ()
    assert v.phi == pytest.approx(max_flow([80, 60], n).phi, rel=1e-9)
    assert v.phi < 140


def test_phi_saturates_but_alpha_breaks_the_tie():
    lam = [10, 10]
    small = np.array([[40.0, 40.0]])
    big = np.array([[80.0, 80.0]])
    a, b = evaluate(lam, small), evaluate(lam, big)
    assert a.phi == b.phi == 20  # the paper's Φ ties at Σλ
    assert a.alpha == pytest.approx(2.0) and b.alpha == pytest.approx(4.0)
    assert b.key() > a.key() and b.key("alpha") > a.key("alpha")


def test_edge_capacity_and_unserved_type():
    n = np.array([[100.0, 100.0]])
    e = np.array([[100.0, 0.0]])  # type 1 cannot be assigned (e.g. its KV does not fit)
    v = evaluate([50, 10], n, e)
    assert v.alpha == 0.0
    assert v.alpha_served == pytest.approx(2.0) and v.saturated == (0,)  # O / U still name the bottleneck
    assert phi([50, 10], n, e) == pytest.approx(50.0)
    with pytest.raises(ValueError, match="do not match"):
        evaluate([1, 2, 3], n)


def test_routing_fractions_sum_to_one():
    n = np.array([[60.0, 30.0], [30.0, 60.0], [45.0, 45.0]])
    f = evaluate([40, 40], n).fractions()
    assert np.allclose(f.sum(axis=0), 1.0)


# ---------------------------------------------------------------- shapes and placement
def test_strategies_follow_heads_and_memory():
    assert [s.tp for s in strategies("opt-66b", 6)] == [1, 2, 3, 6]  # 72 heads: TP3 and TP6 valid
    assert 3 not in [s.tp for s in strategies("opt-30b", 6)]  # 56 heads
    assert all(s.tp != 8 for s in strategies("llama-30b", 8))  # 52 heads
    assert strategies("llama-2-70b", 1) == []  # 138 GB of weights do not fit one H100


def test_placement_sets_cross_node_for_split_pipeline():
    # Table 3 T1-P6: (TP2,PP2) + 2 x (TP3,PP2) on 2 x 8 GPUs: one replica must span the nodes
    placed = S.place([Shape(2, 2), Shape(3, 2), Shape(3, 2)], 16)
    assert sum(s.cross_node for s in placed) == 1
    assert S.place([Shape(8), Shape(8)], 16) == (Shape(8), Shape(8))
    assert S.place([Shape(4), Shape(4), Shape(8)], 8) is None
    assert S.place([Shape(6), Shape(6)], 16) is not None and S.place([Shape(6), Shape(6), Shape(4)], 16) is None


def test_partitions():
    assert list(S.partitions(4, 1)) == [(4,), (3, 1), (2, 2), (2, 1, 1), (1, 1, 1, 1)]
    assert sum(1 for _ in S.partitions(16, 2)) == 55  # spec §1.5


# ---------------------------------------------------------------- profiler
def _pools():
    rng = np.random.default_rng(0)
    so = TypePool("SO", rng.integers(100, 600, 200), rng.integers(4, 30, 200))
    lo = TypePool("LO", rng.integers(50, 300, 200), rng.integers(200, 600, 200))
    return [so, lo]


def test_profiler_measures_and_caches(tmp_path):
    p = CapacityProfiler("opt-30b", _pools(), n_requests=150, cache_dir=tmp_path)
    n1, e1 = p.capacity(Shape(1))
    assert p.runs == 2 and np.all(n1 > 0) and np.array_equal(n1, e1)
    assert n1[0] > n1[1]  # short outputs complete faster
    assert np.array_equal(p.capacity(Shape(1))[0], n1) and p.runs == 2  # in memory
    q = CapacityProfiler("opt-30b", _pools(), n_requests=150, cache_dir=tmp_path)
    assert np.array_equal(q.capacity(Shape(1))[0], n1)
    assert q.runs == 0 and q.hits == 1  # from disk
    r = CapacityProfiler("opt-30b", _pools(), n_requests=150, seed=1, cache_dir=tmp_path)
    assert r.key(Shape(1)) != q.key(Shape(1))  # another input, another entry
    n4 = p.capacity(Shape(4))[0]
    assert np.all(n4 > n1)


def _ttft_growth(n_per_span: float, pool: TypePool, shape: Shape, seed: int = 5) -> float:
    """Late / early arrivals' median TTFT of a Poisson run at ``n_per_span`` (an independent probe)."""
    from servesim.sim import Cluster
    from servesim.systems.oserve.replica import GPU, instance_config, step_model
    from servesim.workload import schema

    rng = np.random.default_rng(seed)
    rate = n_per_span / 60.0
    t = np.cumsum(rng.exponential(1.0 / rate, int(rate * 120)))
    i = rng.integers(0, len(pool.prompt), len(t))
    r = Cluster.uniform(1, instance_config("opt-30b", shape, GPU), step_model("opt-30b", shape, GPU)).run(
        schema.make(t, pool.prompt[i], pool.output[i], model="opt-30b")).requests
    arr, ttft = r["arrival_s"].to_numpy(float), r["ttft_s"].to_numpy(float)
    q = np.quantile(arr, [0.2, 0.4, 0.8])
    return float(np.median(ttft[arr >= q[2]]) / np.median(ttft[(arr >= q[0]) & (arr < q[1])]))


def test_open_loop_capacity_is_a_rate_the_replica_sustains_and_its_own_cache_entry(tmp_path):
    from servesim.systems.oserve.profiler import OPEN_HI

    closed = CapacityProfiler("opt-30b", _pools(), n_requests=150, cache_dir=tmp_path)
    opened = CapacityProfiler("opt-30b", _pools(), n_requests=150, cache_dir=tmp_path, method="open")
    assert opened.key(Shape(2)) != closed.key(Shape(2))
    n_c = closed.capacity(Shape(2))[0]
    n_o = opened.capacity(Shape(2))[0]
    assert np.all(n_o > 0) and np.all(n_o <= OPEN_HI * n_c)
    again = CapacityProfiler("opt-30b", _pools(), n_requests=150, cache_dir=None, method="open")
    assert np.array_equal(again.capacity(Shape(2))[0], n_o)  # same seed, same rates
    lo = _pools()[1]  # long outputs: the queue a rate above capacity builds is plain within 2 minutes
    assert _ttft_growth(0.85 * n_o[1], lo, Shape(2)) < 2.0
    assert _ttft_growth(1.5 * n_o[1], lo, Shape(2)) > 3.0
    with pytest.raises(ValueError, match="capacity method"):
        CapacityProfiler("opt-30b", _pools(), method="bogus")


def test_open_loop_rate_leaves_out_a_request_the_replica_can_never_hold(monkeypatch):
    """Regression (issue 28): one request rejected at arrival (its KV blocks exceed the cache after
    rounding) failed every probe, so the open-loop rate came out 0 and the trace it scaled was empty."""
    import pandas as pd

    from servesim.systems.oserve import profiler as P

    class OneRejected:  # every request served at once with flat TTFT, the first one rejected
        @classmethod
        def uniform(cls, *a, **k):
            return cls()

        def run(self, w):
            n = len(w)
            state = np.where(np.arange(n) == 0, "rejected", "finished")
            req = pd.DataFrame({"arrival_s": w["arrival_s"].to_numpy(float), "state": state,
                                "ttft_s": np.where(state == "finished", 0.05, np.nan),
                                "e2e_s": np.where(state == "finished", 1.0, np.nan)})
            return type("Res", (), {"requests": req})()

    monkeypatch.setattr(P, "Cluster", OneRejected)
    prof = CapacityProfiler("opt-30b", _pools(), n_requests=150, cache_dir=None)
    cfg, sm, hold, kv = prof._replica(Shape(2))
    rate = prof.open_rate(cfg, sm, hold, kv, _pools()[0], 100.0, np.random.default_rng(0))
    assert rate > 0.9 * P.OPEN_HI * 100.0  # flat TTFT at every rate: the bisection climbs to its top


# ---------------------------------------------------------------- search
class FakeProfiler:
    """Capacities from a closed form (unit tests only): per-GPU rate with a TP/PP preference per type."""

    def __init__(self):
        self.calls = 0

    def matrix(self, shapes):
        self.calls += 1
        n = np.array([[s.gpus * (10 + 3 * (s.tp - 1)) - (2 if s.cross_node else 0),
                       s.gpus * (12 - s.tp) + 4 * (s.pp - 1)] for s in shapes], float)
        return n, n


def _ev(gpus, lam=(30.0, 50.0)):
    return S.Evaluator(FakeProfiler(), np.array(lam), gpus)


def test_exhaustive_finds_the_known_optimum_on_a_tiny_instance():
    ev = _ev(4)
    assert S.exhaustive(_ev(4, lam=(3.0, 5.0)), "opt-30b").value.phi == 8.0
    best = S.exhaustive(ev, "opt-30b")
    # brute force over every partition of 4 GPUs and every strategy multiset, independently
    cands = []
    for part in S.partitions(4, 1):
        import itertools
        for combo in itertools.product(*[strategies("opt-30b", d) for d in part]):
            placed = S.place(list(combo), 4)
            n, e = FakeProfiler().matrix(placed)
            cands.append(evaluate([30.0, 50.0], n, e).key())
    assert best.value.key() == max(cands)
    # demand beyond capacity: Φ decides first (the paper's objective), α* only breaks its ties
    assert best.value.phi < 80


def test_heuristic_is_deterministic_under_a_seed_and_never_worse_than_uniform():
    a = S.heuristic(_ev(8), "opt-30b", seed=3)
    b = S.heuristic(_ev(8), "opt-30b", seed=3)
    assert a.deployment == b.deployment and a.trace == b.trace and a.value.alpha == b.value.alpha
    assert a.trace[-1]["iter"] == a.iterations
    assert sum(not t["accepted"] for t in a.trace[-20:]) == 20 or a.iterations == 200  # patience 20
    start = S.best_strategies(_ev(8), "opt-30b", S.uniform_sizes("opt-30b", 8))
    assert a.value.alpha >= start[1].alpha
    assert sum(s.gpus for s in a.deployment) == 8
    ex = S.exhaustive(_ev(8), "opt-30b")
    assert a.value.alpha <= ex.value.alpha + 1e-9


def test_cli_rejects_a_bad_mix():
    from servesim.errors import InputError

    with pytest.raises(InputError, match="--mix"):
        S._parse_mix("a,b")
    assert S._parse_mix("S1=1,3")[0] == "S1" and S._parse_mix("1,3")[1].tolist() == [0.25, 0.75]


def test_uniform_start_follows_the_memory_minimum():
    # §4.3: 16 GPUs with a 70B model -> 8 x (TP=2)
    assert S.uniform_sizes("llama-2-70b", 16) == [2] * 8
    assert S.uniform_sizes("opt-30b", 8) == [1] * 8


def _small_pool(monkeypatch):
    import pandas as pd

    from servesim.workload import gen_oserve

    rng = np.random.default_rng(1)
    pool = pd.DataFrame({"prompt_tokens": rng.integers(50, 800, 400), "output_tokens": rng.integers(2, 300, 400),
                         "type": np.repeat(np.arange(4), 100)})
    monkeypatch.setattr(gen_oserve, "type_pool", lambda *a, **k: pool)


def test_cli_writes_the_deployment(tmp_path, monkeypatch):
    import json

    import pandas as pd

    _small_pool(monkeypatch)
    assert S.main(["--model", "opt-30b", "--gpus", "2", "--mix", "1,1,1,1", "--mix", "so=0,0,1,1", "--n-requests", "40",
                   "--serve-load", "0.5", "--serve-minutes", "0.2", "--cache-dir", str(tmp_path / "c"), "-o", str(tmp_path / "o")]) == 0
    d = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert [c["name"] for c in d["cases"]] == ["mix0", "so"]
    for c in d["cases"]:
        assert c["heuristic"]["alpha"] <= c["exhaustive"]["alpha"] + 1e-9
        assert c["static"]["alpha"] <= c["exhaustive"]["alpha"] + 1e-9  # the homogeneous grid is a subset
        assert c["serve"]["heuristic"]["completed"] == c["serve"]["heuristic"]["requests"] > 0
    rows = pd.read_csv(tmp_path / "o" / "cases.csv")
    assert list(rows.plan) == ["heuristic", "exhaustive", "static"] * 2 and set(rows.gpus) == {2}
    assert (tmp_path / "o" / "capacities.csv").read_text().startswith("shape,gpus,cross_node,n_SILO")


def test_cli_input_errors_are_one_line(tmp_path, monkeypatch, capsys):
    _small_pool(monkeypatch)
    base = ["--model", "opt-30b", "--gpus", "2", "--n-requests", "40", "--no-cache", "-o", str(tmp_path / "o")]
    assert S.main(base + ["--mix", "a,b"]) == 2
    assert "--mix 'a,b'" in capsys.readouterr().err
    assert S.main(base + ["--mix", "1,1"]) == 2  # 2 proportions for 4 types
    assert S.main(base + ["--mix", "1,1,1,1", "--lengths", "10:10"]) == 2  # two workload sources
    assert S.main(base + ["--lengths", "10"]) == 2
    assert not (tmp_path / "o").exists()


@needs_azure_code
def test_cli_at_test_scale_is_deterministic(tmp_path, monkeypatch):
    """The workflow's test-scale jobs (workflow/runs/oserve.yaml, test:) run and repeat byte for byte
    (apart from wall-clock seconds)."""
    import json

    import pandas as pd

    from servesim.analysis import runs as runs_api

    _small_pool(monkeypatch)
    for name, r in runs_api.declared("oserve", "test").items():
        if r.module != "servesim.systems.oserve.search":
            continue
        outs = []
        for k in range(2):
            o = tmp_path / f"{name.replace('/', '_')}_{k}"
            assert S.main(list(r.args) + ["--seed", "0", "-o", str(o)]) == 0, name
            assert all((o / f).exists() for f in r.outputs), name
            outs.append(o)
        a, b = (pd.read_csv(o / "cases.csv").drop(columns="seconds") for o in outs)
        pd.testing.assert_frame_equal(a, b)
        ta, tb = (json.loads((o / "traces.json").read_text()) for o in outs)
        assert ta == tb


def test_homogeneous_lengths_give_one_type(tmp_path):
    import json

    assert S.main(["--model", "opt-30b", "--gpus", "2", "--lengths", "200:20", "--mode", "heuristic", "--n-requests", "40",
                   "--serve-load", "0.5", "--serve-minutes", "0.2", "--no-cache", "-o", str(tmp_path / "o")]) == 0
    d = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert d["types"] == ["I200O20"] and d["cases"][0]["name"] == "homogeneous"
    assert set(d["cases"][0]) >= {"heuristic", "static", "serve"}


def test_best_homogeneous_is_the_best_single_shape_grid():
    ev = _ev(8)
    r = S.best_homogeneous(ev, "opt-30b")
    assert len({(s.tp, s.pp) for s in r.deployment}) == 1 and sum(s.gpus for s in r.deployment) == 8
    for d in (1, 2, 4, 8):
        for s in strategies("opt-30b", d):
            v = ev([s] * (8 // d))
            assert v is None or v[1].key() <= r.value.key()


# ---------------------------------------------------------------- flow LP vs networkx
@pytest.mark.parametrize("seed", range(6))
def test_flow_lp_equals_networkx_preflow_push_with_unit_weights(seed):
    """With one rate per replica (n_kj = n_k for every type it serves) C3 is a plain capacity and the
    flow network is a max-flow: the LP's Φ equals networkx's preflow-push value."""
    nx = pytest.importorskip("networkx")
    from networkx.algorithms.flow import preflow_push

    rng = np.random.default_rng(seed)
    K, J = rng.integers(2, 5), rng.integers(2, 5)
    rate = rng.integers(5, 60, K).astype(float)
    n = np.repeat(rate[:, None], J, axis=1)
    e = np.where(rng.random((K, J)) < 0.7, rng.integers(1, 70, (K, J)), 0).astype(float)
    lam = rng.integers(1, 80, J).astype(float)
    g = nx.DiGraph()
    for j in range(J):
        g.add_edge("S", f"w{j}", capacity=lam[j])
        for k in range(K):
            g.add_edge(f"w{j}", f"i{k}_{j}", capacity=e[k, j])
            g.add_edge(f"i{k}_{j}", f"cin{k}", capacity=float("inf"))
    for k in range(K):
        g.add_edge(f"cin{k}", f"cout{k}", capacity=rate[k])
        g.add_edge(f"cout{k}", "T", capacity=float("inf"))
    want = nx.maximum_flow_value(g, "S", "T", flow_func=preflow_push)
    assert phi(lam, n, e) == pytest.approx(want, abs=1e-6)
    assert max_flow(lam, n, e).phi == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_flow_lp_with_type_weights_two_solvers_agree(seed):
    """The weighted C3 (a generalized flow): PuLP/HiGHS (flow.max_flow) and SciPy/HiGHS
    (objective.phi) on random small instances; x respects C1-C3."""
    rng = np.random.default_rng(100 + seed)
    K, J = rng.integers(2, 5), rng.integers(2, 5)
    n = rng.integers(1, 40, (K, J)).astype(float)
    lam = rng.integers(1, 60, J).astype(float)
    a = max_flow(lam, n)
    assert a.phi == pytest.approx(phi(lam, n), rel=1e-7, abs=1e-7)
    assert np.all(a.x.sum(axis=0) <= lam + 1e-6) and np.all(a.load <= 1 + 1e-7)


def test_route_follows_the_flow_fractions():
    from servesim.systems.oserve.serve import route

    f = np.array([[1.0, 0.25, 0.0], [0.0, 0.75, 0.0]])
    types = np.repeat([0, 1, 2], 4000)
    d = route(types, f, seed=5)
    assert np.all(d[types == 0] == 0) and np.all(d[types == 2] == -1)
    assert abs(np.mean(d[types == 1] == 1) - 0.75) < 0.03
    assert np.array_equal(d, route(types, f, seed=5))


def test_max_pp_limits_the_strategies():
    ev = S.Evaluator(FakeProfiler(), np.array([30.0, 50.0]), 8, max_pp=2)
    r = S.exhaustive(ev, "opt-30b")
    assert all(s.pp <= 2 for s in r.deployment)


def test_serve_runs_each_replica_on_its_share():
    import pandas as pd

    from servesim.systems.oserve.serve import serve
    from servesim.workload import schema

    rng = np.random.default_rng(0)
    n = 60
    w = schema.make(np.sort(rng.uniform(0, 20, n)), rng.integers(50, 400, n), rng.integers(2, 50, n))
    types = np.arange(n) % 2
    f = np.array([[1.0, 0.0], [0.0, 1.0]])
    df, unrouted = serve("opt-30b", (Shape(1), Shape(2)), f, w, types)
    assert unrouted == 0 and len(df) == n
    assert np.array_equal(df["request_id"].to_numpy(), w["request_id"].to_numpy())
    assert np.array_equal(df["replica"].to_numpy(), types)
    assert df["e2e_s"].notna().all()
    assert isinstance(df, pd.DataFrame)


def test_vidur_fitted_step_model_for_pp():
    from servesim.data import DataError
    from servesim.perf import vidur
    from servesim.systems.oserve.replica import step_model

    try:
        have = ("llama-2-70b", "h100-80gb") in vidur.available()
    except (DataError, ValueError):  # the Vidur profiles are a dataset; absent here means nothing to fit
        have = False
    if not have:
        pytest.skip("Vidur H100 profiles not available")
    a = step_model("llama-2-70b", Shape(2, 2), backend="vidur-fit")
    b = step_model("llama-2-70b", Shape(2, 2))
    assert a.pp == 2 and a.params() != b.params()
    ref = step_model("llama-2-70b", Shape(2), backend="vidur")
    fit = step_model("llama-2-70b", Shape(2), backend="vidur-fit")
    assert fit.step_time(0, 0, 64, 64000) == pytest.approx(ref.step_time(0, 0, 64, 64000), rel=0.15)
    with pytest.raises(ValueError, match="no PP profiles"):
        step_model("llama-2-70b", Shape(2, 2), backend="vidur")


def test_best_uniform_start_is_never_worse_than_static():
    ev = _ev(8)
    h = S.heuristic(ev, "opt-30b", seed=1, init="best-uniform")
    assert h.value.key() >= S.best_homogeneous(_ev(8), "opt-30b").value.key()
    assert h.trace[0]["deployment"] == [s.label() for s in S.best_homogeneous(_ev(8), "opt-30b").deployment]
    with pytest.raises(ValueError, match="init"):
        S.heuristic(ev, "opt-30b", init="random")


def test_a_lone_saturated_replica_is_split_not_stuck(monkeypatch):
    """Alg. 1 merges only within O and swaps only with U; when every replica is saturated (U empty:
    the "alpha" reading of O / U on a homogeneous workload) and one is left, neither applies: our
    search splits it instead."""

    class Linear:  # capacity grows linearly with GPUs except one size: 4-GPU replicas are the best per GPU
        def matrix(self, shapes):
            n = np.array([[s.gpus * (12.0 if s.gpus == 4 else 10.0)] for s in shapes])
            return n, n

    monkeypatch.setattr(S, "uniform_sizes", lambda model, gpus: [gpus])  # start from one 8-GPU replica
    for seed in range(3):
        r = S.heuristic(S.Evaluator(Linear(), np.array([50.0]), 8, classify="alpha"), "opt-30b", seed=seed)
        assert sorted(s.gpus for s in r.deployment) == [4, 4]


def test_trace_records_how_alg1_moved_and_a_saturated_start_only_merges(monkeypatch):
    """Every iteration records |O|, |U| and the moves applied. From a start where the α* assignment
    saturates every replica (one type, identical replicas), U is empty, so the pseudo-code's swap and
    split cannot fire and merge is the only move: move_shares says so (20e's diagnosis reads it)."""

    class Linear:  # identical per-GPU capacity: at α* every replica is full
        def matrix(self, shapes):
            n = np.array([[s.gpus * 10.0] for s in shapes])
            return n, n

    monkeypatch.setattr(S, "uniform_sizes", lambda model, gpus: [1] * gpus)  # eight 1-GPU replicas
    r = S.heuristic(S.Evaluator(Linear(), np.array([50.0]), 8, classify="alpha"), "opt-30b", seed=0)
    its = [t for t in r.trace if t["iter"] > 0]
    assert its and all(t["saturated"] + t["underused"] >= 1 for t in its)
    assert its[0]["underused"] == 0 and its[0]["saturated"] == 8
    assert its[0]["moves"]["swap"] == its[0]["moves"]["split"] == 0 and its[0]["moves"]["merge"] > 0
    shares = r.move_shares()
    assert shares["u_empty_iter_pct"] > 0 and shares["merge_only_iter_pct"] > 0
    assert all(0 <= v <= 100 for v in shares.values())
    # iterations that applied no move at all (a lone O replica too small to split) are not merge-only
    assert shares["merge_only_iter_pct"] <= 100 - 100 * sum(sum(t["moves"].values()) == 0 for t in its) / len(its) + 1e-9
    # no iterations (the exhaustive search): NaN, not 0
    assert all(np.isnan(v) for v in S.exhaustive(_ev(4, lam=(3.0, 5.0)), "opt-30b").move_shares().values())


def test_flow_sets_are_the_pseudo_codes_flow_assignment_at_lambda(monkeypatch):
    """The reading classify="flow": O / U from the max flow at λ itself. Where λ fits with room, a
    replica the flow leaves with slack is in U, so splits and swaps fire; on the same start the
    default α* reading saturates every replica and only merges (the test above)."""
    from servesim.systems.oserve.objective import flow_sets

    n = np.array([[10.0], [10.0], [10.0]])
    O, U = flow_sets([15.0], n, n)  # 15 requests on three replicas of 10: at most one can be full
    assert len(O) <= 1 and len(O) + len(U) == 3 and set(O).isdisjoint(U)
    assert flow_sets([40.0], n, n) == ((0, 1, 2), ())  # overloaded: every replica is full

    class Linear:
        def matrix(self, shapes):
            n = np.array([[s.gpus * 10.0] for s in shapes])
            return n, n

    monkeypatch.setattr(S, "uniform_sizes", lambda model, gpus: [2] * (gpus // 2))  # four 2-GPU replicas
    r = S.heuristic(S.Evaluator(Linear(), np.array([50.0]), 8, classify="flow"), "opt-30b", seed=0)
    its = [t for t in r.trace if t["iter"] > 0]
    assert its[0]["underused"] > 0 and its[0]["saturated"] + its[0]["underused"] == 4
    assert S.Evaluator(Linear(), np.array([50.0]), 8).classify == "alpha"  # the default
    assert any(t["moves"]["split"] + t["moves"]["swap"] > 0 for t in its)
    assert r.move_shares()["u_empty_iter_pct"] < 100
    with pytest.raises(ValueError, match="classify"):
        S.Evaluator(Linear(), np.array([50.0]), 8, classify="bogus")


def test_search_seeds_add_draws_without_moving_the_first(tmp_path, monkeypatch):
    """--search-seeds N: the first seed's rows are those of a one-seed run (the serving rate comes
    from them), each later seed's plan is Alg. 1's with that seed (plan 'heuristic@seed<k>'), and
    osch.by_seed gives every draw under the base plan names."""
    import pandas as pd

    from servesim.analysis import oserve_scheduler as osch

    _small_pool(monkeypatch)
    base = ["--model", "opt-30b", "--gpus", "4", "--mix", "1,1,1,1", "--mode", "both", "--n-requests", "40", "--max-pp", "2",
            "--serve-load", "0.5", "--serve-minutes", "0.2", "--cache-dir", str(tmp_path / "c")]
    for name, extra in (("one", []), ("three", ["--search-seeds", "3"]), ("s2", ["--seed", "2"])):
        assert S.main(base + extra + ["-o", str(tmp_path / name)]) == 0
    one, three, s2 = (pd.read_csv(tmp_path / n / "cases.csv").drop(columns="seconds") for n in ("one", "three", "s2"))
    assert list(three.plan) == ["heuristic", "heuristic@seed1", "heuristic@seed2", "exhaustive", "static"]
    assert list(three.search_seed.fillna(-1)) == [0, 1, 2, -1, -1]
    pd.testing.assert_frame_equal(three[~three.plan.str.contains("@")].reset_index(drop=True), one)
    # the third draw is the search a --seed 2 run makes (its workload differs: compare the plan)
    cols = ["deployment", "alpha", "iterations"]
    assert three.loc[three.plan == "heuristic@seed2", cols].values.tolist() == s2.loc[s2.plan == "heuristic", cols].values.tolist()
    draws = osch.by_seed(three)
    assert [s for s, _ in draws] == [0, 1, 2]
    for s, d in draws:
        assert sorted(d.plan) == ["exhaustive", "heuristic", "static"]
        assert d.loc[d.plan == "heuristic", "search_seed"].item() == s
    band = osch.over_seeds(three, lambda d: {"a": osch.value(d, "alpha", plan="heuristic")})
    heur = three[three.plan.str.startswith("heuristic")]
    assert band["search_seeds"] == [0, 1, 2] and band["a__seed_max"] == heur.alpha.max()
    assert len(osch.all_draws(three)) == 3 * 3
    assert S.main(base + ["--search-seeds", "0", "-o", str(tmp_path / "bad")]) == 2
