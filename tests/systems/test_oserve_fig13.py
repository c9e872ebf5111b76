"""OServe Fig 13 (32 GPUs): the switch layout's fresh re-layout when kept replicas fragment the
nodes, the best-baseline gain of analysis.oserve_online, and the declared fig13 runs' CLI at test
scale (no data: pools patched)."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.analysis import oserve_online as OO
from servesim.systems.oserve import switching as SW
from servesim.systems.oserve.replica import Shape


def test_layout_lays_out_afresh_when_kept_replicas_fragment_the_nodes():
    # two TP1 replicas kept on GPUs 7 and 8 leave 7 + 7 free GPUs: only 6 TP2s fit beside them
    prev = tuple(SW.Placed(Shape(1), (g,)) for g in (7, 8)) + tuple(SW.Placed(Shape(2), (g, g + 1)) for g in (0, 2, 4, 9, 11, 13))
    target = [Shape(1), Shape(1)] + [Shape(2)] * 7
    with pytest.raises(ValueError):  # keeping all eight old replicas leaves GPUs 6 and 15 for the 7th TP2
        SW._layout(target, 16, prev, 8)
    lay = SW.layout(target, 16, prev)
    assert sorted(g for p in lay for g in p.gpus) == list(range(16))
    assert all(len({g // 8 for g in p.gpus}) == 1 for p in lay)  # every replica within one node
    assert sorted((p.shape.tp, p.shape.pp) for p in lay) == sorted((s.tp, s.pp) for s in target)
    # the plan still keeps (sends nothing to) every replica that the fresh layout put on its old GPUs
    sp = SW.plan(prev, lay, "opt-30b")
    assert set(sp.kept) == set(lay) & set(prev)
    assert not any(t in {g for p in sp.kept for g in p.gpus} for _, t, _, _ in sp.transfers)


def test_vs_best_baseline_picks_the_best_baseline_per_trace():
    df = pd.DataFrame({"trace": ["T1"] * 4 + ["T2"] * 3,
                       "system": ["oserve", "static", "reload", "hetero", "oserve", "static", "reload"],
                       "p99": [10.0, 30.0, 20.0, 1.0, 8.0, 4.0, 6.0]})
    g = OO.vs_best_baseline(df, "p99", higher_is_better=False).set_index("trace")
    assert g.loc["T1", "best_baseline"] == "reload" and g.loc["T1", "gain"] == 2.0  # hetero is no baseline
    assert g.loc["T2", "best_baseline"] == "static" and g.loc["T2", "gain"] == 0.5
    h = OO.vs_best_baseline(df.assign(thr=df.p99), "thr", higher_is_better=True).set_index("trace")
    assert h.loc["T1", "best_baseline"] == "static" and h.loc["T1", "gain"] == 10.0 / 30.0
    assert OO.vs_best_baseline(df[df.system == "oserve"], "p99", False).empty


def test_fig13_runs_cli_at_test_scale(tmp_path, oserve_tiny_trace):
    from servesim.analysis import runs as runs_api
    from servesim.systems.oserve import online

    # the fixture's tiny type pool and flat rate; the arguments are the declared fig13 test run's
    runs = {n: r for n, r in runs_api.declared("oserve", "test").items() if n.startswith("fig13/")}
    assert set(runs) == {"fig13/T1/latency", "fig13/T1/throughput"}
    r = runs["fig13/T1/latency"]
    assert r.collects == ("fig07/predictor",)  # its LSTM: a tiny one trained here stands in for that run's
    from servesim.systems.oserve import predictor as P

    assert P.main(["--days", "2", "--hidden", "8", "--layers", "1", "--epochs", "1", "--stride", "8",
                   "--traces", "T1", "--rate", "1.0", "-o", str(tmp_path / "pred")]) == 0
    args = [str(tmp_path / "pred" / "summary.json"), *r.args, "--cache-dir", str(tmp_path / "cache"), "--seed", "0"]
    assert online.main([*args, "-o", str(tmp_path / "a")]) == 0
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["model"] == "llama-2-70b" and s["gpus"] == 32 and set(s["systems"]) == {"oserve", "static", "reload", "llumnix", "dynamo"}
    plans = pd.read_csv(tmp_path / "a" / "plans.csv")
    for d in plans.deployment:  # every plan uses at most the 32 GPUs ("TP4,PP2 + TP2 + ...")
        parts = [dict((x[:2], int(x[2:])) for x in part.split(",")) for part in d.split(" + ")]
        assert sum(p["TP"] * p.get("PP", 1) for p in parts) <= 32
    sysdf = pd.read_csv(tmp_path / "a" / "systems.csv")
    assert (sysdf.n_completed == sysdf.n_requests).all()
    assert online.main([*args, "-o", str(tmp_path / "b")]) == 0  # same seed, same bytes
    for f in ("systems.csv", "plans.csv", "switches.csv"):
        a, b = pd.read_csv(tmp_path / "a" / f), pd.read_csv(tmp_path / "b" / f)
        pd.testing.assert_frame_equal(a.drop(columns=[c for c in a if c.endswith("wall_s")]),
                                      b.drop(columns=[c for c in b if c.endswith("wall_s")]))
    # the latency-aware objective is a reading of the same CLI; the paper's is the default
    assert s["objective"] == "phi-alpha"
    assert online.main([*args, "--systems", "oserve", "--objective", "phi-alpha-xnode", "-o", str(tmp_path / "x")]) == 0
    assert json.loads((tmp_path / "x" / "summary.json").read_text())["objective"] == "phi-alpha-xnode"
    with pytest.raises(SystemExit) as bad:  # argparse's one-line error
        online.main([*args, "--objective", "nope", "-o", str(tmp_path / "bad")])
    assert bad.value.code == 2


class _PerGpuProfiler:
    """Capacity proportional to a replica's GPUs, whatever its shape: every deployment of the same
    GPUs has the same flow value, so only the objective's latency term can tell them apart."""

    def matrix(self, shapes):
        n = np.array([[10.0 * s.gpus] * 2 for s in shapes])
        return n, n


def test_xnode_objective_prefers_in_node_pipelines_where_the_flow_objective_ties():
    from servesim.systems.oserve.objective import XNODE_PENALTY
    from servesim.systems.oserve.search import Evaluator

    lam = np.array([40.0, 40.0])
    cross = [Shape(4, 3), Shape(4)]          # 12-GPU pipeline: stages on two nodes
    in_node = [Shape(4, 2), Shape(4, 2)]     # one node each
    flow = Evaluator(_PerGpuProfiler(), lam, 16, "phi-alpha")
    lat = Evaluator(_PerGpuProfiler(), lam, 16, "phi-alpha-xnode")
    (pc, vc), (pi, vi) = flow(cross), flow(in_node)
    assert any(s.cross_node for s in pc) and not any(s.cross_node for s in pi)
    assert flow.key(vc) == flow.key(vi)                       # the paper's objective: a tie
    assert vc.cross_share == pytest.approx(12 / 16)           # the α assignment: shares by capacity
    assert lat.key(lat(in_node)[1]) > lat.key(lat(cross)[1])  # the latency reading breaks it
    assert lat.key(lat(cross)[1])[1] == pytest.approx(vc.alpha_served * (1 - XNODE_PENALTY * 12 / 16))
    # Φ still ranks first: a cross-node deployment that serves more beats an in-node one that serves less
    short = Evaluator(_PerGpuProfiler(), np.array([400.0, 400.0]), 16, "phi-alpha-xnode")
    assert short.key(short(cross)[1]) > short.key(short([Shape(4, 2)])[1])
