"""The ServerlessLLM / ServerlessLLM+ baselines on hand-checkable step times (fakes: fixed costs)."""

import pytest

from servesim.perf.base import LinearStepTime
from servesim.systems.aegaeon import muxserve
from servesim.systems.aegaeon.models import ModelCosts
from servesim.systems.aegaeon.request import Req
from servesim.systems.aegaeon.settings import Settings
from servesim.systems.aegaeon.sllm import SllmSim

STEP, SWITCH = 0.02, 1.0


def sim(policy="sllm", workers=1, models=("m_00", "m_01")):
    s = Settings(sllm_workers=workers)
    x = SllmSim(s, policy)
    for m in models:
        x._costs[m] = ModelCosts(key="fake", weight_bytes=16e9, kv_bytes_per_token=1e5, max_context=4096,
                                 step=LinearStepTime(c0=STEP, c_pt=0.0, c_pc=0.0, c_ds=0.0, c_dc=0.0),
                                 switch_s=SWITCH, c_est_s=SWITCH, usable_bytes=72e9, gpu_bytes=80e9)
    return x


def test_head_of_line_blocking():
    x = sim()
    a, b, c = Req(0, "m_00", 0.0, 100, 100), Req(1, "m_01", 0.1, 100, 50), Req(2, "m_00", 0.2, 100, 10)
    x.run([a, b, c])
    # one worker: C (model 0, resident) waits behind B (model 1) in the queue
    assert a.tokens[0] == pytest.approx(SWITCH + STEP)
    assert a.tokens[-1] == pytest.approx(SWITCH + 100 * STEP)
    assert b.tokens[0] == pytest.approx(a.tokens[-1] + SWITCH + STEP)
    assert c.tokens[0] == pytest.approx(b.tokens[-1] + SWITCH + STEP)
    assert [s[3] for s in x.switch_log] == ["m_00", "m_01", "m_00"]


def test_request_not_started_in_15_s_fails():
    x = sim()
    a, b = Req(0, "m_00", 0.0, 100, 1000), Req(1, "m_01", 0.1, 100, 10)  # A decodes for 20 s
    res = x.run([a, b])
    assert b.failed and b.tokens == [] and not a.failed
    assert res.stats["failed"] == 1
    assert len(a.tokens) == 1000
    # the failed request never causes a swap
    assert [s[3] for s in x.switch_log] == ["m_00"]


def test_same_model_requests_batch_together():
    x = sim()
    a, b = Req(0, "m_00", 0.0, 100, 20), Req(1, "m_00", 0.5, 100, 20)
    x.run([a, b])
    # B queues behind A on the same worker (QS = 4) and joins A's batch: prefill first, then both decode
    assert b.tokens[0] > 0.5 and b.tokens[0] < a.tokens[-1]
    assert len(x.switch_log) == 1


def test_sllm_plus_srtf_preempts_with_recompute():
    x = sim("sllm_plus")
    a, b = Req(0, "m_00", 0.0, 100, 200), Req(1, "m_01", 1.5, 100, 10)
    x.run([a, b])
    # B's prefill batch is shorter than A's remaining decode: B runs first, A is swapped out, loses
    # its KV and is recomputed afterwards, then finishes all its tokens
    assert b.tokens[-1] < a.tokens[-1]
    assert len(a.tokens) == 200 and not a.failed
    assert [s[3] for s in x.switch_log] == ["m_00", "m_01", "m_00"]
    gap = [t for t in a.tokens if t > b.tokens[-1]][0] - b.tokens[-1]
    assert gap == pytest.approx(SWITCH + STEP)


def test_sllm_placement_spreads_models_over_workers():
    x = sim(workers=2)
    a, b = Req(0, "m_00", 0.0, 100, 50), Req(1, "m_01", 0.1, 100, 50)
    x.run([a, b])
    assert b.tokens[0] == pytest.approx(0.1 + SWITCH + STEP)  # an empty worker takes it


def test_muxserve_capacity_rule():
    assert muxserve.max_models() == 32
    assert muxserve.attainment(32) == 1.0
    assert muxserve.attainment(33) != muxserve.attainment(33)  # NaN: no placement
