"""The front end as a queue (servesim.sim.frontend): the FIFO arithmetic against a direct loop,
hand-computed cases, the fixed point's coupling of ingestion and output, and a real Cluster run."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.errors import InputError
from servesim.perf import LinearStepTime
from servesim.sim import Cluster, InstanceConfig
from servesim.sim.frontend import FrontEnd, fifo_completions, queue, serve
from servesim.workload import schema


def loop_fifo(t, s):
    c, prev = [], -np.inf
    for ti, si in zip(t, s):
        prev = max(ti, prev) + si
        c.append(prev)
    return np.array(c)


@pytest.mark.parametrize("seed", range(5))
def test_fifo_completions_equal_the_recursion(seed):
    rng = np.random.default_rng(seed)
    t = np.sort(np.round(rng.exponential(1.0, 200).cumsum() * rng.choice([0.1, 1, 10]), 2))  # ties and gaps
    s = rng.choice([0.0, 0.05, 0.5, 3.0], 200)
    np.testing.assert_allclose(fifo_completions(t, s), loop_fifo(t, s), rtol=0, atol=1e-9)


def fake_engine(delay=0.1, tbt=0.01, instance="i0"):
    """An engine that answers ``delay`` after a request reaches it and then decodes every ``tbt``."""
    calls = []

    def run(wl):
        calls.append(wl["arrival_s"].to_numpy().copy())
        first = wl["arrival_s"].to_numpy() + delay
        out = wl["output_tokens"].to_numpy()
        inst = instance(wl) if callable(instance) else np.full(len(wl), instance)
        return pd.DataFrame({"request_id": wl["request_id"].to_numpy(), "instance": inst,
                             "arrival_s": wl["arrival_s"].to_numpy(), "state": "finished",
                             "first_token_s": first, "finish_s": first + tbt * (out - 1),
                             "ttft_s": np.nan, "e2e_s": np.nan, "tbt_mean_s": np.nan,
                             "prompt_tokens": wl["prompt_tokens"].to_numpy(), "output_tokens": out})
    return run, calls


def test_a_free_front_end_changes_nothing():
    wl = schema.make([0.0, 0.5, 0.5, 2.0], [10, 20, 30, 40], [1, 5, 3, 2])
    run, _ = fake_engine()
    out, info = serve(FrontEnd(), wl, run)
    eng = run(wl)
    np.testing.assert_array_equal(out["first_token_s"], eng["first_token_s"])
    np.testing.assert_array_equal(out["finish_s"], eng["finish_s"])
    assert info["passes"] == 1 and info["converged"]


def test_two_requests_by_hand():
    """Ingestion 10 ms + 1 us/prompt token, 2 ms per output token, one server."""
    fe = FrontEnd(request_s=0.010, prompt_token_s=1e-6, output_token_s=0.002)
    wl = schema.make([0.0, 0.001], [1000, 1], [1, 2])
    run, _ = fake_engine(delay=0.1, tbt=0.05)
    out, info = serve(fe, wl, run)
    # ingestion: r0 0 -> 0.011; r1 waits: 0.011 -> 0.021001
    # r0: first token at 0.111, served -> 0.113; r1: first at 0.121001 -> 0.123001, second at 0.171001 -> 0.173001
    np.testing.assert_allclose(out["first_token_s"], [0.113, 0.123001], atol=1e-12)
    np.testing.assert_allclose(out["finish_s"], [0.113, 0.173001], atol=1e-12)
    np.testing.assert_allclose(out["ttft_s"], [0.113, 0.122001], atol=1e-12)
    np.testing.assert_allclose(out["tbt_mean_s"].iloc[1], 0.05, atol=1e-12)
    assert info["converged"]


def test_ingestion_waits_behind_output_work_and_the_fixed_point_finds_it():
    """r1 arrives while r0's tokens are being streamed: its ingestion waits for them, which the
    first pass (ingestion alone) cannot know; the next pass moves it and the last one stays."""
    fe = FrontEnd(request_s=0.001, output_token_s=0.01)
    wl = schema.make([0.0, 0.0105], [1, 1], [9, 1])  # r0: 9 tokens at 0.011 .. 0.091 (engine: +0.01, every 0.01)
    run, calls = fake_engine(delay=0.0, tbt=0.01)
    out, info = serve(fe, wl, run, chunks=8)
    assert info["converged"] and info["passes"] >= 2
    assert calls[0][1] == pytest.approx(0.0115)  # pass 0: ingestion alone
    # r0's first token (at 0.001) is served 0.001 -> 0.011; its next chunk (at 0.011) 0.011 -> 0.021;
    # r1 arrived at 0.0105, behind the first token's job: served 0.011 -> 0.012, the chunk then 0.012 -> 0.022
    assert calls[-1][1] == pytest.approx(0.012)
    # the reference: the same jobs through a plain loop, at the converged entry times
    q = queue(fe, wl["arrival_s"], wl["prompt_tokens"], wl["output_tokens"], ["i0", "i0"],
              calls[-1] + 0.0, calls[-1] + 0.01 * (wl["output_tokens"].to_numpy() - 1))
    np.testing.assert_allclose(q["entry_s"], calls[-1], atol=1e-12)


def test_each_instance_has_its_own_front_end():
    fe = FrontEnd(request_s=0.01)
    wl = schema.make([0.0, 0.0], [1, 1], [1, 1])
    run, _ = fake_engine(delay=0.1, instance=lambda w: np.array(["a", "b"])[np.argsort(w["request_id"].to_numpy())])
    out, _ = serve(fe, wl, run)
    np.testing.assert_allclose(out["first_token_s"], [0.11, 0.11], atol=1e-12)  # no queueing between them


def test_output_saturation_grows_ttft_however_fast_the_engine():
    fe = FrontEnd(output_token_s=0.001)  # 1,000 tokens/s at most
    n = 200
    wl = schema.make(np.arange(n) * 0.05, np.full(n, 10), np.full(n, 100))  # 2,000 tokens/s offered
    run, _ = fake_engine(delay=0.01, tbt=0.001)
    out, info = serve(fe, wl, run)
    ttft = out["ttft_s"].to_numpy()
    assert ttft[-1] > 10 * ttft[0] and info["utilisation_max"] > 0.9


def test_real_cluster_behind_a_front_end():
    cfg = InstanceConfig(max_num_seqs=8, max_num_batched_tokens=256, num_blocks=256, block_size=16)
    step = LinearStepTime(c0=0.005, c_pt=1e-5, c_ds=1e-4)
    rng = np.random.default_rng(0)
    wl = schema.make(np.sort(rng.uniform(0, 5, 60)), rng.integers(10, 200, 60), rng.integers(1, 40, 60))

    def run(w):
        return Cluster.uniform(2, cfg, step).run(w).requests

    plain = run(wl).set_index("request_id").loc[wl["request_id"]]
    free, _ = serve(FrontEnd(), wl, run)
    np.testing.assert_array_equal(free["ttft_s"].to_numpy(), plain["ttft_s"].to_numpy())
    fe = FrontEnd(request_s=0.003, prompt_token_s=2e-6, output_token_s=2e-4)
    out, info = serve(fe, wl, run)
    assert info["converged"]
    # every client TTFT holds its own ingestion and first token's service; on average the front end adds
    floor = fe.request_s + fe.prompt_token_s * wl["prompt_tokens"].to_numpy() + fe.output_token_s
    assert (out["ttft_s"].to_numpy() >= floor - 1e-12).all()
    assert out["ttft_s"].mean() > plain["ttft_s"].mean() + fe.request_s
    again, _ = serve(fe, wl, run)
    pd.testing.assert_frame_equal(out, again)  # deterministic


def test_bad_costs_and_profiles_are_named(tmp_path):
    with pytest.raises(ValueError, match="output_token_s=-1"):
        FrontEnd(output_token_s=-1)
    p = tmp_path / "fe.json"
    p.write_text(json.dumps({"fit": {"request_s": 0.003, "prompt_token_s": 1e-6}}))
    with pytest.raises(InputError, match=r"fe\.json.*output_token_s"):
        FrontEnd.from_json(p)
    p.write_text(json.dumps({"fit": {"request_s": 0.003, "prompt_token_s": 1e-6, "output_token_s": 2e-4},
                             "vllm": "0.32.0", "host": "h"}))
    fe = FrontEnd.from_json(p)
    assert fe.output_token_s == 2e-4 and "0.32.0" in fe.source
    with pytest.raises(InputError, match="not found"):
        FrontEnd.from_json(tmp_path / "none.json")


def test_a_two_state_flip_is_found_as_a_cycle_and_stops():
    """r0's first token comes early only while r1 enters early, and an early token delays r1's entry:
    no entry times are self-consistent, the passes alternate, and serve stops at the repeat."""
    fe = FrontEnd(request_s=0.001, output_token_s=0.003)
    wl = schema.make([0.0, 0.004], [1, 1], [1, 1])

    def run(w):
        e = w["arrival_s"].to_numpy()
        first = np.array([0.002 if e[1] < 0.0055 else 0.006, e[1] + 0.1])
        return pd.DataFrame({"request_id": w["request_id"].to_numpy(), "instance": "i0", "arrival_s": e,
                             "state": "finished", "first_token_s": first, "finish_s": first})

    out, info = serve(fe, wl, run)
    assert info["cycle"] == 2 and info["settled"] and not info["converged"] and info["passes"] == 2
    assert info["last_move_s"] == pytest.approx(0.001)
