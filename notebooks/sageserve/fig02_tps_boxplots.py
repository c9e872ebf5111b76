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
# # SageServe — instance throughput (TPS) of Llama2-70B and Bloom-176B on A100 vs H100
#
# SageServe journal §2.1 (text) and conference Fig 2: a boxplot of the tokens per second one
# 8-GPU instance serves, whiskers at the 5th and 95th percentiles. The numbers come from
# SageServe's public Splitwise profile table `perf_model.csv` (times in milliseconds): the rows
# with batch size 1 and tensor parallelism 8, one per (prompt size, output size) pair and
# repetition, with
#
# $$\mathrm{TPS} = \frac{\text{prompt\_size} + \text{token\_size}}{\text{e2e\_time} / 1000}.$$
#
# The paper (J §2.1) states Q1–Q3 of **68–293** (Llama2, A100), **95–522** (Llama2, H100),
# **50–177** (Bloom, A100) and **82–397** (Bloom, H100) TPS.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders (this figure is the same at both)
root = None         # project root; None finds it from the working directory
seed = 0            # unused: the figure is pure data
batch_size = 1
tensor_parallel = 8
models = ["llama2-70b", "bloom-176b"]
hardware = ["a100-80gb", "h100-80gb"]   # "h100-80gb-pcap" (power-capped) rows have the same e2e_time, so the same TPS

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.tps import instance_tps, load_perf_model, tps_metrics, tps_summary
from servesim.data import locate

apply_style()
perf = load_perf_model(locate("sageserve/perf_model.csv"))
tps = instance_tps(perf, batch_size=batch_size, tensor_parallel=tensor_parallel)
tps = tps[tps["model"].isin(models) & tps["hardware"].isin(hardware)].reset_index(drop=True)
summary = tps_summary(tps)
summary

# %% [markdown]
# ## The boxplot
# Boxes span Q1–Q3 with the median line; whiskers reach the 5th and 95th percentiles (numpy's
# linear interpolation, as matplotlib's boxplot uses); points beyond them are drawn as fliers.

# %%
fig, ax = plt.subplots(figsize=(4.2, 3.2))
colors = {"a100-80gb": "tab:blue", "h100-80gb": "tab:orange"}
width = 0.35
for j, hw in enumerate(hardware):
    data = [tps.loc[(tps["model"] == m) & (tps["hardware"] == hw), "tps"].to_numpy() for m in models]
    pos = np.arange(len(models)) + (j - (len(hardware) - 1) / 2) * width
    bp = ax.boxplot(data, positions=pos, widths=width * 0.85, whis=(5, 95), patch_artist=True,
                    flierprops={"markersize": 2.5}, medianprops={"color": "black"})
    for box in bp["boxes"]:
        box.set_facecolor(colors.get(hw, "0.7"))
ax.set_xticks(np.arange(len(models)))
ax.set_xticklabels({"llama2-70b": "Llama2-70B", "bloom-176b": "Bloom-176B"}.get(m, m) for m in models)
ax.set_ylabel("TPS per 8-GPU instance")
ax.set_ylim(bottom=0)
ax.legend(handles=[Patch(facecolor=colors.get(hw, "0.7"), edgecolor="black", label=hw.split("-")[0].upper()) for hw in hardware],
          loc="upper left")
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours
# The paper's Q1–Q3 ranges are its CSV's values truncated to integers; our values below come from
# the same CSV with the stated formula.

# %%
metrics = tps_metrics(summary)
paper_q1_q3 = {("llama2-70b", "a100-80gb"): "68–293", ("llama2-70b", "h100-80gb"): "95–522",
               ("bloom-176b", "a100-80gb"): "50–177", ("bloom-176b", "h100-80gb"): "82–397"}
compare = summary.assign(paper_q1_q3=[paper_q1_q3.get((m, h), "") for m, h in zip(summary["model"], summary["hardware"])])
compare.round(1)

# %%
out = FigureOutputs("sageserve", "fig02_tps_boxplots", scale=scale, root=root)
out.save_figure(fig)
out.write_data(tps[["model", "hardware", "batch_size", "tensor_parallel", "prompt_size", "token_size", "e2e_time", "tps"]])
out.write_metrics(metrics)
metrics
