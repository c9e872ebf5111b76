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
# # SageServe Fig 12b — memory utilisation per region × strategy
#
# Journal Fig 12b: boxes of memory utilisation (0–1); the conference: LT-I's is higher because it
# de-allocates immediately. Ours: the endpoint's mean KV-cache use over its ready instances per
# sample from the runs of the runs `runs/<strategy>` (workflow/runs/sageserve.yaml) (the authors take the max over instances per 2-s
# sample, then the mean per 15 min); boxes 5–95. The figure's model (Llama-2, as Figs 11 / 12a)
# per region; Chiron's three pools are combined per sample, weighted by their ready instances.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
strategies = ["reactive", "lt_i", "lt_u", "lt_ua", "chiron"]
model = "llama-2-70b"  # the figure's model

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dirs
from servesim.systems.sageserve.strategies import base_model

apply_style()
base = run_dirs("sageserve", "runs", scale, root)  # run name -> its folder (workflow/runs/sageserve.yaml)
util = []
for s in strategies:
    ts = pd.read_parquet(base[s] / "timeseries.parquet", columns=["time_s", "model", "region", "n_ready", "kv_util"])
    ts = ts[(base_model(ts["model"]) == model) & (ts["n_ready"] > 0)]
    # one value per (sample, region): pools of one model (Chiron) weighted by ready instances
    ts = ts.assign(w=ts["kv_util"] * ts["n_ready"]).groupby(["time_s", "region"], as_index=False)[["w", "n_ready"]].sum()
    util.append(ts.assign(kv_util=ts["w"] / ts["n_ready"], strategy=s)[["time_s", "region", "n_ready", "kv_util", "strategy"]])
util = pd.concat(util, ignore_index=True)
summary = util.groupby(["strategy", "region"], as_index=False)["kv_util"].describe(percentiles=[0.05, 0.25, 0.5, 0.75, 0.95])
summary

# %%
fig, ax = plt.subplots()
regions = sorted(util["region"].unique())
data = [util.loc[(util.strategy == s) & (util.region == r), "kv_util"] for r in regions for s in strategies]
ax.boxplot(data, whis=(5, 95), showfliers=False)
ax.set_xticks(range(1, len(data) + 1), [f"{s}\n{r}" for r in regions for s in strategies], fontsize=6)
ax.set(ylabel="KV memory utilisation", ylim=(0, 1))

# %%
metrics = {f"mem_util_median_{s}": float(util.loc[util.strategy == s, "kv_util"].median()) for s in strategies}
for r in regions:
    for s in strategies:
        metrics[f"mem_util_median_{s}_{r}"] = float(util.loc[(util.strategy == s) & (util.region == r), "kv_util"].median())
metrics["model"] = model
metrics

# %%
out = FigureOutputs("sageserve", "fig12b_memory_util", scale=scale, root=root)
out.save_figure(fig)
out.write_data(summary)
out.write_metrics(metrics)
