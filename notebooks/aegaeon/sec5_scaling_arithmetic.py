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
# # Aegaeon — auto-scaling arithmetic (§1, §2.3, §4.2, §5.1, §5.3)
#
# The paper derives several numbers from model sizes and bandwidths. We recompute them from the
# model and hardware catalogs (`servesim.catalog`) and the stated measurements in
# `servesim/systems/aegaeon/data/paper_inputs.yaml` (§5.1: 26.9 s unoptimised init of a 13B model,
# 4.6 s weight load at TP = 2; §4.2: PCIe 4.0 at 32 GB/s):
# - the scale-up floor of a 13B FP16 model over PCIe 4.0: weights / 32 GB/s (paper 0.8125 s);
# - the "97 %" reduction read as a T3 switch at that floor vs the 26.9 s init (paper 97 %);
# - the per-GPU load bandwidth of the 4.6 s TP = 2 load (paper 2.83 GB/s vs 32 GB/s);
# - how many FP16 14B models fit an 80 GB GPU (paper: two). We count whole weight copies in the
#   memory left after Aegaeon's ~10 % reserve (§5.2); the raw 80 GiB / weights count is shown too.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import math

import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.comparison import comparison, table_figure
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware, get_model
from servesim.systems.aegaeon import AegaeonConfig, paper_inputs

apply_style()
cfg = AegaeonConfig.paper()
s = paper_inputs()["scaling"]
w13 = get_model(s["model_13b"]).param_bytes
floor_s = w13 / s["pcie4_bytes_per_s"]
reduction_pct = 100.0 * (1.0 - floor_s / s["init_s_13b"])
load_gbps = w13 / s["tp_13b"] / s["weight_load_s_13b_tp2"] / 1e9
w14 = get_model(s["model_14b"]).param_bytes
mem = get_hardware(s["gpu_80gb"]).mem_bytes
fit_reserved = math.floor(mem * (1.0 - cfg.vram_reserved_fraction) / w14)
fit_raw = math.floor(mem / w14)
fit_nominal = math.floor(80e9 / (14e9 * 2))
print(f"13B weights {w13 / 1e9:.2f} GB -> floor {floor_s:.4f} s; T3 reduction {reduction_pct:.2f} %; "
      f"load {load_gbps:.3f} GB/s per GPU ({100 * load_gbps / (s['pcie4_bytes_per_s'] / 1e9):.1f} % of PCIe 4.0)")
print(f"14B ({s['model_14b']}) weights {w14 / 1e9:.1f} GB on {mem / 2**30:.0f} GiB: {fit_reserved} with the 10 % reserve, "
      f"{fit_raw} weights-only with no KV cache, {fit_nominal} by the nominal 80 GB / 28 GB")

# %% [markdown]
# ## Paper vs ours

# %%
p = s["paper"]
table = comparison([
    {"quantity": "13B scale-up floor over PCIe 4.0 (s)", "metric": "scaleup_floor_s_13b_pcie4", "paper": p["floor_s"],
     "ours": floor_s, "how": f"{w13 / 1e9:.1f} GB / 32 GB/s"},
    {"quantity": "T0 -> T3 reduction at the floor (%)", "metric": "t3_reduction_pct_at_pcie_floor", "paper": p["reduction_pct"],
     "ours": reduction_pct, "how": "1 - floor / 26.9 s"},
    {"quantity": "13B TP=2 load bandwidth per GPU (GB/s)", "metric": "weight_load_gbps_per_gpu_13b_tp2", "paper": p["load_gbps"],
     "ours": load_gbps, "how": "weights / 2 / 4.6 s"},
    {"quantity": "FP16 14B models per 80 GB GPU", "metric": "fp16_14b_models_per_80gb", "paper": p["models_14b_per_gpu"],
     "ours": fit_reserved, "how": f"floor(0.9 x 80 GiB / {w14 / 1e9:.1f} GB); raw {fit_raw}"},
])
fig = table_figure(table, "Aegaeon auto-scaling arithmetic")
table

# %%
metrics = {r.metric: float(r.ours) for r in table.itertuples()}
metrics["fp16_14b_models_per_80gb_weights_only"] = float(fit_raw)
out = FigureOutputs("aegaeon", "sec5_scaling_arithmetic", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
pd.Series(metrics)
