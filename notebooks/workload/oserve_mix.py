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
# # Workload — OServe type-mix workloads: Table 1/2 compositions and drifting traces
#
# OServe (§5.1, §6) classifies requests into four types by (input, output) length — SILO, LILO,
# SISO, LISO — and evaluates on workloads whose type composition differs in space (Table 1,
# levels S1–S5, indexed by the CV of the four proportions) and in time (Table 2, levels T1–T4:
# three consecutive spans, indexed by the per-type CV across spans, averaged), plus two traces
# (T1: 80 min, T2: 50 min) with six spans P1–P6. Its traces derive from Azure 2024 / WildChat and
# are not public; `servesim.workload.gen_oserve` rebuilds them from the Azure 2023 code +
# conversation requests: types by a median split (`method="quadrant"`, default) or k-means,
# exact per-level proportions, Poisson arrivals. The request type is written to `app`.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
rate_rps = 5.0      # mean arrival rate of every generated workload
span_minutes = 10   # Table 2 span length (not given by the paper; spec [R] 10 min)
method = "quadrant" # type classifier: quadrant | kmeans

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.workload import gen_oserve as O

apply_style()
pool = O.type_pool(method, seed)
pool_share = np.bincount(pool["type"], minlength=4) / len(pool)
rows, m = [], {}
for level, cv in O.SPATIAL_CV.items():
    got = O.level_cvs(O.spatial(level, rate_rps, span_minutes, seed, pool=pool))["spatial_cv"]
    rows.append((level, "spatial", cv, got)); m[f"spatial_cv_{level.lower()}"] = got
for level, cv in O.TEMPORAL_CV.items():
    got = O.level_cvs(O.temporal(level, rate_rps, span_minutes, seed, pool=pool))["temporal_cv"]
    rows.append((level, "temporal", cv, got)); m[f"temporal_cv_{level.lower()}"] = got
table = pd.DataFrame(rows, columns=["level", "kind", "paper_cv", "produced_cv"])
table["abs_diff"] = (table["produced_cv"] - table["paper_cv"]).abs()
for j, t in enumerate(O.TYPES):
    m[f"pool_share_{t.lower()}"] = float(pool_share[j])
table

# %% [markdown]
# ## The drifting traces
# T1 drifts from short-output-heavy (S5-like; DP-favouring per §6.2) at P1 to the mirror
# composition (long-output heavy; TP-favouring) at P6; T2 goes balanced → long-output →
# short-output → balanced. The per-minute arrival rate follows the Azure 2023 combined trace.

# %%
fig, axes = plt.subplots(1, 2, figsize=(8.0, 2.8), sharey=True)
for ax, name in zip(axes, ("T1", "T2")):
    d = O.trace(name, rate_rps, seed, pool=pool)
    minutes = int(np.ceil(d["arrival_s"].max() / 60))
    comp = O.composition(d, np.arange(minutes + 1) * 60.0)
    ax.stackplot(np.arange(minutes), comp.T, labels=O.TYPES)
    spans = d.attrs["spans_s"]
    pcomp = O.composition(d, [s[0] for s in spans] + [spans[-1][1]])
    so = pcomp[:, 2] + pcomp[:, 3]
    m[f"trace_{name.lower()}_short_output_share_p1"] = float(so[0])
    m[f"trace_{name.lower()}_short_output_share_p6"] = float(so[-1])
    m[f"trace_{name.lower()}_requests"] = float(len(d))
    for a, _ in spans[1:]:
        ax.axvline(a / 60, color="k", lw=0.6)
    ax.set_title(f"trace {name}")
    ax.set_xlabel("minute")
axes[0].set_ylabel("type share")
axes[1].legend(loc="upper right", fontsize=7)
fig.tight_layout()

# %%
out = FigureOutputs("workload", "oserve_mix", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(m)
m
