# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %%

# %% [markdown]
# # SageServe Fig 15 — instance queue order by tier: FCFS / EDF / PF / DPA
#
# Journal §7.2.6, Fig 15: (a) 75%ile TTFT of IW-F, IW-N and NIW, (b) SLA violations (%) of IW-F
# and IW-N per policy. The paper's numbers (Q3 TTFT IW-F / IW-N; violations): FCFS ≈5.6 / 5.6 s,
# 45 / 25 %; EDF 2.4 / 6.1 s, 31 / 34 %; PF 0.9 / 12.1 s, 24 / 60 %; DPA 2.1 / 7.9 s, 28 / 38 %.
# Not in the authors' code; the fleet, τ_n, τ_p and the SLA thresholds used are not given.
#
# **Why a contended setting.** In the paper's instance (ORCA batching, KV reserved for prompt +
# output at admission, no token cap) every waiting request that fits in KV memory joins the next
# iteration, so the queue order only matters while KV memory is full. A fleet that SageServe
# scales freely rarely fills it (the scalers act at 70 % utilisation): on the strategy preset all
# four policies gave identical numbers. The paper's FCFS numbers (Q3 TTFT 5.6 s, 45 % IW-F
# violations) imply queues, so we cap the fleet.
#
# **Our setting** (runs `runs_tier/<policy>`, window `tier_<scale>` of
# `workflow/runs/sageserve.yaml`): SageServe LT-UA, paper reading, Llama-2 in East US on the
# synthetic week's peak day at Nov'24 volume (quick: 14:00–16:00, ≈5 req/s), **a cap by rule**
# (`max-instances: auto`, `theta.contended_instances`: the fewest instances whose theta covers the
# window's busiest 15 minutes; 7 in both windows; started at the cap), so KV memory fills at the
# peak and instance queues form. LT-UA itself holds fewer (5-6 at the paper's theta), which the
# backlog in the figures shows; the cap does not bind. NIW is held in the queue manager and released at < 60 % / < 50 %
# utilisation (J §6.2); its TTFT counts from arrival (hold included) and, as a second number, from
# release (the authors' code starts the clock there). The policy orders each instance's waiting
# queue before every iteration (a queue order, `servesim.sim.queue_orders`): FCFS = arrival
# (NIW behind IW until its 10-h bump, as the authors' queue key); EDF = TTFT deadline; PF = IW-F,
# IW-N, NIW; DPA with **τ_n = 10 s, τ_p = 1 s** (our choice; the `dpa_taun1` run uses τ_n = 1 s).
#
# **SLAs.** IW-F: TTFT ≤ 1 s (J §4). IW-N: the paper states < 1 min, but its own FCFS numbers
# (IW-N Q3 TTFT 5.6 s with 25 % violations) put the threshold at ≈5.6 s (spec §6 item 10); we
# use **5.6 s** (preset `iwn_sla_s`, CLI `--iwn-sla-s`) and also report IW-N violations at 60 s.
#
# **Reading `oracle`** (runs `<policy>_oracle`, right of the dashed line): the same runs with LT-UA's
# hourly ILP sized on the coming hour's true demand instead of ARIMA's forecast of it. No
# forecaster has that; it asks how much of the backlog comes from the forecast lagging the
# afternoon ramp rather than from the order or the cap. Not the paper's system: no claim is judged
# on it, the claims' diagnoses cite it.
# A violation = TTFT above the tier's SLA or not finished.
#
# **What limits the comparison.** With whole-prompt prefill on the Splitwise Llama-2 profile
# (≈0.19 ms per prompt token), a sizeable share of IW-F prompts needs more than 1 s of prefill on
# its own (`iw_f_prefill_floor_pct`), and a request always waits for the running iteration, which
# can hold several prompts; so our IW-F violation rates sit well above the paper's whatever the
# order. Compare orderings; absolute values are checked at full scale only, with loose tolerances.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
policies = ["fcfs", "edf", "pf", "dpa"]
extra_runs = ["dpa_taun1"]   # sensitivity: DPA with tau_n of 1 s
oracle_runs = ["fcfs_oracle", "edf_oracle", "pf_oracle", "dpa_oracle"]  # reading `oracle` (below)

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dirs
from servesim.metrics import SLO, summarize
from servesim.perf.base import LinearStepTime
from servesim.systems.sageserve.strategies import MODEL_DEFAULTS

apply_style()
base = run_dirs("sageserve", "runs_tier", scale, root)  # run name -> its folder (workflow/runs/sageserve.yaml)
cols = ["tier", "state", "arrival_s", "ttft_s", "e2e_s", "tbt_mean_s", "deadline_s", "first_token_s", "finish_s",
        "scheduled_s", "prompt_tokens", "output_tokens", "niw_release_s"]
rows, setup, reqs = [], {}, {}


def num(v):
    return np.nan if v is None else v


for p in policies + extra_runs + oracle_runs:
    r = pd.read_parquet(base[p] / "requests.parquet", columns=cols)
    setup[p] = json.loads((base[p] / "summary.json").read_text())
    reqs[p] = r
    # per tier: TTFT and queue-wait percentiles, deadline attainment (IW: first token by the
    # tier's TTFT deadline), and SLO attainment at TTFT <= 60 s (IW-N at the paper's stated SLA)
    by_tier = summarize(r, slo=SLO(ttft_s=60.0), percentiles=(50, 75))["by_tier"]
    for tier in ("IW-F", "IW-N", "NIW"):
        b = by_tier.get(tier, {})
        g = r[r["tier"] == tier]
        fin = g[g["state"] == "finished"]
        rel = (fin["first_token_s"] - fin["niw_release_s"]) if tier == "NIW" else fin["ttft_s"]
        rows.append({"policy": p, "tier": tier, "requests": len(g), "finished": len(fin),
                     "ttft_p75": num(b.get("p75_ttft_s")),
                     "ttft_p50": num(b.get("p50_ttft_s")),
                     "ttft_p75_from_release": float(np.percentile(rel, 75)) if len(fin) else np.nan,
                     "queue_wait_p75": num(b.get("p75_queue_s")),
                     "violation_pct": 100.0 * (1.0 - b["deadline_attainment"]) if len(g) and tier != "NIW" else np.nan,
                     "violation_pct_60s": 100.0 * (1.0 - b["slo_attainment"]) if len(g) and tier == "IW-N" else np.nan,
                     "sla_s": float(np.median(g["deadline_s"] - g["arrival_s"])) if len(g) else np.nan,
                     "instance_hours": setup[p]["instance_hours"]["billed"], "strategy": setup[p]["strategy"],
                     "tier_policy": setup[p]["tier_policy"], "dpa_tau_n_s": setup[p].get("dpa_tau_n_s"),
                     "dpa_tau_p_s": setup[p].get("dpa_tau_p_s"), "max_instances": setup[p].get("max_instances"),
                     "reading": setup[p]["reading"]})
data = pd.DataFrame(rows)
data

# %% [markdown]
# The IW-F floor: the share of IW-F requests whose prefill alone (the step-time model, one
# prompt in an otherwise empty iteration) exceeds the IW-F SLA, so no queue order can meet it.

# %%
step = LinearStepTime(**{k: v for k, v in MODEL_DEFAULTS["llama-2-70b"]["step_time"].items() if k != "backend"})
r0 = reqs[policies[0]]
iwf = r0[r0["tier"] == "IW-F"]
iwf_sla = float(np.median(iwf["deadline_s"] - iwf["arrival_s"]))
prompt = iwf["prompt_tokens"].to_numpy(np.float64)
prefill_s = step.step_time(prompt, prompt, 0, 0)  # the iteration of one lone prompt
floor_pct = 100.0 * float((prefill_s > iwf_sla).mean())
floor_pct

# %%
names = {"fcfs": "FCFS", "edf": "EDF", "pf": "PF", "dpa": "DPA", "dpa_taun1": "DPA τn=1"}
names |= {f"{p}_oracle": f"{names[p]}·or" for p in ("fcfs", "edf", "pf", "dpa")}
shown = policies + extra_runs + oracle_runs
fig, axes = plt.subplots(1, 2, figsize=(8.5, 2.8))
x = np.arange(len(shown))
for ax, col, tiers in ((axes[0], "ttft_p75", ("IW-F", "IW-N", "NIW")), (axes[1], "violation_pct", ("IW-F", "IW-N"))):
    w = 0.8 / len(tiers)
    for k, tier in enumerate(tiers):
        v = data[data["tier"] == tier].set_index("policy").loc[shown, col]
        ax.bar(x + (k - (len(tiers) - 1) / 2) * w, v, w, label=tier)
    ax.set_xticks(x, [names.get(p, p) for p in shown], fontsize=6, rotation=30)
    if oracle_runs:  # the oracle reading's runs stand apart
        ax.axvline(len(shown) - len(oracle_runs) - 0.5, color="0.5", lw=0.8, ls="--")
axes[0].set_ylabel("75%ile TTFT (s)")
axes[0].set_yscale("log")
axes[1].set_ylabel("SLA violations (%)")
axes[1].axhline(floor_pct, color="k", lw=0.8, ls=":", label="IW-F prefill floor")
axes[0].set_ylim(top=axes[0].get_ylim()[1] * 30)
axes[1].set_ylim(0, 120)
axes[0].legend(fontsize=6, ncol=3, loc="upper center")
axes[1].legend(fontsize=6, ncol=3, loc="upper center")
fig.tight_layout()

# %%
metrics = {}
for r in data.itertuples():
    t = r.tier.lower().replace("-", "_")
    metrics[f"ttft_p75_{r.policy}_{t}"] = None if np.isnan(r.ttft_p75) else r.ttft_p75
    metrics[f"queue_wait_p75_{r.policy}_{t}"] = None if np.isnan(r.queue_wait_p75) else r.queue_wait_p75
    if r.tier == "NIW":
        metrics[f"ttft_p75_from_release_{r.policy}_niw"] = None if np.isnan(r.ttft_p75_from_release) else r.ttft_p75_from_release
        metrics[f"finished_pct_{r.policy}_niw"] = 100.0 * r.finished / r.requests if r.requests else None
    else:
        metrics[f"violation_pct_{r.policy}_{t}"] = None if np.isnan(r.violation_pct) else r.violation_pct
    if r.tier == "IW-N":
        metrics[f"violation_pct_60s_{r.policy}_iw_n"] = r.violation_pct_60s
        metrics[f"instance_hours_{r.policy}"] = r.instance_hours  # billed, the run's whole fleet


def val(kind, p, t):
    return metrics[f"{kind}_{p}_{t}"]


if {"fcfs", "edf", "pf", "dpa"} <= set(policies):
    four = ["fcfs", "edf", "pf", "dpa"]
    # the paper's qualitative statements (J §7.2.6), as booleans on our numbers
    metrics["pf_lowest_iw_f_ttft"] = all(val("ttft_p75", "pf", "iw_f") < val("ttft_p75", p, "iw_f") for p in four if p != "pf")
    metrics["pf_highest_iw_n_ttft"] = all(val("ttft_p75", "pf", "iw_n") > val("ttft_p75", p, "iw_n") for p in four if p != "pf")
    metrics["pf_lowest_iw_f_violations"] = all(val("violation_pct", "pf", "iw_f") < val("violation_pct", p, "iw_f") for p in four if p != "pf")
    metrics["pf_highest_iw_n_violations"] = all(val("violation_pct", "pf", "iw_n") > val("violation_pct", p, "iw_n") for p in four if p != "pf")
    metrics["edf_trades_iw_n_for_iw_f"] = bool(val("ttft_p75", "edf", "iw_f") < val("ttft_p75", "fcfs", "iw_f")
                                               and val("ttft_p75", "edf", "iw_n") > val("ttft_p75", "fcfs", "iw_n"))
    metrics["fcfs_ttft_iw_f_over_iw_n"] = val("ttft_p75", "fcfs", "iw_f") / val("ttft_p75", "fcfs", "iw_n")
    # the claims' null: FCFS (no tier-aware order) in the place of the policy a statement is about,
    # the same expression with that policy's numbers replaced by FCFS's
    rest = [p for p in four if p not in ("pf", "fcfs")]
    metrics["fcfs_null_lowest_iw_f_ttft"] = all(val("ttft_p75", "fcfs", "iw_f") < val("ttft_p75", p, "iw_f") for p in rest)
    metrics["fcfs_null_highest_iw_n_ttft"] = all(val("ttft_p75", "fcfs", "iw_n") > val("ttft_p75", p, "iw_n") for p in rest)
    metrics["fcfs_null_lowest_iw_f_violations"] = all(
        val("violation_pct", "fcfs", "iw_f") < val("violation_pct", p, "iw_f") for p in rest)
    metrics["fcfs_null_highest_iw_n_violations"] = all(
        val("violation_pct", "fcfs", "iw_n") > val("violation_pct", p, "iw_n") for p in rest)
    metrics["fcfs_null_trades_iw_n_for_iw_f"] = bool(val("ttft_p75", "fcfs", "iw_f") < val("ttft_p75", "fcfs", "iw_f")
                                                     and val("ttft_p75", "fcfs", "iw_n") > val("ttft_p75", "fcfs", "iw_n"))
    metrics["fcfs_violations_iw_f_minus_iw_n"] = val("violation_pct", "fcfs", "iw_f") - val("violation_pct", "fcfs", "iw_n")
s0 = setup[policies[0]]
metrics.update(strategy=s0["strategy"], engine_policy=s0.get("engine_policy"), reading=s0["reading"],
               max_instances=s0.get("max_instances"), iw_f_sla_s=iwf_sla, iw_n_sla_s=s0.get("iwn_sla_s"),
               dpa_tau_n_s=setup["dpa"]["dpa_tau_n_s"] if "dpa" in setup else None,
               dpa_tau_p_s=setup["dpa"]["dpa_tau_p_s"] if "dpa" in setup else None,
               iw_f_prefill_floor_pct=floor_pct,
               window_h=[s0.get("preset_from_h"), s0.get("preset_to_h")], preset=s0.get("preset"),
               policies_differ=bool(data[data["policy"].isin(policies)].groupby("tier")["ttft_p75"].nunique().max() > 1))
metrics

# %%
out = FigureOutputs("sageserve", "fig15_tier_policies", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
