"""Aegaeon Figs 14-17 inputs: the sweep's --detail tables, its --ttft-s / --tbt-s / multi-pair --set
options, the declared test-scale runs of Figs 14 and 17, the per-request KV-wait accounting, and the
TP=4 roofline costs of the 72B setup."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from servesim.errors import EXIT_INPUT

from tests.systems.test_aegaeon_pool import needs_profiles

ROOT = Path(__file__).resolve().parents[2]


def _main(*args):
    from servesim.systems.aegaeon.sweep import main

    return main([str(a) for a in args])


@needs_profiles
@pytest.mark.parametrize("name", ["fig14/rps0p1/aegaeon", "fig17/a10/normal/aegaeon", "fig17/q72b/normal/aegaeon"])
def test_declared_test_scale_runs_write_their_outputs(tmp_path, name):
    from servesim.analysis import runs as runs_api

    run = runs_api.declared("aegaeon", "test", ROOT)[name]
    out = tmp_path / "o"
    assert _main(*run.args, "--seed", 0, "-o", out) == 0
    for f in run.outputs:
        assert (out / f).exists(), f
    pts = pd.read_csv(out / "points.csv")
    assert (pts.n_requests > 0).all() and ((pts.attainment_pct >= 0) & (pts.attainment_pct <= 100)).all()


@needs_profiles
def test_detail_tables_are_consistent(tmp_path):
    from servesim.metrics.time_breakdown import CATEGORIES

    out = tmp_path / "o"
    assert _main("--system", "aegaeon", "--models", 16, "--rate", 0.5, "--duration-s", 60, "--detail", "-o", out) == 0
    req = pd.read_csv(out / "requests.csv")
    pts = pd.read_csv(out / "points.csv")
    assert len(req) == pts.n_requests.sum()
    ok = req[~req.failed]
    assert (ok[list(CATEGORIES)] >= -1e-9).all().all()   # this workload once had turns stepping before a swap-in ended
    assert ok[list(CATEGORIES)].sum(axis=1).to_numpy() == pytest.approx(ok.total.to_numpy())
    # at least its own device -> host copy; at most its decode phase (batch-mates' swap-ins count: it waits on them)
    assert (ok.kv_wait_s > 0).all() and (ok.kv_wait_s <= ok.finish_s - ok.first_token_s + 1e-9).all()
    sw = pd.read_csv(out / "switches.csv")
    assert len(sw) == pts.n_switches.sum() and (sw.latency_s <= sw.full_load_s + 1e-12).all()
    hc = pd.read_csv(out / "host_cache.csv")
    assert set(hc.node) == {0, 1} and (hc.fragmented_bytes >= 0).all()
    assert (hc.allocated_bytes - hc.utilized_bytes - hc.fragmented_bytes).abs().max() < 1.0
    assert (hc.allocated_bytes % 2**30 == 0).all()   # whole 1-GiB slabs


@needs_profiles
def test_slo_targets_and_several_set_pairs(tmp_path):
    out = tmp_path / "o"
    assert _main("--system", "aegaeon", "--models", 4, "--rate", 0.1, "--workloads", "generated", "--ttft-s", 5,
                 "--tbt-s", 0.2, "--slo-scale", 0.5, "--set", "n_nodes=1", "prefill_per_node=2", "--set",
                 "decode_per_node=2", "-o", out) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["ttft_s"] == pytest.approx(2.5) and s["tbt_s"] == pytest.approx(0.1)
    assert (s["settings"]["n_nodes"], s["settings"]["prefill_per_node"], s["settings"]["decode_per_node"]) == (1, 2, 2)


@pytest.mark.parametrize("args, msg", [
    (["--tbt-s", "0"], "--tbt-s"),
    (["--ttft-s", "nan"], "--ttft-s"),
    (["--set", "tp=4"], "step_model=roofline"),
])
def test_new_options_input_errors_are_one_line(tmp_path, capsys, args, msg):
    rc = _main("--system", "aegaeon", "--models", 16, "--rate", 0.1, *args, "-o", tmp_path / "o")
    assert rc == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]


@needs_profiles
def test_72b_tp4_costs_are_per_gpu_shards():
    from servesim.catalog import get_model
    from servesim.systems.aegaeon.models import costs
    from servesim.systems.aegaeon.settings import Settings

    s = Settings(step_model="roofline", tp=4, checkpoints=("qwen2.5-72b",))
    c = costs("qwen2.5-72b", s)
    m = get_model("qwen2.5-72b")
    assert c.weight_bytes == pytest.approx(m.param_bytes / 4) and c.tp == 4
    assert c.host_kv_bytes_per_token == pytest.approx(m.kv_bytes_per_token())
    assert c.switch_s == pytest.approx(m.param_bytes / 4 / s.load_bw)
    small = costs("qwen2.5-7b", Settings())
    # a quarter of 72B is still ~2.4x the 7B's weights to stream per decode step
    assert small.decode_s(1, 1000) < c.decode_s(1, 1000) < 10 * small.decode_s(1, 1000)
    assert c.kv_blocks_capacity(16) > 0
