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
# # OServe — Fig 9: workload type ratios over the traces (§6.1)
#
# T1 (80 min) and T2 (50 min) as `gen_oserve.trace` builds them from the Azure 2023 code +
# conversation length pools (types by k-means on (input, output) length): per-minute type shares,
# with the six spans P1-P6 marked. T1 drifts from short-output-heavy (P1, DP-favouring) to
# long-output-heavy (P6); T2 goes balanced -> long-output -> short-output.

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

rate_rps = 5.0      # the shares do not depend on it

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.oserve.predictor import span_counts
from servesim.workload import gen_oserve as G

apply_style()
pool = G.type_pool("kmeans", seed)
rows, fig = [], plt.figure(figsize=(8.0, 3.0))
axes = fig.subplots(1, 2)
for ax, name in zip(axes, ("T1", "T2")):
    wl = G.trace(name, rate_rps=rate_rps, seed=seed, pool=pool)
    c = span_counts(wl, G.TYPES, 60.0, G.TRACE_MINUTES[name])
    share = c / np.maximum(c.sum(1, keepdims=True), 1)
    ax.stackplot(np.arange(len(c)), share.T, labels=G.TYPES)
    for a, b in wl.attrs["spans_s"]:
        ax.axvline(a / 60.0, color="k", lw=0.5)
    for i, (a, b) in enumerate(wl.attrs["spans_s"]):
        ax.text((a + b) / 120.0, 1.02, f"P{i + 1}", ha="center", fontsize=7)
    ax.set_title(f"trace {name}", fontsize=9, pad=12)
    ax.set_xlabel("minute")
    rows += [{"trace": name, "minute": m, **{t: share[m, j] for j, t in enumerate(G.TYPES)}} for m in range(len(c))]
axes[0].set_ylabel("type share")
axes[1].legend(fontsize=7, loc="lower right")
fig.tight_layout()
fig

# %%
data = pd.DataFrame(rows)
metrics = {
    "t1_minutes": G.TRACE_MINUTES["T1"],
    "t2_minutes": G.TRACE_MINUTES["T2"],
    "n_spans": len(wl.attrs["spans_s"]),
    "azure_input_len_max": int(pool.prompt_tokens.max()),
    "azure_output_len_max": int(pool.output_tokens.max()),
    **{f"t1_p1_share_{t.lower()}": float(data[(data.trace == "T1") & (data.minute < 80 / 6)][t].mean()) for t in G.TYPES},
    **{f"t1_p6_share_{t.lower()}": float(data[(data.trace == "T1") & (data.minute >= 80 * 5 / 6)][t].mean()) for t in G.TYPES},
}
out = FigureOutputs("oserve", "fig09_type_ratios", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
pd.Series(metrics)
