"""Live request migration (servesim.sim.migration) on hand-made cases: stage byte/time accounting,
the request decoding on its source during the copy, the last stage's downtime, aborts, and the
cluster's load records after a move. Both simulator modes give the same times."""

import pytest

from servesim.perf import LinearStepTime
from servesim.sim import PRIO_CONTROL, Cluster, InstanceConfig
from servesim.sim.migration import LiveMigrator

from .simutil import workload

STEP = LinearStepTime(c0=1.0, c_pt=0.0, c_pc=0.0, c_ds=0.0, c_dc=0.0)  # every iteration takes 1 s
MODES = ("fast", "reference")


def migrate_run(mode, at=2.5, output=10, kv=1e6, bw=1e7, num_blocks=100, dst_blocks=None, **kw):
    cfgs = [InstanceConfig(num_blocks=num_blocks), InstanceConfig(num_blocks=dst_blocks or num_blocks)]
    cl = Cluster(cfgs, [STEP, STEP], mode=mode, check_invariants=True)
    mig = LiveMigrator(cl, kv, bw, **kw)
    started = []
    cl.kernel.at(at, lambda _: started.append(mig.start(next(iter(cl.instances[0].running)), 0, 1)), None, PRIO_CONTROL)
    res = cl.run(workload([0.0], [32], [output]))
    return res.requests.iloc[0], mig, cl, started


@pytest.mark.parametrize("mode", MODES)
def test_two_stage_migration_bytes_and_times(mode):
    r, mig, cl, started = migrate_run(mode)
    # prefill 0 -> 1 s (token 1), decode tokens 2, 3, ... each second. At 2.5 the iteration 2 -> 3 is
    # under way: 3 tokens generated, 32 + 3 - 1 = 34 KV tokens; stage 0 copies them at 1e6 B / 1e7 B/s
    # = 0.1 s each: 3.4 s, to 5.9, while the request decodes on. At 5.9: 37 KV tokens, 3 new <= 16:
    # last stage at the source's next boundary (6.0), copying those 3 tokens (0.3 s) while it is out.
    assert started == [True]
    rec = mig.frame().iloc[0]
    assert (rec.outcome, rec.stages, rec.tokens, rec.bytes) == ("migrated", 2, 37, 37e6)
    assert rec.start_s == 2.5 and rec.end_s == pytest.approx(6.3) and rec.downtime_s == pytest.approx(0.3)
    # on the destination from 6.3: tokens 7..10 at 7.3 .. 10.3; the stall is one 1.3 s gap
    assert r.instance == "i1" and r.state == "finished" and r.first_token_s == 1.0
    assert r.finish_s == pytest.approx(10.3) and r.tbt_max_s == pytest.approx(1.3)
    assert r.preemptions == 0 and mig.migrated == {0}
    assert [(ld.outstanding, ld.pending_tokens) for ld in cl.loads] == [(0, 0), (0, 0)]
    assert all(i.used == 0 for i in cl.instances) and not mig.busy(0) and not mig.busy(1)


@pytest.mark.parametrize("mode", MODES)
def test_slow_link_takes_more_stages(mode):
    # 0.5 s per token: stage 0 copies 34 tokens (17 s) while 17 more are generated (> 16: another
    # stage), but the request finishes (token 10 at 10 s) before the first stage ends: abandoned
    r, mig, _, _ = migrate_run(mode, bw=2e6)
    rec = mig.frame().iloc[0]
    assert (rec.outcome, rec.stages, rec.tokens) == ("finished", 1, 34)
    assert r.instance == "i0" and r.finish_s == 10.0 and not mig.migrated
    # a long request: stage 0 (34 tokens, 2.5 -> 19.5 s; 51 KV tokens then) -> stage 1 (17 new
    # tokens, -> 28.0 s; 59 then) -> 8 new (<= 16): last stage at the 28 s boundary, 8 x 0.5 s out
    r, mig, _, _ = migrate_run(mode, bw=2e6, output=60)
    rec = mig.frame().iloc[0]
    assert (rec.outcome, rec.stages) == ("migrated", 3)
    assert rec.tokens == 34 + 17 + 8 and rec.downtime_s == pytest.approx(4.0) and rec.end_s == pytest.approx(32.0)
    assert r.instance == "i1" and r.state == "finished"


@pytest.mark.parametrize("mode", MODES)
def test_no_room_on_the_destination_keeps_the_request(mode):
    r, mig, _, _ = migrate_run(mode, dst_blocks=2)  # 2 blocks < the 3 its 37 (+1) tokens need
    assert mig.frame().iloc[0].outcome == "no-room" and r.instance == "i0" and r.finish_s == 10.0


def test_start_refuses_busy_or_absent_requests():
    r, mig, cl, started = migrate_run("fast", at=0.5)  # its prefill runs until 1.0: no KV to copy yet
    assert started == [False] and mig.frame().empty and r.finish_s == 10.0
    with pytest.raises(ValueError):
        LiveMigrator(cl, 0.0, 1e9)
