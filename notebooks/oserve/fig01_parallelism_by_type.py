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
# %% [markdown]
# # OServe — Fig 1: parallelism strategy x workload type (§1)
#
# "The optimal model deployment configuration varies significantly across workload types.
# Compute-intensive workloads with short outputs benefit from data parallelism, whereas
# memory-intensive workloads with long outputs favor model parallelism." The paper's Fig 1 has no
# data in the text; we regenerate it: every homogeneous deployment of 8 GPUs (DP x TP x PP) serves
# each of two types subsampled from the Azure 2023 pool (split at the median output length: short
# output = SISO + LISO, long output = SILO + LILO) in the simulator (run `fig01/*` of
# workflow/runs/oserve.yaml). Two readings of "performance": the saturation throughput, and the P99
# end-to-end latency when every deployment of a type serves the same requests at 60 % of that type's
# best throughput.

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import runs as runs_api
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
(run,) = runs_api.select("oserve", "fig01/*", scale, root)
d = runs_api.run_dir("oserve", run.name, scale, root)
pts = pd.read_csv(d / "points.csv")
summ = json.loads((d / "summary.json").read_text())
pts

# %%
types = list(dict.fromkeys(pts["type"]))
fig, axes = plt.subplots(2, len(types), figsize=(5.2 * len(types), 5.6), squeeze=False)
for c, t in enumerate(types):
    g = pts[pts["type"] == t]
    x = np.arange(len(g))
    colors = [f"C{min(int(np.log2(dp)), 9)}" for dp in g.dp]
    axes[0][c].bar(x, g.throughput_rps, color=colors)
    axes[0][c].set_title(f"{t} ({summ['model']}, {summ['gpus']} GPUs)", fontsize=9)
    axes[0][c].set_ylabel("saturation throughput (req/s)")
    axes[1][c].bar(x, g.p99_e2e_s, color=colors)
    axes[1][c].set_ylabel(f"P99 e2e (s) at {g.rate_rps.iloc[0]:.1f} req/s")
    axes[1][c].set_yscale("log")
    for ax in (axes[0][c], axes[1][c]):
        ax.set_xticks(x, g.config, rotation=60, fontsize=7)
fig.tight_layout()
fig

# %%
def best_of(t, reading):
    b = summ["best"].get(t, {}).get(reading)
    return b or {}


so, lo = "short-output", "long-output"
metrics = {"model": summ["model"], "gpus": int(summ["gpus"])}
for reading, tag in (("by_throughput", "throughput"), ("by_p99", "p99")):
    for t, short in ((so, "short_output"), (lo, "long_output")):
        b = best_of(t, reading)
        metrics[f"best_config_{short}_{tag}"] = b.get("config")
        metrics[f"best_dp_{short}_{tag}"] = float(b["dp"]) if b else float("nan")
        metrics[f"best_replica_gpus_{short}_{tag}"] = float(b["tp"] * b["pp"]) if b else float("nan")
    a, b = best_of(so, reading), best_of(lo, reading)
    metrics[f"best_config_differs_{tag}"] = bool(a and b and a["config"] != b["config"])


def ratio(t, num, den):
    g = pts[pts["type"] == t].set_index("config")
    return float(g.throughput_rps.get(num, np.nan) / g.throughput_rps.get(den, np.nan)) if den in g.index and num in g.index else float("nan")


# the two ends that use whole-node replicas in Fig 1's spirit: the most DP among the replicas that
# hold a full-size KV pool (DP2·TP4) vs one TP8 replica
metrics["dp2tp4_over_tp8_throughput_short_output"] = ratio(so, "DP2·TP4", "DP1·TP8")
metrics["dp2tp4_over_tp8_throughput_long_output"] = ratio(lo, "DP2·TP4", "DP1·TP8")
out = FigureOutputs("oserve", "fig01_parallelism_by_type", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pts)
out.write_metrics(metrics)
pd.Series(metrics)
