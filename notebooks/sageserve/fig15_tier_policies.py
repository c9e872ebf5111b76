# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
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
# Not in the authors' code; the strategy, τ_n, τ_p and the SLA thresholds used are not given.
#
# Ours (rule `sageserve_tier_run`): SageServe LT-UA on the run preset of this scale (quick:
# Llama-2, East US, 12:00–16:00 of the synthetic peak day), paper reading, NIW held in the queue
# manager (released at < 60 % / < 50 % utilisation). The policy orders each instance's waiting
# queue before every iteration (`servesim.systems.sageserve.niw_loop.tier_key`): FCFS = arrival
# (NIW behind IW until its 10-h bump); EDF = TTFT deadline; PF = IW-F, IW-N, NIW; DPA with
# τ_n = 10 s and τ_p = 1 s (our choice). SLA violation = TTFT above the tier's deadline of the
# workload (IW-F 1 s, IW-N 60 s) or not finished; NIW TTFT counts from arrival (queue wait included).
# The paper's violation rates (IW-N 25 % at a 5.6-s Q3 TTFT) cannot come from a 60-s IW-N SLA,
# so its thresholds differ from ours: compare orderings, not levels.
#
# Mechanism check: in the paper's instance (ORCA batching, KV reserved at admission, no token cap)
# every waiting request that fits in KV joins the next iteration, so the queue order only matters
# while KV memory is full. Our scaled fleet rarely fills KV (the scalers act at 70 % utilisation),
# so the four policies can come out identical; the `data.csv` rows show whether they did here.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
policies = ["fcfs", "edf", "pf", "dpa"]

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style, project_root

apply_style()
base = (Path(root) if root else project_root()) / "results" / scale / "sageserve" / "runs_tier"
rows = []
setup = {}
for p in policies:
    r = pd.read_parquet(base / p / "requests.parquet",
                        columns=["tier", "state", "arrival_s", "ttft_s", "deadline_s", "first_token_s"])
    setup[p] = json.loads((base / p / "summary.json").read_text())
    for tier in ("IW-F", "IW-N", "NIW"):
        g = r[r["tier"] == tier]
        fin = g[g["state"] == "finished"]
        met = (g["state"] == "finished") & (g["first_token_s"] <= g["deadline_s"])
        rows.append({"policy": p, "tier": tier, "requests": len(g), "finished": len(fin),
                     "ttft_p75": float(np.percentile(fin["ttft_s"], 75)) if len(fin) else np.nan,
                     "ttft_p50": float(np.percentile(fin["ttft_s"], 50)) if len(fin) else np.nan,
                     "violation_pct": 100.0 * (1.0 - met.mean()) if len(g) and tier != "NIW" else np.nan,
                     "instance_hours": setup[p]["instance_hours"], "strategy": setup[p]["strategy"],
                     "reading": setup[p]["reading"]})
data = pd.DataFrame(rows)
data

# %%
names = {"fcfs": "FCFS", "edf": "EDF", "pf": "PF", "dpa": "DPA"}
fig, axes = plt.subplots(1, 2, figsize=(6.4, 2.8))
x = np.arange(len(policies))
for ax, col, tiers in ((axes[0], "ttft_p75", ("IW-F", "IW-N", "NIW")), (axes[1], "violation_pct", ("IW-F", "IW-N"))):
    w = 0.8 / len(tiers)
    for k, tier in enumerate(tiers):
        v = data[data["tier"] == tier].set_index("policy").loc[policies, col]
        ax.bar(x + (k - (len(tiers) - 1) / 2) * w, v, w, label=tier)
    ax.set_xticks(x, [names[p] for p in policies])
axes[0].set_ylabel("75%ile TTFT (s)")
axes[1].set_ylabel("SLA violations (%)")
axes[0].legend(fontsize=7)
fig.tight_layout()

# %%
metrics = {}
for r in data.itertuples():
    t = r.tier.lower().replace("-", "_")
    metrics[f"ttft_p75_{r.policy}_{t}"] = None if np.isnan(r.ttft_p75) else r.ttft_p75
    if r.tier != "NIW":
        metrics[f"violation_pct_{r.policy}_{t}"] = None if np.isnan(r.violation_pct) else r.violation_pct
metrics["strategy"] = setup[policies[0]]["strategy"]
metrics["engine_policy"] = setup[policies[0]].get("engine_policy")
metrics["policies_differ"] = bool(data.groupby("tier")["ttft_p75"].nunique().max() > 1)
metrics["reading"] = setup[policies[0]]["reading"]
metrics

# %%
out = FigureOutputs("sageserve", "fig15_tier_policies", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
