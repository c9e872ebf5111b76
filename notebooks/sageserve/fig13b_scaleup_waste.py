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
# # SageServe Fig 13b — instance-hours wasted on scale-ups
#
# Journal Fig 13b / conference Fig 15 (trace day 0): stacked bars of instance-hours wasted while
# instances start (spot → Llama2, other model → Llama2, ...); the text: ~**70 %** less waste with
# the long-term strategies (80 % in the abstracts). The authors do not simulate the delays: they
# charge 2.5 min per own-spot reclaim and 10 min per conversion after the fact.
#
# Ours: the runs of the runs `runs/<strategy>` (workflow/runs/sageserve.yaml), where provisioning lead times are simulated (reclaim
# from the region's pool 1 min, a fresh VM 1 min + 10 min model load, `SageServeConfig`). Waste
# = instance-hours spent in the requested / provisioning / loading / converting states, i.e. billed
# but not serving. `converting` is an inter-model conversion (a pooled VM holding another model's
# weights redeploys: 10 min), the paper's "Other>model" bars; the other states are own-model pool
# reclaims and fresh VMs ("Spot>model"). The figure's models (Llama-2 and Bloom) in every region of the run; full scale
# runs the peak day (trace day 1), not day 0.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
strategies = ["reactive", "lt_i", "lt_u", "lt_ua"]
waste_states = ["requested", "provisioning", "loading", "converting"]
models = ["llama-2-70b", "bloom-176b"]  # the figure's models

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dirs

apply_style()
base = run_dirs("sageserve", "runs", scale, root)  # run name -> its folder (workflow/runs/sageserve.yaml)
rows = []
for s in strategies:
    h = pd.read_parquet(base[s] / "instance_hours.parquet")
    h = h[h["model"].astype(str).isin(models)]
    lc = pd.read_parquet(base[s] / "lifecycle.parquet")
    lc = lc[lc["model"].astype(str).isin(models)]
    for m in [m for m in models if (h["model"] == m).any()]:  # the figure's models this run simulates
        w = h[(h["model"] == m) & h["state"].isin(waste_states)].groupby("state")["hours"].sum()
        ups = lc[(lc["model"] == m) & lc["to_state"].isin(waste_states) & ~lc["from_state"].isin(waste_states)]
        rows.append({"strategy": s, "model": m, **{st: float(w.get(st, 0.0)) for st in waste_states},
                     "waste_instance_hours": float(w.sum()), "scale_up_events": int(len(ups)),
                     "conversions": int((ups["to_state"] == "converting").sum()),
                     "from_pool": int(((ups["from_state"] == "pooled") & (ups["to_state"] != "converting")).sum()),
                     "fresh": int((ups["from_state"] != "pooled").sum())})
data = pd.DataFrame(rows)
data

# %%
fig, ax = plt.subplots()
bars = data.assign(label=data["strategy"] + " " + data["model"])
left = pd.Series(0.0, index=bars.index)
for st in waste_states:
    ax.barh(bars["label"], bars[st], left=left, label=st)
    left += bars[st]
ax.set_xlabel("instance-hours wasted on scale-ups")
ax.legend()

# %%
w = data.groupby("strategy")["waste_instance_hours"].sum()
metrics = {f"waste_instance_hours_{s}": float(w[s]) for s in strategies}  # summed over the figure's models
for r in data.itertuples():
    metrics[f"waste_instance_hours_{r.strategy}_{r.model.replace('-', '_').replace('.', '_')}"] = r.waste_instance_hours
metrics["models"] = ",".join(models)
# the claims' null: a static fleet sized for the peak (servesim.systems.sageserve.nulls) never scales
# up, so no instance of it enters a waste state: it wastes nothing on scale-ups
metrics["waste_instance_hours_static_peak"] = 0.0
metrics["waste_reduction_pct_static_peak"] = 100.0 if w["reactive"] > 0 else None
for s in strategies:
    if s != "reactive":
        metrics[f"waste_reduction_pct_{s}"] = float(100 * (1 - w[s] / w["reactive"])) if w["reactive"] > 0 else None
metrics

# %%
out = FigureOutputs("sageserve", "fig13b_scaleup_waste", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
