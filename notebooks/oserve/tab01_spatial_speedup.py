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
# # OServe — Table 1: speedup vs spatial heterogeneity (§6.3)
#
# Llama2-70B on 16 GPUs, OServe vs vLLM static on the spatial levels (runs `levels/spatial-<level>`,
# quick: OPT-30B on 8 GPUs, the extreme levels, 2-min spans; a level without a run is NaN). Speedup = P99(static) / P99(OServe) over the level's requests.
# At paper scale the online runs' named readings also run on every level, OServe alone on the
# level's workload against the level run's vLLM static: `uniform` (Alg. 1 from the best homogeneous
# deployment), `balanced` (each type spread by capacity among the flow's optimal assignments),
# `xnode` (the latency-aware objective) and `restarts` (Alg. 1 from three seeds per span, the plan
# best on the objective kept); their bars stand beside OServe's.
#
# | level | paper speedup |
# |---|---|
# | S1..S5 (CV 0.112..0.688) | 1.14, 1.41, 1.89, 2.15, 2.66x |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis import oserve_online as OO
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
LEVELS = ["S1", "S2", "S3", "S4", "S5"]
# with the claims' null (workflow/claims/oserve.yaml): vLLM static in OServe's place (for one fixed mix the best homogeneous deployment, so its speedup is 1 by definition)
# and the named readings uniform / balanced / xnode / restarts (runs `levels/spatial-<level>-<reading>`, paper scale)
sysdf, metrics = OO.level_metrics("spatial", LEVELS, scale, root, null="static")
pd.Series(metrics)

# %%
fig, ax = plt.subplots(figsize=(4.8, 3.0))
OO.plot_level_speedups(ax, metrics, LEVELS)
fig.tight_layout()
fig

# %%
out = FigureOutputs("oserve", "tab01_spatial_speedup", scale=scale, root=root)
out.save_figure(fig)
out.write_data(sysdf if not sysdf.empty else pd.DataFrame({"trace": []}))
out.write_metrics(metrics)
pd.Series(metrics)
