"""Small cases computed by hand (every number below is exact in binary floating point).

Step model: t = 1 + prefill_tokens/16 + decode_seqs/2 seconds (0 for an empty batch).
"""

import math

import numpy as np
import pytest

from servesim.perf import LinearStepTime
from servesim.sim import InstanceConfig, REQUEST_COLUMNS
from simutil import run, workload

STEP = LinearStepTime(c0=1.0, c_pt=0.0625, c_pc=0.0, c_ds=0.5, c_dc=0.0)
MODES = ("fast", "reference")


def row(df, i):
    return df.iloc[i]


@pytest.mark.parametrize("mode", MODES)
def test_single_request(mode):
    # prefill 32 tokens: 1 + 2 = 3.0 s -> first token; 3 decodes of 1.5 s -> 4.5, 6.0, 7.5
    w = workload([0.0], [32], [4])
    df = run(w, InstanceConfig(num_blocks=100), STEP, mode=mode).requests
    assert list(df.columns) == list(REQUEST_COLUMNS)
    r = row(df, 0)
    assert r.state == "finished" and r.reason == "" and r.instance == "i0" and not r.partial
    assert (r.scheduled_s, r.first_token_s, r.finish_s) == (0.0, 3.0, 7.5)
    assert (r.ttft_s, r.e2e_s) == (3.0, 7.5)
    assert (r.tbt_mean_s, r.tbt_max_s, r.tbt_p99_s) == (1.5, 1.5, 1.5)
    assert r.preemptions == 0


@pytest.mark.parametrize("mode", MODES)
def test_two_requests_interleave_v1(mode):
    # r0 as above (first token 3.0, decode ends 4.5); r1 (16 tokens, 2 out) arrives at 3.5,
    # joins at the 4.5 boundary: mixed iteration 1 + 1 + 0.5 = 2.5 -> 7.0 (r0 token 3, r1 first);
    # then both decode: 1 + 1 = 2 -> 9.0 (r0 token 4, r1 token 2): both finish at 9.0.
    w = workload([0.0, 3.5], [32, 16], [4, 2])
    df = run(w, InstanceConfig(num_blocks=100), STEP, mode=mode).requests
    r0, r1 = row(df, 0), row(df, 1)
    assert (r0.first_token_s, r0.finish_s) == (3.0, 9.0)
    assert (r0.tbt_mean_s, r0.tbt_max_s) == (2.0, 2.5)  # gaps 1.5, 2.5, 2.0
    assert r0.tbt_p99_s == np.percentile([1.5, 2.5, 2.0], 99)
    assert (r1.scheduled_s, r1.first_token_s, r1.finish_s) == (4.5, 7.0, 9.0)
    assert (r1.ttft_s, r1.tbt_mean_s, r1.tbt_max_s) == (3.5, 2.0, 2.0)


@pytest.mark.parametrize("mode", MODES)
def test_arrival_at_a_boundary_joins_that_iteration_v0_prefill_priority(mode):
    # vLLM V0: r0 prefill 16 -> 2.0; r1 arrives exactly at 2.0 and joins the iteration starting
    # there, which is prefill-only (r0 paused): -> 4.0; then both decode: 1 + 1 -> 6.0 (r1 done),
    # then r0 alone: 1.5 -> 7.5.
    w = workload([0.0, 2.0], [16, 16], [3, 2])
    cfg = InstanceConfig(num_blocks=100, policy="vllm-v0", max_num_batched_tokens=64)
    df = run(w, cfg, STEP, mode=mode).requests
    r0, r1 = row(df, 0), row(df, 1)
    assert (r0.first_token_s, r0.finish_s, r0.tbt_max_s, r0.tbt_mean_s) == (2.0, 7.5, 4.0, 2.75)
    assert (r1.scheduled_s, r1.first_token_s, r1.finish_s) == (2.0, 4.0, 6.0)


@pytest.mark.parametrize("mode", MODES)
def test_same_case_v1_mixes_prefill_and_decode(mode):
    # V1: 2.0 -> mixed (1 + 1 + 0.5) -> 4.5 -> both decode (2.0) -> 6.5: both finish.
    w = workload([0.0, 2.0], [16, 16], [3, 2])
    df = run(w, InstanceConfig(num_blocks=100), STEP, mode=mode).requests
    assert tuple(df.finish_s) == (6.5, 6.5)
    assert tuple(df.first_token_s) == (2.0, 4.5)
    assert row(df, 0).tbt_max_s == 2.5


@pytest.mark.parametrize("mode", MODES)
def test_preemption_by_recompute_of_the_last_admitted(mode):
    # 4 blocks of 4 tokens. r0, r1: 4-token prompts, 6 outputs, both at t=0.
    # it1 prefill 8 tokens: 1.5 -> 1.5 (first tokens; each holds 1 block).
    # it2..it5 decode both (2.0 each): 3.5, 5.5, 7.5, 9.5; at it2 each takes a 2nd block (full).
    # it6: r0 needs a 3rd block, none free -> preempt r1 (last admitted; generated 5).
    #   r0 decodes alone: 1.5 -> 11.0, its 6th token: finishes.
    # it7: r1 recomputes 4 + 5 = 9 tokens: 1 + 9/16 -> 12.5625, samples its 6th token: done.
    w = workload([0.0, 0.0], [4, 4], [6, 6])
    cfg = InstanceConfig(num_blocks=4, block_size=4, max_num_seqs=4, max_num_batched_tokens=64)
    df = run(w, cfg, STEP, mode=mode).requests
    r0, r1 = row(df, 0), row(df, 1)
    assert (r0.finish_s, r0.preemptions, r0.tbt_max_s, r0.tbt_mean_s) == (11.0, 0, 2.0, 1.9)
    assert (r1.finish_s, r1.preemptions, r1.tbt_max_s) == (12.5625, 1, 3.0625)
    assert r1.tbt_mean_s == (12.5625 - 1.5) / 5
    assert r1.scheduled_s == 0.0  # first admission, not the re-admission


@pytest.mark.parametrize("mode", MODES)
def test_chunked_prefill_splits_long_prompt(mode):
    # budget 32 tokens: a 80-token prompt runs as chunks 32, 32, 16: 3.0, 3.0, 2.0 -> 8.0
    w = workload([0.0], [80], [1])
    cfg = InstanceConfig(num_blocks=100, max_num_seqs=4, max_num_batched_tokens=32)
    df = run(w, cfg, STEP, mode=mode).requests
    assert row(df, 0).first_token_s == 8.0 and row(df, 0).finish_s == 8.0
    assert math.isnan(row(df, 0).tbt_mean_s)


@pytest.mark.parametrize("mode", MODES)
def test_orca_full_reservation_queues_instead_of_preempting(mode):
    # 4 blocks of 4: r0 reserves ceil((4+6)/4) = 3 blocks, r1 cannot fit -> waits for r0.
    w = workload([0.0, 0.0], [4, 4], [6, 6])
    cfg = InstanceConfig(num_blocks=4, block_size=4, max_num_seqs=4, max_num_batched_tokens=None,
                         policy="orca")
    df = run(w, cfg, STEP, mode=mode).requests
    r0, r1 = row(df, 0), row(df, 1)
    # r0: prefill 4 -> 1.25; 5 decodes of 1.5 -> 8.75. r1 then: 1.25 -> 10.0; +7.5 -> 17.5
    assert (r0.first_token_s, r0.finish_s) == (1.25, 8.75)
    assert (r1.scheduled_s, r1.first_token_s, r1.finish_s) == (8.75, 10.0, 17.5)
    assert df.preemptions.sum() == 0


@pytest.mark.parametrize("mode", MODES)
def test_requests_that_can_never_run_are_rejected(mode):
    w = workload([0.0, 0.0, 0.0, 0.0], [50, 10, 200, 8], [1, 45, 1, 0])
    cfg = InstanceConfig(num_blocks=10, block_size=16, max_model_len=54)
    df = run(w, cfg, STEP, mode=mode).requests
    assert list(df.state) == ["finished", "rejected", "rejected", "finished"]
    assert "prompt+output 55 > max_model_len 54" in df.reason[1]
    assert "prompt_tokens 200 > max_model_len" in df.reason[2]
    assert math.isnan(df.first_token_s[2]) and df.finish_s[2] == 0.0
    cfg = InstanceConfig(num_blocks=2, block_size=16)
    df = run(workload([0.0], [40], [1]), cfg, STEP, mode=mode).requests
    assert df.state[0] == "rejected" and "needs 3 KV blocks > cache capacity 2" in df.reason[0]
    # a prefill-only request (0 outputs) finishes at the end of its prefill, with no tokens
    df = run(workload([0.0], [16], [0]), InstanceConfig(num_blocks=4), STEP, mode=mode).requests
    assert df.state[0] == "finished" and df.finish_s[0] == 2.0 and math.isnan(df.first_token_s[0])


def test_partial_run_marks_unfinished():
    w = workload([0.0, 0.0, 100.0], [32, 32, 8], [4, 40, 2])
    for mode in MODES:
        from servesim.sim import Cluster
        cl = Cluster.uniform(1, InstanceConfig(num_blocks=100), STEP, mode=mode)
        df = cl.run(w, until=12.0).requests  # r0: 5.0, 7, 9, 11 -> done
        assert list(df.state) == ["finished", "unfinished", "unfinished"]
        assert list(df.partial) == [False, True, False]
        assert df.instance[2] == "" and df.finish_s[0] == 11.0 and df.first_token_s[1] == 5.0
