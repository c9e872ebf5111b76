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
# # SageServe Fig 16b — Llama-2 IW latency over the week in 3-h bins, per strategy
#
# Journal Fig 16b (conference Fig 17): 56 3-h bins, Reactive / LT-I / LT-U / LT-UA; top panel
# labelled "95%ile TTFT" (0–20 s) is the median in the authors' code, bottom P95 E2E (0–200 s).
# Claims: Reactive is worst; LT-U ≈ LT-UA on weekdays, diverging at the start of the weekend.
#
# Ours (the runs `runs_week/<strategy>` (workflow/runs/sageserve.yaml)): the synthetic O365 week (day 0 = Monday), paper reading,
# ORCA instances, NIW in the queue manager. Quick scale simulates Llama-2 in East US from
# Thursday 12:00 to Sunday 00:00 at 1/5 of the volume (a short window, not the week); full scale
# the 4 models × 3 regions over the week, of which the figure shows Llama-2. Top panel: median TTFT (the code's statistic); bottom: P95 E2E.
# "Weekdays" = bins before Saturday 00:00; "weekend start" = the bins of Saturday 00:00–12:00.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
strategies = ["reactive", "lt_i", "lt_u", "lt_ua"]
bin_h = 3.0
model = "llama-2-70b"  # the figure's model (IW requests, every region of the run)

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dirs

apply_style()
base = run_dirs("sageserve", "runs_week", scale, root)  # run name -> its folder (workflow/runs/sageserve.yaml)
rows, summ = [], {}
for s in strategies:
    summ[s] = json.loads((base[s] / "summary.json").read_text())
    r = pd.read_parquet(base[s] / "requests.parquet", columns=["model", "tier", "state", "arrival_s", "ttft_s", "e2e_s"])
    r = r[(r["model"].astype(str) == model) & (r["tier"] != "NIW") & (r["state"] == "finished")]
    hour = r["arrival_s"] / 3600.0 + summ[s]["preset_from_h"]  # hours since Monday 00:00
    b = (hour // bin_h) * bin_h
    for start, g in r.groupby(b):
        rows.append({"strategy": s, "bin_start_h": float(start), "n": len(g),
                     "ttft_median": float(np.median(g["ttft_s"])), "ttft_p95": float(np.percentile(g["ttft_s"], 95)),
                     "e2e_p95": float(np.percentile(g["e2e_s"], 95)), "instance_hours_run": summ[s]["instance_hours"]["billed"]})
data = pd.DataFrame(rows)
data.pivot(index="bin_start_h", columns="strategy", values="ttft_median")

# %%
names = {"reactive": "Reactive", "lt_i": "LT-I", "lt_u": "LT-U", "lt_ua": "LT-UA"}
fig, axes = plt.subplots(2, 1, figsize=(6.4, 4.0), sharex=True)
for s, g in data.groupby("strategy", sort=False):
    axes[0].step(g["bin_start_h"], g["ttft_median"], where="post", label=names[s])
    axes[1].step(g["bin_start_h"], g["e2e_p95"], where="post", label=names[s])
axes[0].set_ylabel("median TTFT (s)")
axes[1].set_ylabel("P95 E2E (s)")
axes[1].set_xlabel("hours since Monday 00:00")
for d in range(1, 8):
    for ax in axes:
        ax.axvline(24 * d, color="0.85", lw=0.5)
axes[0].legend(fontsize=7, ncol=4)

# %%
piv = data.pivot(index="bin_start_h", columns="strategy", values="ttft_median")
mean_ttft = piv.mean()
weekdays = piv[piv.index < 120.0]
weekend_start = piv[(piv.index >= 120.0) & (piv.index < 132.0)]


def rel_gap(t, x="lt_u", y="lt_ua"):
    if not len(t) or x not in t or y not in t:
        return None
    a, b = t[x], t[y]
    return float((abs(a - b) / ((a + b) / 2)).mean())


metrics = {f"ttft_median_mean_{s}": float(mean_ttft[s]) for s in strategies}
metrics["reactive_worst_ttft"] = bool(mean_ttft.idxmax() == "reactive")
metrics["ttft_rel_gap_lt_u_lt_ua_weekdays"] = rel_gap(weekdays)
metrics["ttft_rel_gap_lt_u_lt_ua_weekend_start"] = rel_gap(weekend_start)
# the claims' null: LT-I (no utilisation-aware scaling, no forecast-gap branch) in LT-UA's place
metrics["ttft_rel_gap_lt_u_lt_i_weekdays"] = rel_gap(weekdays, "lt_u", "lt_i")
metrics["ttft_rel_gap_lt_u_lt_i_weekend_start"] = rel_gap(weekend_start, "lt_u", "lt_i")
metrics.update({f"instance_hours_{s}": summ[s]["instance_hours"]["billed"] for s in strategies})
metrics["preset"] = summ[strategies[0]]["preset"]
metrics["model"] = model
# LT-UA's own scaling steps: its >=5x / <=0.5x branches (actor_log.csv rows of kind lt_ua)
ua = pd.read_csv(base["lt_ua"] / "actor_log.csv")
ua = ua[ua["kind"] == "lt_ua"]
metrics["lt_ua_branch_steps_up"] = int((ua["step"] > 0).sum()) if len(ua) else 0
metrics["lt_ua_branch_steps_down"] = int((ua["step"] < 0).sum()) if len(ua) else 0
metrics

# %%
out = FigureOutputs("sageserve", "fig16b_week_latency", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
