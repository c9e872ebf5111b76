"""Fleet runs, SageServe strategy runs, engine replays and sim-vs-engine comparisons all write
`servesim.metrics.summarize`'s layout."""

import json
from pathlib import Path

import numpy as np
import pytest

from servesim.metrics import SCHEMA_VERSION, block_keys

EX = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
LAYOUT = {"schema_version", "percentiles", "slo", "token_times", "all", "by_tier", "groups"}


def _check(s: dict) -> None:
    assert LAYOUT <= set(s) and s["schema_version"] == SCHEMA_VERSION
    for block in [s["all"], *s["by_tier"].values(), *s["groups"].values()]:
        assert list(block) == block_keys(s["percentiles"])
    json.dumps(s, allow_nan=False)  # JSON-ready: missing values are None, not NaN


@pytest.fixture(scope="module")
def fleet_summary():
    from servesim.fleet import load_scenario, run_scenario

    sc = load_scenario(EX / "one_region.yaml")
    sc = sc.model_copy(update={"workload": sc.workload.model_copy(update={"duration_s": 120.0})})
    return run_scenario(sc).summary


def test_fleet_run(fleet_summary):
    s = fleet_summary
    _check(s)
    assert s["all"]["requests"] > 0 and s["instance_hours"]["billed"] > 0
    assert s["instance_hours"]["binned_max"]["billed"] >= s["instance_hours"]["billed"] - 1e-9
    assert {"scenario", "seed", "end_s", "partial", "scale_denied"} <= set(s)  # the fleet's own fields stay


def test_sageserve_strategy_run(fleet_summary):
    from servesim.systems.sageserve.config import SageServeConfig
    from servesim.systems.sageserve.strategies import run_strategy, summarise
    from servesim.workload import sageserve_week

    wk = sageserve_week(scale=0.02, seed=3, days=1)
    wl = wk[(wk.model == "llama-2-70b") & (wk.region == "eastus") & (wk.arrival_s < 13.25 * 3600)].reset_index(drop=True)
    res, _ = run_strategy("reactive", wl, t0_s=13 * 3600, config=SageServeConfig(start_instances=2), seed=0)
    s = summarise(res, "reactive")
    _check(s)
    iw = res.requests[(res.requests.tier != "NIW") & (res.requests.state == "finished")]
    assert s["groups"]["iw"]["completed"] == len(iw)
    assert s["groups"]["iw"]["p95_ttft_s"] == float(np.percentile(iw.ttft_s, 95))
    assert set(s["all"]) == set(fleet_summary["all"])


def test_engine_replay_and_comparison(tmp_path, fleet_summary):
    from servesim.engine.compare import COMPARED, compare_tables
    from servesim.engine.records import RequestRecord
    from servesim.engine.replay import write_outputs
    from servesim.workload import schema

    wl = schema.make(np.array([0.0, 0.5, 1.0]), np.array([16, 16, 16]), np.array([3, 2, 4]))
    recs = {0: RequestRecord(0, 0.0, 0.0, [0.5, 0.75, 1.0], "finished", "", 1.0),
            1: RequestRecord(1, 0.5, 0.5, [1.0, 1.5], "finished", "", 1.5),
            2: RequestRecord(2, 1.0, 1.0, [2.0], "error", "server closed", np.nan)}
    s = write_outputs(tmp_path, wl, recs, {"engine": {}, "kv_blocks": 8}, wall_s=3.0)
    _check(s)
    assert s["token_times"] == "recorded" and s["all"]["completed"] == 2 and s["all"]["failed"] == 1
    assert s["all"]["mean_itl_s"] == pytest.approx((0.25 + 0.25 + 0.5) / 3)
    assert s["wall_s"] == 3.0 and s["kv_blocks"] == 8 and not s["partial"]
    assert json.loads((tmp_path / "summary.json").read_text())["all"] == s["all"]
    assert set(s["all"]) == set(fleet_summary["all"])
    import pandas as pd

    req = pd.read_parquet(tmp_path / "requests.parquet")
    t = compare_tables(req, req)
    assert t.metric.tolist() == list(COMPARED) and set(COMPARED) <= set(s["all"])


def test_metrics_is_a_low_layer(project_root, tmp_path):
    """servesim.metrics imports only numpy, pandas and (at most) the workload schema: every layer
    above it (sim, fleet, engine, systems, notebooks) may use it."""
    from servesim._imports import closure

    nb = tmp_path / "nb.py"
    nb.write_text("import servesim.metrics\n")
    src = project_root / "src"
    got = {p.relative_to(src).as_posix() for p in closure(nb, src)}
    allowed = {"servesim/__init__.py", "servesim/workload/__init__.py", "servesim/workload/schema.py"}
    assert {f for f in got if not f.startswith("servesim/metrics/")} <= allowed
