"""Tier policies under KV contention (journal §6.5, Fig 15) and the contended-fleet run presets."""

import json

import numpy as np
import pandas as pd
import pytest

from servesim.analysis.runs import run as declared_run
from servesim.systems.sageserve import runs
from servesim.systems.sageserve.config import SageServeConfig
from servesim.systems.sageserve.strategies import run_strategy
from servesim.workload.schema import make


def _burst() -> pd.DataFrame:
    """60 long IW-N requests (more KV than one Llama-2 instance holds), then 20 short IW-F ones."""
    n_n, n_f = 60, 20
    arrival = np.concatenate([np.linspace(0.0, 1.0, n_n), np.linspace(2.0, 3.0, n_f)])
    tier = np.array(["IW-N"] * n_n + ["IW-F"] * n_f)
    prompt = np.array([8000] * n_n + [1000] * n_f)
    output = np.array([200] * n_n + [50] * n_f)
    deadline = arrival + np.where(tier == "IW-F", 1.0, 5.6)
    return make(arrival, prompt, output, model="llama-2-70b", region="eastus",
                tier=pd.Categorical(tier, categories=["IW-F", "IW-N", "NIW"]), deadline_s=deadline)


def _run(policy: str) -> pd.DataFrame:
    from servesim.sim.schedulers import policy_names

    cfg = SageServeConfig(start_instances=1, min_per_endpoint=1, tier_policy=policy, niw_queue=False,
                          delays_in_sim=False)
    before = set(policy_names())
    res, _ = run_strategy("reactive", _burst(), config=cfg, seed=0, max_instances=1, drain_s=600.0)
    assert set(policy_names()) == before  # the run's tier scheduler left the registry with it
    r = res.requests
    assert (r["state"] == "finished").all()
    return r


def test_pf_serves_iwf_first_when_kv_is_full():
    fcfs, pf = _run("fcfs"), _run("pf")
    med = {name: r.groupby("tier", observed=True)["ttft_s"].median() for name, r in (("fcfs", fcfs), ("pf", pf))}
    # under FCFS the IW-F requests queue behind the IW-N backlog; PF lets them jump it
    assert med["pf"]["IW-F"] < 0.5 * med["fcfs"]["IW-F"]
    assert med["pf"]["IW-N"] >= med["fcfs"]["IW-N"]


def test_edf_orders_by_ttft_deadline():
    fcfs, edf = _run("fcfs"), _run("edf")
    # the IW-F deadlines (arrival + 1 s, arrival >= 2 s) fall before the later IW-N ones (arrival + 5.6 s)
    assert edf.loc[edf["tier"] == "IW-F", "ttft_s"].median() < fcfs.loc[fcfs["tier"] == "IW-F", "ttft_s"].median()


def test_tier_tiny_preset_caps_fleet_and_sets_iwn_sla(tmp_path):
    out = tmp_path / "pf"
    args = list(declared_run("sageserve", "runs_tier/pf", "test").args)  # the declared test-scale run
    runs.main(args + ["-o", str(out)])
    s = json.loads((out / "summary.json").read_text())
    assert args[args.index("--max-instances") + 1] == "auto"  # the cap by rule (theta.contended_instances)
    assert s["max_instances_rule"] == "contended" and s["max_instances"] >= 1
    assert s["iwn_sla_s"] == pytest.approx(5.6) and s["tier_policy"] == "pf"
    r = pd.read_parquet(out / "requests.parquet")
    iwn = r[r["tier"] == "IW-N"]
    assert len(iwn) and np.allclose(iwn["deadline_s"] - iwn["arrival_s"], 5.6)
    iwf = r[r["tier"] == "IW-F"]
    assert np.allclose(iwf["deadline_s"] - iwf["arrival_s"], 1.0)
    assert r["instance"].nunique() <= s["max_instances"]


def test_dpa_tau_override(tmp_path):
    out = tmp_path / "dpa"
    runs.main(list(declared_run("sageserve", "runs_tier/dpa_taun1", "test").args) + ["-o", str(out)])
    s = json.loads((out / "summary.json").read_text())
    assert s["dpa_tau_n_s"] == 1.0 and s["dpa_tau_p_s"] == SageServeConfig().dpa_tau_p_s
