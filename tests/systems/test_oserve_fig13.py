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


def test_fig13_runs_cli_at_test_scale(tmp_path, monkeypatch):
    from servesim.analysis import runs as runs_api
    from servesim.systems.oserve import online
    from servesim.workload import gen_oserve as G

    rng = np.random.default_rng(1)
    pool = pd.DataFrame({"prompt_tokens": rng.integers(50, 800, 400), "output_tokens": rng.integers(2, 300, 400),
                         "type": np.repeat(np.arange(4), 100)})
    monkeypatch.setattr(G, "type_pool", lambda *a, **k: pool)
    monkeypatch.setattr(G, "_base_rate", lambda minutes: np.ones(minutes))
    runs = {n: r for n, r in runs_api.declared("oserve", "test").items() if n.startswith("fig13/")}
    assert set(runs) == {"fig13/T1/latency", "fig13/T1/throughput"}
    r = runs["fig13/T1/latency"]
    args = [*r.args, "--cache-dir", str(tmp_path / "cache"), "--seed", "0"]
    assert online.main([*args, "-o", str(tmp_path / "a")]) == 0
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["model"] == "llama-2-70b" and s["gpus"] == 32 and set(s["systems"]) == {"oserve", "static", "reload"}
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
