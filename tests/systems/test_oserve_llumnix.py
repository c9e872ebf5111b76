"""The Llumnix baseline (servesim.systems.oserve.llumnix): freeness readings and dispatch on a
two-instance example, the migration pairing rule, a run where migration relieves an overloaded
instance, option parsing, and the online CLI serving `llumnix` at test scale (pools patched)."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from servesim.errors import InputError
from servesim.perf import LinearStepTime
from servesim.sim import PRIO_CONTROL, InstanceConfig
from servesim.systems.oserve import llumnix as LL
from servesim.workload import schema

STEP = LinearStepTime(c0=1.0, c_pt=0.0, c_pc=0.0, c_ds=0.0, c_dc=0.0)  # 1 s per iteration


def hand_cluster(blocks=(10, 10), **opt):
    cfgs = [InstanceConfig(num_blocks=b, block_size=16, policy="vllm-v0") for b in blocks]
    return LL.Llumnix("opt-30b", None, len(blocks), configs=cfgs, step_models=[STEP] * len(blocks),
                      bandwidth=1e12, kv_bytes_per_token=1e6, options=LL.LlumnixOptions(**opt))


def test_dispatch_goes_to_the_largest_freeness():
    ll = hand_cluster(blocks=(20, 20), migration=False)
    w = schema.make(np.array([0.0, 0.5, 1.5, 1.6, 1.7]), np.array([100, 20, 16, 130, 16]), np.array([200, 50, 5, 5, 5]))
    seen = {}

    def look(_):
        i0, i1 = ll.cluster.instances
        seen["i0"] = LL.dispatch_freeness(i0, ll.cluster.router.demand.total(0))
        seen["i1"] = LL.dispatch_freeness(i1, ll.cluster.router.demand.total(1))
        seen["m0"] = LL.migration_freeness(i0)

    ll.cluster.kernel.at(1.65, look, None, PRIO_CONTROL)
    df = ll.run(w).requests
    # F = (free tokens - queued demand) / running. A (100 tokens: 7 of 20 blocks) to i0, the first empty
    # one. B at 0.5: i0 has 13 free blocks = 208 tokens for 1 running request, i1 is empty (+inf): i1.
    # C at 1.5: i1 holds B's 2 blocks, 288 / 1 > 208: i1. D (130 tokens) at 1.6: i1 runs B and C (3
    # blocks): 17 x 16 / 2 = 136 < 208: i0. At 1.65 D waits on i0 (9 blocks of demand): (208 - 144) / 1
    # = 64 < 136: E at 1.7 goes to i1.
    assert df.sort_values("request_id").instance.tolist() == ["i0", "i1", "i1", "i0", "i1"]
    assert (seen["i0"], seen["i1"], seen["m0"]) == (64.0, 136.0, 64.0)
    assert (df.state == "finished").all()


def test_freeness_of_an_empty_instance_is_infinite():
    ll = hand_cluster()
    i0 = ll.cluster.instances[0]
    assert LL.dispatch_freeness(i0, 0) == math.inf and LL.migration_freeness(i0) == math.inf


def test_pairs_most_loaded_with_least_loaded_over_the_gap():
    free = [-10.0, 500.0, 30.0, math.inf]
    assert LL.pairs(free, lambda j: False, 48.0) == [(0, 3), (2, 1)]
    assert LL.pairs(free, lambda j: j == 3, 48.0) == [(0, 1)]
    assert LL.pairs([40.0, 60.0], lambda j: False, 48.0) == []  # gap 20 <= 48
    assert LL.pairs([100.0, 60.0], lambda j: False, 48.0) == []  # nobody below the threshold


def test_migration_moves_decoding_requests_off_a_full_instance():
    # R0 and R2 (16 + 100 tokens: 8 blocks each at the end) share i0's 12 blocks (R2 ties at dispatch
    # and goes to the lower index); R1 is short and leaves i1 empty. Without migration i0 runs out of
    # blocks and preempts; with it, once i0's freeness falls below 48 steps (more than 6 blocks used),
    # one of them moves to the empty i1 and nobody is preempted.
    def run(migration):
        ll = hand_cluster(blocks=(12, 12), migration=migration)
        w = schema.make(np.array([0.0, 0.1, 0.2]), np.array([16, 16, 16]), np.array([100, 10, 100]))
        return ll, ll.run(w).requests.sort_values("request_id")

    ll, df = run(True)
    st = ll.stats()
    assert (df.state == "finished").all() and st["migrations_done"] == 1 and st["migrated_requests"] == 1
    assert df.preemptions.sum() == 0 and set(df.instance) == {"i0", "i1"}
    assert st["migration_gb"] == pytest.approx(ll.migrator.frame().tokens.sum() * 1e6 / 1e9)
    _, base = run(False)
    assert base.preemptions.sum() >= 1 and df.e2e_s.max() < base.e2e_s.max()
    _, df2 = run(True)
    pd.testing.assert_frame_equal(df, df2)  # deterministic


def test_options_parse():
    o = LL.LlumnixOptions.parse(["poll_s=0.1", "migration=off", "max-stages=3"])
    assert (o.poll_s, o.migration, o.max_stages, o.threshold_steps) == (0.1, False, 3, 48.0)
    for bad in (["nope=1"], ["poll_s"], ["poll_s=x"], ["poll_s=0"], ["migration=maybe"]):
        with pytest.raises(InputError):
            LL.LlumnixOptions.parse(bad)


def test_online_cli_serves_llumnix(tmp_path, oserve_tiny_trace):
    from servesim.systems.oserve import online

    args = [*oserve_tiny_trace, "--max-pp", "1", "--load", "1.5", "--systems", "static", "llumnix"]
    assert online.main([*args, "-o", str(tmp_path / "a")]) == 0
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert set(s["systems"]) == {"static", "llumnix"} and s["static_deployment"] == "TP2 + TP2"
    sysdf = pd.read_csv(tmp_path / "a" / "systems.csv").set_index("system")
    assert (sysdf.n_completed == sysdf.n_requests).all()
    assert sysdf.loc["llumnix", "llumnix_polls"] > 0 and sysdf.loc["llumnix", "llumnix_threshold_steps"] == 48.0
    plans = pd.read_csv(tmp_path / "a" / "plans.csv")
    assert (plans[plans.system == "llumnix"].deployment.to_numpy() == plans[plans.system == "static"].deployment.to_numpy()).all()
    assert online.main([*args, "-o", str(tmp_path / "b")]) == 0  # same seed, same bytes
    a, b = pd.read_csv(tmp_path / "a" / "systems.csv"), pd.read_csv(tmp_path / "b" / "systems.csv")
    pd.testing.assert_frame_equal(a.drop(columns=[c for c in a if c.endswith("wall_s")]),
                                  b.drop(columns=[c for c in b if c.endswith("wall_s")]))
    assert online.main([*args, "--llumnix-option", "poll_s=-1", "-o", str(tmp_path / "c2")]) == 2
