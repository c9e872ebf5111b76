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
# # OServe — temporal heterogeneity levels T1–T4 (Table 2, CV column)
#
# OServe §6.3 builds four traces T1–T4, each three consecutive time spans whose compositions are
# spatial levels (e.g. T4 = S1→S4→S5), and indexes how much the composition shifts by "the
# average per-type CV across consecutive time spans": for each of the four request types, the
# population CV of its proportion over the three spans, averaged over the types. The paper states
# CVs 0.052 / 0.172 / 0.263 / 0.348 with average speedups over vLLM (static) of 1.23× to 1.98×.
#
# We recompute the CV column from the stated S-level proportions (read from the packaged
# `servesim/workload/data/oserve_levels.yaml`). The speedups need the OServe simulation
# (notebook `oserve/tab02_temporal_speedup`).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders (this table is the same at both)
root = None         # project root; None finds it from the working directory
seed = 0            # unused: pure arithmetic
levels_file = None  # None: the packaged oserve_levels.yaml

# %%
import matplotlib.pyplot as plt

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.workload_cv import load_oserve_levels, temporal_cv_table

apply_style()
levels = load_oserve_levels(levels_file)
table = temporal_cv_table(levels)
table.assign(diff=table["cv"] - table["paper_cv"]).round({"cv": 4, "diff": 4})

# %% [markdown]
# ## The traces
# One panel per trace: each type's share in the three spans; titles give the paper's CV and ours.

# %%
prop = levels.spatial[levels.types]
fig, axes = plt.subplots(1, len(table), figsize=(7.0, 2.4), sharey=True)
for ax, (lv, spans), r in zip(axes, levels.temporal["spans"].items(), table.itertuples()):
    for k, ty in enumerate(levels.types):
        ax.plot(range(len(spans)), prop.loc[spans, ty].to_numpy(), "o-", color=f"C{k}", ms=3, label=ty)
    ax.set_xticks(range(len(spans)))
    ax.set_xticklabels(spans)
    ax.set_title(f"{lv}: paper {r.paper_cv:.3f} | ours {r.cv:.3f}", fontsize=8)
axes[0].set_ylabel("share of requests (%)")
axes[0].legend(fontsize=6, loc="upper left")
fig.tight_layout()

# %%
metrics = {f"cv_{lv.lower()}": float(cv) for lv, cv in zip(table["level"], table["cv"])}
out = FigureOutputs("oserve", "tab02_temporal_cv", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
metrics
