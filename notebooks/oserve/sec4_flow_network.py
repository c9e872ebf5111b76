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
# # OServe — the flow network of §4.2 and the initial deployment of §4.3
#
# - **LCM example (§4.2, C3):** a replica that serves 80 type-1 or 50 type-2 requests per span gets
#   node capacity M = lcm(80, 50) and per-request costs M/n (paper: M = 400, costs 5 and 8),
#   computed by `servesim.systems.oserve.lcm_capacity` / `unit_costs`, the functions the flow
#   network builder uses.
# - **A small flow network solved:** C1–C3 as a linear program (PuLP + HiGHS) on a 2-type ×
#   3-replica instance (its capacities are ours, listed in the parameters), with the saturated set
#   O and the under-used set U that drive Alg. 1.
# - **Initialization (§4.3):** the fewest GPUs that hold Llama-2-70B's weights (catalog size, H100
#   80 GB), pure TP, so 16 GPUs make 16 / that replicas (paper: 140 GB → 2 GPUs → 8 × TP=2).
# - **Termination (§4.3):** the search patience of the OServe config (paper: 20 iterations).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
demo_lam = [90, 60]                              # demand per type in one span (our instance)
demo_n = [[80, 50], [40, 30], [40, 30]]          # replicas' per-type capacities (the first is the paper's 80/50)

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.comparison import comparison
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware, get_model
from servesim.systems.oserve import OServeConfig, lcm_capacity, max_flow, min_gpus_per_replica, paper_inputs, unit_costs

apply_style()
cfg = OServeConfig.paper()
ex = paper_inputs()["flow_network_example"]
M = lcm_capacity(ex["n"])
costs = unit_costs(ex["n"])
print(f"n = {ex['n']}: M = {M}, unit costs {costs}")

flow = max_flow(demo_lam, demo_n)
print(f"demand {demo_lam}: Phi = {flow.phi:g}; O (saturated) = {flow.saturated}, U = {flow.underused}")
assign = pd.DataFrame(flow.x, columns=[f"type{j + 1}" for j in range(len(demo_lam))])
assign.insert(0, "replica", range(1, len(demo_n) + 1))
assign["M_k"] = [lcm_capacity(r) for r in demo_n]
assign["units_used"] = [sum(x * c for x, c in zip(flow.x[k], unit_costs(demo_n[k]))) for k in range(len(demo_n))]
assign["load"] = flow.load
assign

# %%
init = paper_inputs()["init_example"]
mspec, hw = get_model(init["model"]), get_hardware(init["gpu"])
gpus = min_gpus_per_replica(mspec.param_bytes, hw.mem_bytes, mspec.heads)
n_rep = init["n_gpus"] // gpus
print(f"{mspec.key}: {mspec.param_bytes / 1e9:.0f} GB on {hw.mem_bytes / 2**30:.0f} GiB GPUs -> {gpus} per replica, "
      f"{n_rep} x TP={gpus} on {init['n_gpus']} GPUs")

# %%
fig, ax = plt.subplots(figsize=(5.0, 3.0))
bottom = np.zeros(len(demo_n))
for j in range(len(demo_lam)):
    ax.bar(assign.replica, flow.x[:, j], bottom=bottom, label=f"type {j + 1} (demand {demo_lam[j]})")
    bottom += flow.x[:, j]
for k, r in assign.iterrows():
    ax.text(r.replica, bottom[k], f"load {r.load:.2f}", ha="center", va="bottom", fontsize=7)
ax.set_xlabel("replica")
ax.set_ylabel("requests assigned per span")
ax.set_xticks(assign.replica)
ax.set_title(f"flow-network LP: Φ = {flow.phi:g} of {sum(demo_lam)} requests", fontsize=9)
ax.legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours

# %%
p, pi = ex["paper"], init["paper"]
table = comparison([
    {"quantity": "search patience (iterations)", "metric": "search_patience", "paper": 20, "ours": cfg.search_patience, "how": "config"},
    {"quantity": "LCM capacity for n = (80, 50)", "metric": "lcm_example_capacity", "paper": p["capacity"], "ours": M, "how": "lcm"},
    {"quantity": "type-1 cost (units)", "metric": "lcm_example_cost_type1", "paper": p["cost"][0], "ours": costs[0], "how": "M / n_1"},
    {"quantity": "type-2 cost (units)", "metric": "lcm_example_cost_type2", "paper": p["cost"][1], "ours": costs[1], "how": "M / n_2"},
    {"quantity": "Llama-2-70B weights (GB)", "metric": "llama2_70b_weights_gb", "paper": pi["weights_gb"],
     "ours": mspec.param_bytes / 1e9, "how": "catalog"},
    {"quantity": "initial GPUs per replica", "metric": "init_gpus_per_replica_llama2_70b", "paper": pi["gpus_per_replica"],
     "ours": gpus, "how": "fewest TP GPUs holding the weights"},
    {"quantity": "initial replicas on 16 GPUs", "metric": "init_n_replicas_llama2_70b_16gpus", "paper": pi["n_replicas"],
     "ours": n_rep, "how": "16 / GPUs per replica"},
])
table

# %%
metrics = {r.metric: float(r.ours) for r in table.itertuples()}
metrics["flow_demo_phi"] = flow.phi
out = FigureOutputs("oserve", "sec4_flow_network", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.concat([table.assign(kind="claim"), assign.assign(kind="flow_demo")], ignore_index=True))
out.write_metrics(metrics)
pd.Series(metrics)
