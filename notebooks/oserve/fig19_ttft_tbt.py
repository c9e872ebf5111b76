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
# # OServe — Fig 19: P99 TTFT and TBT vs vLLM (reload) (App. I)
#
# From the latency runs: TTFT includes any wait for a replica that a switch is bringing up; TBT is
# the paper's "average time per generated token" per request. Gain = P99(reload) / P99(OServe) per
# (model, trace).
#
# | quantity | paper |
# |---|---|
# | P99 TTFT vs reload | 1.1-1.6x |
# | P99 TBT vs reload | 1.5-1.6x |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import oserve_online as OO
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
sysdf = OO.load("online/*/*/latency", "systems.csv", scale, root)
ttft = OO.paired(sysdf, "ttft_p99_s", "reload", "oserve")
tbt = OO.paired(sysdf, "tbt_p99_s", "reload", "oserve")
# the claims' null: vLLM static in OServe's place (does the naive deployment also beat vLLM reload?)
ttft_n = OO.paired(sysdf, "ttft_p99_s", "reload", "static")
tbt_n = OO.paired(sysdf, "tbt_p99_s", "reload", "static")
pd.DataFrame({"p99_ttft_gain": ttft, "p99_tbt_gain": tbt})

# %%
fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.0))
if not sysdf.empty:
    for ax, v, lab in ((axes[0], "ttft_p99_s", "P99 TTFT (s)"), (axes[1], "tbt_p99_s", "P99 TBT (s/token)")):
        p = sysdf[sysdf.system.isin(["oserve", "reload"])].pivot_table(index=["model", "trace"], columns="system", values=v)
        x = np.arange(len(p))
        for i, s in enumerate(p.columns):
            ax.bar(x + (i - 0.5) * 0.4, p[s], 0.4, label=s)
        ax.set_xticks(x, [f"{m}\n{t}" for m, t in p.index], fontsize=7)
        ax.set_ylabel(lab)
    axes[0].legend(fontsize=7)
fig.tight_layout()
fig

# %%
metrics = {
    "p99_ttft_gain_vs_reload_min": OO.stat(ttft, "min"),
    "p99_ttft_gain_vs_reload_max": OO.stat(ttft, "max"),
    "p99_tbt_gain_vs_reload_min": OO.stat(tbt, "min"),
    "p99_tbt_gain_vs_reload_max": OO.stat(tbt, "max"),
    "n_cases": len(ttft),
    "p99_ttft_gain_static_vs_reload_min": OO.stat(ttft_n, "min"),
    "p99_ttft_gain_static_vs_reload_max": OO.stat(ttft_n, "max"),
    "p99_tbt_gain_static_vs_reload_min": OO.stat(tbt_n, "min"),
    "p99_tbt_gain_static_vs_reload_max": OO.stat(tbt_n, "max"),
}
out = FigureOutputs("oserve", "fig19_ttft_tbt", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.DataFrame({"p99_ttft_gain": ttft, "p99_tbt_gain": tbt}).reset_index())
out.write_metrics(metrics)
pd.Series(metrics)
