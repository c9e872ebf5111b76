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
# # Aegaeon — KV-cache shape and size per token (Table 1)
#
# Aegaeon §5.2, Table 1: the shape of one token's KV cache in vLLM, (layers, 2, KV heads,
# head dim), and its size in 16-bit precision. The shapes differ across models, which is why
# Aegaeon's unified CPU KV cache uses a slab allocator per shape. The paper lists
#
# | Model | Shape | Size |
# |---|---|---|
# | Qwen-7B | (32,2,32,128) | 512 KB |
# | InternLM2.5-7B-chat | (32,2,8,128) | 128 KB |
# | LLaMA-13B | (40,2,40,128) | 800 KB |
# | Qwen-72B | (80,2,64,128) | 2560 KB |
#
# (KB = 1024 bytes.) We compute the same from the model catalog (`servesim.catalog`, numbers from
# each model's Hugging Face `config.json`): bytes = 2 (K and V) × layers × KV heads × head dim ×
# 2 bytes. Below the table's models we add the models of Aegaeon's evaluation (§7.1) and, per GPU
# under tensor parallelism (Qwen2.5-72B runs on 4 GPUs), the share per token, the size of one
# 16-token vLLM block and how many blocks fit a 1 GiB slab.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders (this table is the same at both)
root = None         # project root; None finds it from the working directory
seed = 0            # unused: pure arithmetic
table_models = ["qwen-7b", "internlm2.5-7b-chat", "llama-13b", "qwen-72b"]
eval_models = ["qwen2.5-7b", "yi-1.5-6b", "yi-1.5-9b", "llama-2-13b", "qwen2.5-72b"]
dtype_bytes = 2
block_tokens = 16
slab_bytes = 1073741824          # 1 GiB
tp = {"qwen2.5-72b": 4}          # tensor parallelism of the 72B eval model

# %%
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch

from servesim.analysis.kv_cache import kv_cache_table, metric_name
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
table = pd.concat([
    kv_cache_table(table_models, dtype_bytes=dtype_bytes, block_tokens=block_tokens, slab_bytes=slab_bytes, tp=tp).assign(group="Table 1"),
    kv_cache_table(eval_models, dtype_bytes=dtype_bytes, block_tokens=block_tokens, slab_bytes=slab_bytes, tp=tp).assign(group="evaluation"),
], ignore_index=True)
# The paper's Table 1 column, for comparison only.
paper_kib = {"qwen-7b": 512, "internlm2.5-7b-chat": 128, "llama-13b": 800, "qwen-72b": 2560}
paper_shape = {"qwen-7b": "(32,2,32,128)", "internlm2.5-7b-chat": "(32,2,8,128)", "llama-13b": "(40,2,40,128)",
               "qwen-72b": "(80,2,64,128)"}
table["paper_kib_per_token"] = table["model"].map(paper_kib)
table["paper_shape"] = table["model"].map(paper_shape)
table[["group", "model", "shape", "paper_shape", "kib_per_token", "paper_kib_per_token", "tp",
       "kib_per_token_per_gpu", "block_mib_per_gpu", "blocks_per_slab_per_gpu"]]

# %% [markdown]
# ## The sizes
# KiB per token per model (log scale); hollow markers are the paper's Table 1 values.

# %%
fig, ax = plt.subplots(figsize=(6.0, 3.0))
colors = table["group"].map({"Table 1": "tab:blue", "evaluation": "tab:gray"})
ax.bar(table["model"], table["kib_per_token"], color=colors)
has_paper = table["paper_kib_per_token"].notna()
ax.plot(table.loc[has_paper, "model"], table.loc[has_paper, "paper_kib_per_token"], "o", mfc="none",
        mec="black", label="paper (Table 1)")
for x, v in zip(table["model"], table["kib_per_token"]):
    ax.text(x, v * 1.08, f"{v:g}", ha="center", fontsize=7)
ax.set_yscale("log")
ax.set_ylabel("KV cache per token (KiB, 16-bit)")
ax.tick_params(axis="x", rotation=35, labelsize=7)
handles = [Patch(color="tab:blue", label="Table 1 models"), Patch(color="tab:gray", label="evaluation models"),
           *ax.get_legend_handles_labels()[0]]
ax.legend(handles=handles, loc="upper right", fontsize=7)
fig.tight_layout()

# %%
metrics = {metric_name(k): float(v) for k, v in zip(table["model"], table["kib_per_token"]) if k in table_models}
out = FigureOutputs("aegaeon", "tab01_kv_cache", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
metrics
