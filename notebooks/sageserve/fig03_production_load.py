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

# %% [markdown]
# # SageServe Fig 3 — production load: RPS and TPS over a week and over the peak hour
#
# J Fig 3 (C Fig 4): requests per second (solid, left axis) and input+output tokens per second
# (dashed, right axis), summed over 4 models × 3 regions; (a) the Nov'24 week in 4-hour bins
# (IW / NIW), (b) the peak hour per minute, (c, d) the same for Jul'25 with IW-F / IW-N / NIW.
# The paper reads: one diurnal peak per weekday, quiet weekends, NIW flat; Nov'24 4-hour peaks
# of ≈25–30 RPS and ≈150–200 k TPS; IW-F + IW-N = 72 % of requests (Jul'25; 3:1 IW:NIW in Nov'24).
#
# > **NOT-REPRODUCIBLE as measured values.** The O365 production traces behind this figure were
# never published (spec sageserve §5: the authors' repository has no traces). We draw the figure on
# the synthetic week of `servesim.workload.sageserve_week` and check the *structure* the paper
# describes; the paper's exact curves cannot be reproduced.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
gen_scale = 0.02    # fraction of the 7.2 M-request synthetic week (full: 1.0)
growth = 1.0        # 1: the Nov 2024 volume; 5: the Jul 2025 level (J §3: ≈5× growth)

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.workload import sageserve_week
from servesim.workload import structure as S

apply_style()
week = sageserve_week(scale=gen_scale, seed=seed, growth=growth)
norm = gen_scale * growth  # metrics are per unit growth, comparable with the Nov'24 numbers
m = {**S.volume_metrics(week, norm),
     **{k: v for k, v in S.periodicity_metrics(week).items() if k.count("_") == 1}}
rows = []
for tier in ("IW-F", "IW-N", "NIW"):
    b = S.load_bins(week[week["tier"] == tier], 4 * 3600.0, gen_scale)
    rows.append(b.assign(tier=tier, bin="4h"))
data = pd.concat(rows, ignore_index=True)
pd.Series(m).round(3)

# %%
fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.0), gridspec_kw={"width_ratios": [2.2, 1]})
ax = axes[0]
ax2 = ax.twinx()
for (tier, g), c in zip(data.groupby("tier", sort=False), ("C0", "C1", "C2")):
    ax.plot(g["t_h"] + 2, g["rps"], color=c, label=tier)
    ax2.plot(g["t_h"] + 2, g["tps"] / 1e3, color=c, ls="--", lw=0.8)
ax.set_xticks(np.arange(7) * 24 + 12)
ax.set_xticklabels(["M", "T", "W", "Th", "F", "Sa", "Su"])
ax.set_xlabel("day of the week (4-h bins)")
ax.set_ylabel("RPS")
ax2.set_ylabel("TPS ×1000 (dashed)")
ax.legend(loc="upper right", ncol=3)
ax.set_title("(a) synthetic week")
# (b) the peak hour, per minute
a = week["arrival_s"].to_numpy()
peak_h = int(np.argmax(np.bincount((a // 3600).astype(int))))
hr = week[(a >= peak_h * 3600) & (a < (peak_h + 1) * 3600)]
t = hr["arrival_s"].to_numpy() - peak_h * 3600
ax = axes[1]
ax.plot(np.bincount((t // 60).astype(int), minlength=60) / 60 / gen_scale, color="k")
ax3 = ax.twinx()
tok = np.bincount((t // 60).astype(int), weights=(hr["prompt_tokens"] + hr["output_tokens"]).to_numpy(), minlength=60)
ax3.plot(tok / 60 / gen_scale / 1e3, color="k", ls="--", lw=0.8)
ax.set_xlabel(f"minute of the peak hour (hour {peak_h})")
ax.set_ylabel("RPS"); ax3.set_ylabel("TPS ×1000")
ax.set_title("(b) peak hour")
fig.tight_layout()

# %%
out = FigureOutputs("sageserve", "fig03_production_load", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(m)
m
