"""Fig 1's sweep: the homogeneous deployments of a cluster, the two workload types, and the CLI at
the workflow's test scale."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.systems.oserve import parallelism as P
from servesim.systems.oserve.replica import Shape


def _pool(n=400, seed=2):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"prompt_tokens": rng.integers(50, 800, n), "output_tokens": rng.integers(2, 300, n),
                         "type": np.repeat(np.arange(4), n // 4)})


def test_homogeneous_deployments_use_every_gpu_once():
    got = P.homogeneous("opt-30b", 8)
    assert all(dp * s.gpus == 8 for dp, s in got)
    assert (8, Shape(1)) in got and (1, Shape(8)) in got and (2, Shape(2, 2)) in got
    assert len(set(got)) == len(got)
    assert all(s.tp != 3 for _, s in P.homogeneous("opt-30b", 6))  # 56 heads
    assert P.label(2, Shape(2, 2)) == "DP2·TP2·PP2"


def test_fig1_types_split_the_pool_by_output():
    so, lo = P.fig1_pools(_pool())
    assert (so.name, lo.name) == ("short-output", "long-output")
    assert len(so.prompt) + len(lo.prompt) == 400
    with pytest.raises(ValueError, match="long-output"):
        P.fig1_pools(_pool().query("type >= 2"))


def test_cli_at_test_scale(tmp_path, monkeypatch):
    from servesim.analysis import runs as runs_api
    from servesim.workload import gen_oserve

    monkeypatch.setattr(gen_oserve, "type_pool", lambda *a, **k: _pool())
    (r,) = [r for r in runs_api.declared("oserve", "test").values() if r.module == "servesim.systems.oserve.parallelism"]
    outs = []
    for k in range(2):
        assert P.main(list(r.args) + ["--seed", "0", "-o", str(tmp_path / f"o{k}")]) == 0
        outs.append(tmp_path / f"o{k}")
    a, b = (pd.read_csv(o / "points.csv") for o in outs)
    pd.testing.assert_frame_equal(a, b)  # same seed, same numbers
    assert set(a["type"]) == {"short-output", "long-output"}
    assert (a.throughput_rps > 0).all() and (a.completed == a.requests).all()
    # every deployment of a type serves the same requests at one rate
    assert a.groupby("type").rate_rps.nunique().eq(1).all() and a.groupby("type").requests.nunique().eq(1).all()
    best = json.loads((outs[0] / "summary.json").read_text())["best"]
    for t, g in a.groupby("type"):
        assert best[t]["by_throughput"]["config"] == g.loc[g.throughput_rps.idxmax(), "config"]
        assert best[t]["by_p99"]["config"] == g.loc[g.p99_e2e_s.idxmin(), "config"]
    assert P.main(["--model", "opt-30b", "--gpus", "2", "--load", "0", "-o", str(tmp_path / "bad")]) == 2
