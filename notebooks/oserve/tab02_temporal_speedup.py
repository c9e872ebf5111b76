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
# # OServe — Table 2: speedup vs temporal heterogeneity (§6.3)
#
# Llama2-70B on 16 GPUs, OServe vs vLLM static on the temporal levels (runs `levels/temporal-<level>`,
# quick: OPT-30B on 8 GPUs, the extreme levels, 2-min spans; a level without a run is NaN). Speedup = P99(static) / P99(OServe) over the level's requests.
# At paper scale the online runs' named readings also run on every level, OServe alone on the
# level's workload against the level run's vLLM static: `uniform` (Alg. 1 from the best homogeneous
# deployment), `balanced` (each type spread by capacity among the flow's optimal assignments),
# `xnode` (the latency-aware objective) and `restarts` (Alg. 1 from three seeds per span, the plan
# best on the objective kept); their bars stand beside OServe's.
#
# | level | paper speedup |
# |---|---|
# | T1..T4 (CV 0.052..0.348) | 1.23, 1.48, 1.82, 1.98x |

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
LEVELS = ["T1", "T2", "T3", "T4"]
# with the claims' null (workflow/claims/oserve.yaml): vLLM reload (the best homogeneous deployment per span) in OServe's place
# and the named readings uniform / balanced / xnode / restarts (runs `levels/temporal-<level>-<reading>`, paper scale)
sysdf, metrics = OO.level_metrics("temporal", LEVELS, scale, root, null="reload")
pd.Series(metrics)

# %%
fig, ax = plt.subplots(figsize=(4.8, 3.0))
OO.plot_level_speedups(ax, metrics, LEVELS)
fig.tight_layout()
fig

# %%
out = FigureOutputs("oserve", "tab02_temporal_speedup", scale=scale, root=root)
out.save_figure(fig)
out.write_data(sysdf if not sysdf.empty else pd.DataFrame({"trace": []}))
out.write_metrics(metrics)
pd.Series(metrics)
