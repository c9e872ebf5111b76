"""A pipeline-parallel replica as vLLM V0's virtual engines (servesim.sim.virtual_engines): stage
timing by hand, FIFO stages under load, a lone request as in the lumped replica, V0's dispatch and
per-engine limits, and the cluster's drain and migration on such replicas."""

from dataclasses import replace

import numpy as np
import pytest

from servesim.perf import LinearStepTime, RooflineStepTime
from servesim.sim import PRIO_CONTROL, Cluster, InstanceConfig
from servesim.sim.migration import LiveMigrator
from servesim.sim.virtual_engines import PipelineStages, VirtualEngines, engine_config

from .simutil import workload

MODES = ("fast", "reference")


class TwoPhase:
    """Latency through every stage: 2 s with prefill work, 1 s for decode only; no CPU-side part."""

    overhead_s = 0.0
    seq_overhead_s = 0.0

    def latency(self, pt, pc, ds, dc):
        return 2.0 if pt > 0 else (1.0 if ds > 0 else 0.0)

    step_time = latency


def virtual(pp=2, num_blocks=64, **kw):
    return InstanceConfig(num_blocks=num_blocks, pp=pp, pp_engines="virtual", **kw)


@pytest.mark.parametrize("mode", MODES)
def test_two_engines_share_the_stages_first_come_first_served(mode):
    # pp=2, so a prefill holds each stage 1 s and a decode 0.5 s. A -> VE0, B -> VE1 (fewest unfinished).
    # VE0 prefills A: stage 1 [0, 1], stage 2 [1, 2] -> A's first token at 2. VE1 prefills B from 0 but
    # stage 1 is free at 1: [1, 2], stage 2 [2, 3] -> B's first token at 3. VE0 decodes A from 2:
    # stage 1 [2, 2.5], stage 2 free at 3: [3, 3.5] -> 3.5; VE1 from 3: [3, 3.5], [3.5, 4] -> 4;
    # VE0 from 3.5: [3.5, 4], [4, 4.5] -> A ends at 4.5; VE1 from 4: [4, 4.5], [4.5, 5] -> B ends at 5.
    cl = Cluster([virtual()], [TwoPhase()], mode=mode, check_invariants=True)
    r = cl.run(workload([0.0, 0.0], [16, 16], [3, 3])).requests.set_index("request_id")
    assert list(r.first_token_s) == [2.0, 3.0]
    assert list(r.finish_s) == [4.5, 5.0]
    assert (r.state == "finished").all()


def test_stages_never_hold_two_micro_batches_and_keep_their_order(monkeypatch):
    log = []
    traverse = PipelineStages.traverse

    def recorded(self, start, per_stage):
        before = list(self.free)
        end = traverse(self, start, per_stage)
        log.append((start, per_stage, before, list(self.free)))
        return end

    monkeypatch.setattr(PipelineStages, "traverse", recorded)
    cfg = virtual(pp=4, num_blocks=4000, max_num_seqs=64, max_num_batched_tokens=2048, tp=2, model="opt-66b")
    sm = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=4)
    cl = Cluster([cfg], [sm], check_invariants=True)
    rng = np.random.default_rng(1)
    n = 300
    res = cl.run(workload(np.sort(rng.uniform(0, 30, n)), rng.integers(16, 1500, n), rng.integers(1, 200, n),
                          model="opt-66b"))
    assert (res.requests.state == "finished").all()
    assert len(log) > n
    starts = [s for s, *_ in log]
    assert starts == sorted(starts)  # micro-batches enter stage 1 in the order their iterations start
    for _, per, before, after in log:
        # each stage's new busy interval [after - per, after] starts no earlier than the stage was free
        # and no earlier than the micro-batch left the stage before it
        for k in range(len(after)):
            assert after[k] - per >= before[k] - 1e-12
            if k:
                assert after[k] - per >= after[k - 1] - 1e-12


def test_a_lone_request_runs_as_in_the_lumped_replica():
    sm = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=4)
    lumped = InstanceConfig(num_blocks=4000, pp=4, tp=2, model="opt-66b", max_num_seqs=1024, max_num_batched_tokens=8192 * 4)
    w = workload([0.0], [700], [40], model="opt-66b")
    a = Cluster([lumped], [sm]).run(w).requests.iloc[0]
    b = Cluster([replace(lumped, pp_engines="virtual")], [sm]).run(w).requests.iloc[0]
    for col in ("first_token_s", "finish_s", "tbt_max_s"):
        assert b[col] == pytest.approx(a[col], rel=1e-12)


def test_v0_dispatch_and_per_engine_limits():
    cfg = virtual(pp=4, num_blocks=103, max_num_seqs=1024, max_num_batched_tokens=8192 * 4)
    e = engine_config(cfg)
    assert (e.num_blocks, e.max_num_seqs, e.max_num_batched_tokens, e.pp_engines) == (25, 256, 8192, "lumped")
    cl = Cluster([cfg], [TwoPhase()], mode="reference")
    rep = cl.instances[0]
    assert isinstance(rep, VirtualEngines) and rep.num_blocks == 100
    from servesim.sim.request import Req
    reqs = [Req(i, 0.0, 16, 4) for i in range(6)]
    for r in reqs:
        rep.submit(r)
    assert [e.outstanding for e in rep.engines] == [2, 2, 1, 1]  # the fewest unfinished; ties to the lowest
    assert rep.outstanding == 6 and rep.num_waiting == 6
    assert [r.rid for r in rep.waiting] == list(range(6))


@pytest.mark.parametrize("mode", MODES)
def test_drain_requeues_the_waiting_requests_of_every_engine(mode):
    cl = Cluster([virtual(num_blocks=8), virtual(num_blocks=64)], [TwoPhase(), TwoPhase()], mode=mode,
                 router="round-robin", check_invariants=True)
    cl.kernel.at(0.5, lambda _: cl.drain(0), None, PRIO_CONTROL)
    n = 12
    res = cl.run(workload(np.linspace(0.0, 0.4, n), [48] * n, [5] * n))
    assert (res.requests.state == "finished").all()
    assert cl.requeued > 0 and cl.is_drained(0)


@pytest.mark.parametrize("mode", MODES)
def test_live_migration_out_of_and_into_virtual_replicas(mode):
    cl = Cluster([virtual(), virtual()], [TwoPhase(), TwoPhase()], mode=mode, check_invariants=True)
    mig = LiveMigrator(cl, 1e6, 1e7)
    cl.kernel.at(2.5, lambda _: mig.start(next(iter(cl.instances[0].running)), 0, 1), None, PRIO_CONTROL)
    r = cl.run(workload([0.0], [32], [12])).requests.iloc[0]
    assert r.state == "finished" and r.instance == "i1"
    assert mig.frame().iloc[0].outcome == "migrated" and r.preemptions == 0


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="pp_engines"):
        InstanceConfig(num_blocks=8, pp=2, pp_engines="gpipe")
    with pytest.raises(TypeError, match="latency"):
        Cluster([virtual()], [LinearStepTime(c0=1.0, c_pt=0.0, c_pc=0.0, c_ds=0.0, c_dc=0.0)])
    with pytest.raises(ValueError, match="fewer than pp"):
        engine_config(virtual(pp=4, num_blocks=3))
    # pp == 1: a plain instance whatever pp_engines says
    cl = Cluster([InstanceConfig(num_blocks=8, pp_engines="virtual")], [TwoPhase()])
    assert not isinstance(cl.instances[0], VirtualEngines)


def test_fast_and_reference_modes_agree_bit_for_bit():
    cfg = virtual(pp=4, num_blocks=600, max_num_seqs=128, max_num_batched_tokens=4096, tp=2, model="opt-66b")
    sm = RooflineStepTime("opt-66b", "h100-80gb", tp=2, pp=4)
    rng = np.random.default_rng(7)
    n = 400
    w = workload(np.sort(rng.uniform(0, 20, n)), rng.integers(16, 2000, n), rng.integers(1, 300, n), model="opt-66b")
    a, b = (Cluster([cfg, cfg], [sm, sm], mode=m, router="least-outstanding").run(w).requests for m in MODES)
    cols = ["first_token_s", "finish_s", "tbt_max_s", "preemptions"]
    assert a[cols].equals(b[cols]) and (a.state == "finished").all()
