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
# # SageServe Fig 5 — IW and NIW load per region (Nov'24)
#
# J Fig 5: for West, Central and East, the RPS (solid) and input+output TPS (dashed) of IW and
# NIW traffic over the Nov'24 week, 4-hour bins. The paper reads: no timezone phase shift
# between regions (requests are routed across US regions), East carries the most load, NIW is
# flat and West's NIW is negligible. Region shares of IW in the authors' replayed trace:
# East 42.6 %, Central 29.5 %, West 27.9 % (spec sageserve §5).
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
from servesim.workload.gen_sageserve import REGIONS

apply_style()
week = sageserve_week(scale=gen_scale, seed=seed, growth=growth)
m = {k: v for k, v in S.region_metrics(week, gen_scale * growth).items() if not k.startswith(("model_", "niw_model"))}
iw = week["tier"] != "NIW"
peak_hours = []
for region in REGIONS:
    h = S.hourly(week[iw & (week["region"] == region)]).reshape(7, 24)[:5]
    peak_hours.append(np.bincount(h.argmax(1)).argmax())
m["iw_peak_hour_spread_across_regions_h"] = float(np.ptp(peak_hours))
pd.Series(m).round(3)

# %%
fig, axes = plt.subplots(1, 3, figsize=(10.0, 2.8), sharey=True)
rows = []
for ax, region in zip(axes, REGIONS):
    ax2 = ax.twinx()
    for (label, mask), c in zip((("IW", iw), ("NIW", ~iw)), ("C0", "C3")):
        b = S.load_bins(week[mask & (week["region"] == region)], 4 * 3600.0, gen_scale)
        ax.plot(b["t_h"] + 2, b["rps"], color=c, label=label)
        ax2.plot(b["t_h"] + 2, b["tps"] / 1e3, color=c, ls="--", lw=0.8)
        rows.append(b.assign(region=region, tier=label))
    ax2.set_ylim(0, 120)
    ax.set_title(region)
    ax.set_xticks(np.arange(7) * 24 + 12)
    ax.set_xticklabels(["M", "T", "W", "Th", "F", "Sa", "Su"])
axes[0].set_ylabel("RPS (solid)")
ax2.set_ylabel("TPS ×1000 (dashed)")
axes[0].legend()
fig.tight_layout()
data = pd.concat(rows, ignore_index=True)

# %%
out = FigureOutputs("sageserve", "fig05_region_load", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(m)
m
