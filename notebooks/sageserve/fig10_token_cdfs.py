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
# # SageServe Fig 10 — CDFs of input and output tokens per model
#
# J Fig 10 (C Fig 10, which adds total tokens): CDFs, log x from 1 to 10⁶, one line per model.
# The paper and the authors' trace read: most prompts above 1 k tokens, most outputs below 1 k,
# mean output ≈ 222 tokens (R final_data.csv), model B p99 prompt ≈ 49 k and p99 output ≈ 2 000.
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
from servesim.workload.gen_sageserve import MODELS

apply_style()
week = sageserve_week(scale=gen_scale, seed=seed, growth=growth)
m = S.token_metrics(week)
pd.Series(m).round(1)

# %%
fig, axes = plt.subplots(1, 3, figsize=(9.0, 2.8), sharey=True)
grid = np.unique(np.round(np.logspace(0, 6, 200)).astype(int))
rows = []
for k, model in enumerate(MODELS):
    d = week[week["model"] == model]
    for ax, (col, label) in zip(axes, (("prompt_tokens", "input"), ("output_tokens", "output"), (None, "total"))):
        v = np.sort((d["prompt_tokens"] + d["output_tokens"]).to_numpy() if col is None else d[col].to_numpy())
        cdf = np.searchsorted(v, grid, side="right") / v.size
        ax.plot(grid, cdf, color=f"C{k}", label=f"{'ABCD'[k]}: {model}")
        ax.set_title(f"{label} tokens")
        rows.append(pd.DataFrame({"model": model, "kind": label, "tokens": grid, "cdf": cdf}))
for ax in axes:
    ax.set_xscale("log")
    ax.set_xlim(1, 1e6)
axes[0].set_ylabel("CDF")
axes[0].legend(fontsize=6)
fig.tight_layout()
data = pd.concat(rows, ignore_index=True)

# %%
out = FigureOutputs("sageserve", "fig10_token_cdfs", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(m)
m
