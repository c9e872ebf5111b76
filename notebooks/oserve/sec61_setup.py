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
# # OServe — evaluation setup (§5.2, §6.1)
#
# The OServe config (`servesim.systems.oserve.OServeConfig.paper()`) against the stated testbed:
# 4 servers × 8 H100-80GB (32 GPUs), NVLink 400 GB/s inside a server, InfiniBand 200 GB/s between
# servers, and KV buffers pre-allocated with +10–20 % headroom at a switch (our default 15 %).
# The switch planner's cost model uses the stated link speeds; the hardware catalog's H100 SXM5
# NVLink figure (450 GB/s per direction) is printed beside them.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import pandas as pd

from servesim.analysis.comparison import comparison, table_figure
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware
from servesim.systems.oserve import OServeConfig

apply_style()
cfg = OServeConfig.paper()
hw = get_hardware(cfg.gpu)
print(f"{hw.name}: {hw.mem_bytes / 2**30:.0f} GiB, catalog NVLink {hw.interconnect_bw / 1e9:.0f} GB/s per direction")
table = comparison([
    {"quantity": "NVLink (GB/s)", "metric": "nvlink_gbps", "paper": 400, "ours": cfg.nvlink_bytes_per_s / 1e9,
     "how": f"config (catalog {hw.interconnect_bw / 1e9:.0f})"},
    {"quantity": "InfiniBand (GB/s)", "metric": "ib_gbps", "paper": 200, "ours": cfg.ib_bytes_per_s / 1e9, "how": "config"},
    {"quantity": "KV headroom at a switch", "metric": "kv_headroom_frac", "paper": "0.1-0.2", "ours": cfg.kv_headroom_frac,
     "how": "config (our choice in the range)"},
    {"quantity": "GPUs", "metric": "total_gpus", "paper": 32, "ours": cfg.total_gpus, "how": f"{cfg.nodes} x {cfg.gpus_per_node}"},
])
fig = table_figure(table, "OServe evaluation setup")
table

# %%
metrics = {r.metric: float(r.ours) for r in table.itertuples()}
metrics["catalog_nvlink_gbps"] = hw.interconnect_bw / 1e9
out = FigureOutputs("oserve", "sec61_setup", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
pd.Series(metrics)
