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

# %% [markdown]
# # OServe — spatial heterogeneity levels S1–S5 (Table 1, CV column)
#
# OServe §6.3 builds five workload compositions S1–S5 of its four request types (SILO, LILO,
# SISO, LISO: short/long input/output) and indexes their skew by the coefficient of variation of
# the four type proportions. The table states each level's proportions (%) and CV, and the
# speedup of OServe over vLLM (static) on Llama2-70B with 16 GPUs (1.14× at CV 0.112 up to 2.66×
# at CV 0.688).
#
# Here we recompute the CV column from the stated proportions (population standard deviation
# over the mean). The proportions and the paper's values are read from the package's
# `servesim/workload/data/oserve_levels.yaml` (with the paper location), not typed in here. The
# speedup column needs the OServe simulation (notebook `oserve/tab01_spatial_speedup`).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders (this table is the same at both)
root = None         # project root; None finds it from the working directory
seed = 0            # unused: pure arithmetic
levels_file = None  # None: the packaged oserve_levels.yaml

# %%
import matplotlib.pyplot as plt
import numpy as np

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.workload_cv import load_oserve_levels, spatial_cv_table

apply_style()
levels = load_oserve_levels(levels_file)
table = spatial_cv_table(levels)
table.assign(diff=table["cv"] - table["paper_cv"]).round({"cv": 4, "diff": 4})

# %% [markdown]
# ## The levels
# Each bar is one level's composition; the label gives the paper's CV and ours (3 decimals, as
# the paper prints them).

# %%
fig, ax = plt.subplots(figsize=(6.0, 2.8))
left = np.zeros(len(table))
for k, ty in enumerate(levels.types):
    ax.barh(table["level"], table[ty], left=left, color=f"C{k}", label=ty)
    left += table[ty].to_numpy()
for i, r in table.iterrows():
    ax.text(101, i, f"paper {r['paper_cv']:.3f} | ours {r['cv']:.3f}", va="center", fontsize=7)
ax.set_xlim(0, 140)
ax.set_xlabel("share of requests (%)")
ax.invert_yaxis()
ax.legend(ncol=4, loc="upper center", bbox_to_anchor=(0.4, 1.18), fontsize=7)
fig.tight_layout()

# %%
metrics = {f"cv_{lv.lower()}": float(cv) for lv, cv in zip(table["level"], table["cv"])}
out = FigureOutputs("oserve", "tab01_spatial_cv", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
metrics
