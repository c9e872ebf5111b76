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
# # PreServe — memory arithmetic of §1–§2 and §3.2.1
#
# - LLaMA-3-8B: "64 batched requests at 8K length need up to 64 GB of KV cache; the parameters take
#   15 GB; an H100 has 80 GB". KV bytes per token and the parameter bytes come from the model
#   catalog (32 layers × 2 × 8 KV heads × 128 × 2 B = 128 KiB per token), the GPU memory from the
#   hardware catalog. The paper's "GB" are GiB (8.03e9 × 2 B = 16.06 GB = 14.96 GiB).
# - DeepSeek-R1: "671B parameters, 720 GB, cold start of tens to hundreds of seconds". DeepSeek-R1
#   is not in our catalog: its size is 671e9 parameters × 1 B (FP8 weights), stated in the inputs
#   file. The cold start is the checkpoint read at an **assumed** storage bandwidth (the paper gives
#   none): 5 GB/s for the metric, 1.25 and 25 GB/s beside it.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
storage_bw_index = 1   # which of the assumed storage bandwidths the metric uses (0: 1.25, 1: 5, 2: 25 GB/s)

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.comparison import comparison
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware, get_model
from servesim.systems.preserve import paper_inputs

apply_style()
mx = paper_inputs()["memory_examples"]
l3 = mx["llama3_8b"]
m = get_model(l3["model"])
kv_gib = m.kv_bytes_per_token() * l3["max_len"] * l3["batch"] / 2**30
w_gib = m.param_bytes / 2**30
h100_gib = get_hardware(mx["h100"]["gpu"]).mem_bytes / 2**30
ds = mx["deepseek_r1"]
ckpt_gb = ds["params"] * ds["bytes_per_param"] / 1e9
loads = pd.DataFrame({"storage_gbps": [b / 1e9 for b in ds["storage_bytes_per_s"]],
                      "load_s": [ds["params"] * ds["bytes_per_param"] / b for b in ds["storage_bytes_per_s"]]})
load_s = float(loads.load_s[storage_bw_index])
print(f"LLaMA-3-8B: {m.kv_bytes_per_token() / 1024:.0f} KiB/token -> {kv_gib:.1f} GiB for {l3['batch']} x {l3['max_len']}; "
      f"weights {w_gib:.2f} GiB; KV + weights = {kv_gib + w_gib:.1f} GiB vs H100 {h100_gib:.0f} GiB")
print(f"DeepSeek-R1: {ckpt_gb:.0f} GB; load time at the assumed bandwidths:\n{loads.to_string(index=False)}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(7.0, 2.8))
axes[0].bar(["KV (64 x 8K)", "weights", "H100"], [kv_gib, w_gib, h100_gib], color=["tab:blue", "tab:orange", "0.6"])
axes[0].set_ylabel("GiB")
axes[0].set_title("LLaMA-3-8B on one H100", fontsize=9)
axes[1].bar([f"{g:g} GB/s" for g in loads.storage_gbps], loads.load_s, color="tab:green")
axes[1].axhspan(10, 1000, color="0.9", zorder=0, label="tens to hundreds of s")
axes[1].set_yscale("log")
axes[1].set_ylabel("checkpoint read (s)")
axes[1].set_title(f"DeepSeek-R1, {ckpt_gb:.0f} GB (assumed bandwidths)", fontsize=9)
axes[1].legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours

# %%
table = comparison([
    {"quantity": "LLaMA-3-8B KV, 64 x 8K (GiB)", "metric": "llama3_8b_kv_gib_64x8k", "paper": l3["paper_kv_gb"], "ours": kv_gib, "how": "catalog"},
    {"quantity": "LLaMA-3-8B weights (GiB)", "metric": "llama3_8b_weights_gib", "paper": l3["paper_weights_gb"], "ours": w_gib, "how": "catalog"},
    {"quantity": "H100 memory (GiB)", "metric": "h100_mem_gb", "paper": mx["h100"]["paper_mem_gb"], "ours": h100_gib, "how": "catalog"},
    {"quantity": "DeepSeek-R1 checkpoint (GB)", "metric": "deepseek_r1_checkpoint_gb", "paper": ds["paper_checkpoint_gb"], "ours": ckpt_gb,
     "how": "671e9 x 1 B (FP8)"},
    {"quantity": "DeepSeek-R1 cold start (s)", "metric": "deepseek_r1_load_s", "paper": ds["paper_cold_start"], "ours": load_s,
     "how": f"at an assumed {loads.storage_gbps[storage_bw_index]:g} GB/s"},
])
table

# %%
metrics = {r.metric: float(r.ours) for r in table.itertuples()}
out = FigureOutputs("preserve", "sec2_memory_arithmetic", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.concat([table.assign(kind="claim"), loads.assign(kind="deepseek_load")], ignore_index=True))
out.write_metrics(metrics)
pd.Series(metrics)
