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
# # SageServe Fig 4 — load per tier × region, per model (Jul'25 grid)
#
# J Fig 4: rows IW-F / IW-N / NIW, columns West / Central / East; per-model (A–D) RPS over the
# week. The paper reads (J §3): IW-F periodicity 0.7–0.95 (model A), IW-N 0.6–0.8 (A) and
# 0.3–0.5 (B), NIW 0–0.286; model A in East carries 4× the IW-F load of West; model B peaks in
# Central for IW-F and in West for IW-N, and its IW-N load grows Wed–Fri; West has negligible
# NIW; NIW model C in Central has a large per-request token count (a batch evaluation app).
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
from servesim.workload.gen_sageserve import MODELS, REGIONS

apply_style()
week = sageserve_week(scale=gen_scale, seed=seed, growth=growth)
m = {**S.periodicity_metrics(week),
     **{k: v for k, v in S.region_metrics(week, gen_scale * growth).items() if k.startswith(("model_", "niw_"))}}
pd.Series(m).round(3)

# %%
fig, axes = plt.subplots(3, 3, figsize=(9.0, 6.0), sharex=True)
rows = []
for i, tier in enumerate(("IW-F", "IW-N", "NIW")):
    for j, region in enumerate(REGIONS):
        ax = axes[i, j]
        sub = week[(week["tier"] == tier) & (week["region"] == region)]
        for k, model in enumerate(MODELS):
            b = S.load_bins(sub[sub["model"] == model], 3600.0, gen_scale)
            ax.plot(b["t_h"], b["rps"], lw=0.7, color=f"C{k}", label="ABCD"[k])
            rows.append(b.assign(tier=tier, region=region, model=model))
        if i == 0:
            ax.set_title(region)
        if j == 0:
            ax.set_ylabel(f"{tier} RPS")
for ax in axes[-1]:
    ax.set_xticks(np.arange(7) * 24 + 12)
    ax.set_xticklabels(["M", "T", "W", "Th", "F", "Sa", "Su"])
axes[0, 0].legend(ncol=4, fontsize=7)
fig.tight_layout()
data = pd.concat(rows, ignore_index=True)

# %%
out = FigureOutputs("sageserve", "fig04_tier_region_grid", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(m)
m
