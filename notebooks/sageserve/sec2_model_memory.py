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
# # SageServe §2 — model sizes vs GPU memory
#
# Journal §2: Llama2-70B is ≈ 140 GB in FP16; "GPT-3 may need 9 H100s, Llama-3 needs 4". We
# compute weights from the model catalog (GPT-3 is not in the catalog: its public 175e9
# parameters are a parameter of this notebook) and the minimum number of 80 GB H100s that hold
# the weights alone; the paper's counts include room for KV cache and activations.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
gpt3_params = 175e9
models = ["llama-2-70b", "llama-3-70b", "bloom-176b", "llama-2-7b"]

# %%
import math

import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware, get_model

apply_style()
gpu_gb = get_hardware("h100-80gb").mem_bytes / 1e9
rows = [{"model": k, "weights_gb": get_model(k).param_bytes / 1e9} for k in models]
rows.append({"model": "gpt-3 (175B, fp16)", "weights_gb": gpt3_params * 2 / 1e9})
table = pd.DataFrame(rows)
table["min_h100_for_weights"] = [math.ceil(w / gpu_gb) for w in table["weights_gb"]]
metrics = {
    "llama2_70b_weights_gb": float(table.loc[table.model == "llama-2-70b", "weights_gb"].iloc[0]),
    "gpt3_min_h100_for_weights": int(table["min_h100_for_weights"].iloc[-1]),
    "llama3_70b_min_h100_for_weights": int(table.loc[table.model == "llama-3-70b", "min_h100_for_weights"].iloc[0]),
    "h100_mem_gb": gpu_gb,
}
table

# %%
fig, ax = plt.subplots()
ax.barh(table["model"], table["weights_gb"])
for k in range(1, 6):
    ax.axvline(k * gpu_gb, color="0.7", lw=0.8, ls="--")
ax.set_xlabel("weights (GB); dashed: multiples of one H100's memory")

# %%
out = FigureOutputs("sageserve", "sec2_model_memory", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
