"""OServe's Dynamo + vLLM baseline (Fig 18): KV hand-off, the ±1 planner, the split model, the run CLI."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.catalog import get_model
from servesim.systems.oserve import dynamo as DY
from servesim.systems.oserve import switching as SW
from servesim.systems.oserve.replica import Shape, step_model
from servesim.workload import schema


def test_kv_handoff_is_bytes_over_the_link():
    # 1000 tokens x 1 MB = 1 GB: 2.5 ms over NVLink (400 GB/s), 5 ms over InfiniBand (200 GB/s)
    assert DY.kv_handoff_s(1000, 1e6, True) == pytest.approx(2.5e-3)
    assert DY.kv_handoff_s(1000, 1e6, False) == pytest.approx(5e-3)
    assert DY.kv_handoff_s(0, 1e6, False) == 0.0


@pytest.mark.parametrize("gpus,tp,same_node", [(8, 4, True), (16, 8, False)])
def test_one_request_pays_the_handoff_between_its_first_two_tokens(gpus, tp, same_node):
    # two workers (1 prefill + 1 decode): on one node (TP4 x 2 of 8 GPUs) or one per node (TP8 x 2 of 16)
    model, shape, prompt = "opt-30b", Shape(tp), 1000
    st = DY.DynamoSetup(model, gpus, shape, 1.0, 2, [1], 1, 60.0, placed=SW.layout([shape] * 2, gpus))
    wl = schema.make(np.array([0.0]), np.array([prompt]), np.array([2]), model=model)
    df, moves = DY.serve(st, wl, np.zeros(1, np.int64))
    r = df.iloc[0]
    kvb = get_model(model).kv_bytes_per_token(get_model(model).dtype_bytes)
    hand = prompt * kvb / (SW.NVLINK_BPS if same_node else SW.IB_BPS)
    step = float(step_model(model, shape).step_time(0, 0, 1, prompt + 1))
    assert r.state == "finished" and moves == []
    assert r.tbt_max_s - step == pytest.approx(hand, abs=1e-6)


def test_planner_moves_one_worker_per_span_toward_the_target():
    assert DY.planner_step(2, 4, 5) == 3 and DY.planner_step(3, 3, 5) == 3 and DY.planner_step(1, 0, 5) == 1
    assert DY.planner_step(4, 9, 5) == 4  # each pool keeps one worker
    assert DY.plan_counts([2, 4, 4, 4, 1, 1], 2, 5) == [2, 3, 4, 4, 3, 2]


def test_split_alpha_on_hand_numbers():
    # 4 workers, the load needs 1 prefill and 3 decode workers: 1P+3D runs at exactly 1.0
    assert DY.split_alpha(4, 1.0, 3.0) == (1, 1.0)
    # needs 2 and 2 on 6 workers: 3P+3D gives 1.5
    assert DY.split_alpha(6, 2.0, 2.0) == (3, 1.5)
    with pytest.raises(ValueError):
        DY.split_alpha(1, 1.0, 1.0)


def test_planner_follows_a_toy_load_in_the_simulator():
    # 4 TP2 workers of OPT-30B; span 0 is prefill-heavy (long prompts, 1-token outputs), spans 1-4
    # decode-heavy (short prompts, long outputs): the planner, a span late, moves one worker a span
    rng = np.random.default_rng(0)
    n = 120
    t = np.sort(rng.uniform(0, 60, n))
    heavy = np.concatenate([np.sort(rng.uniform(60 * s, 60 * s + 60, 60)) for s in range(1, 5)])
    wl = schema.make(np.concatenate([t, heavy]), np.r_[np.full(n, 6000), np.full(heavy.size, 50)],
                     np.r_[np.full(n, 2), np.full(heavy.size, 1500)], model="opt-30b")
    st = DY.prepare("opt-30b", 8, wl, 5, 60.0, max_pp=1)
    assert st.n_workers == 8 // st.shape.gpus
    df, moves = DY.serve(st, wl, np.zeros(len(wl), np.int64))
    assert st.targets[0] > st.targets[-1]  # the first split is prefill-heavier than the later ones
    assert all(abs(a - b) <= 1 for a, b in zip(st.actual, st.actual[1:]))
    assert st.actual[-1] < st.actual[0] and len(moves) == st.actual[0] - st.actual[-1]
    assert all(m["switch_s"] > SW.RESTART_S for m in moves)  # a move reloads the weights
    assert (df.state == "finished").all()


def test_online_cli_with_dynamo_at_test_scale(tmp_path, oserve_tiny_trace):
    from servesim.systems.oserve import online

    args = [*oserve_tiny_trace, "--max-pp", "2", "--systems", "oserve", "dynamo"]
    assert online.main([*args, "-o", str(tmp_path / "a")]) == 0
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert set(s["systems"]) == {"oserve", "dynamo"} and s["dynamo"]["workers"] >= 2
    assert len(s["dynamo"]["prefill_workers"]) == s["n_spans"]
    sysdf = pd.read_csv(tmp_path / "a" / "systems.csv").set_index("system")
    assert sysdf.loc["dynamo", "n_completed"] == sysdf.loc["dynamo", "n_requests"]
    assert online.main([*args, "-o", str(tmp_path / "b")]) == 0  # same seed, same bytes
    a, b = pd.read_csv(tmp_path / "a" / "systems.csv"), pd.read_csv(tmp_path / "b" / "systems.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["sim_wall_s"]), b.drop(columns=["sim_wall_s"]))
