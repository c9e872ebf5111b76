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
# # SageServe Fig 12a — instance-hours per region, per strategy
#
# Journal Fig 12a: bars per strategy per region (y 0–200); Chiron's bars are clipped and labelled
# 403 / 381.25 / 371.75 (their sum ≈ Fig 11's Chiron 1146, so the figure is Llama-2 per region).
# Ours: the runs of the runs `runs/<strategy>` (workflow/runs/sageserve.yaml) (see Fig 11's notebook), the figure's model per region;
# billed states are `servesim.metrics.BILLED_STATES` (every state but pooled and stopped); Chiron's three pools
# (interactive, mixed, batch) are summed.
#
# Instance-hours in the **authors'** reading (their `plotting_scripts/Figures9-10.py`, Figure 10,
# the per-region bars): per region, at every 2-s tick the model's billed instances (all pools), each
# 15-min bin's maximum, summed ÷ 4; the ticks are rebuilt exactly from the run's transition log
# (`servesim.metrics.billed_events`), the timeseries being sampled every 10 s. Beside it
# (`instance_hours_<reading>_<s>_<region>`): **sum_of_region_maxima** (within one region the same
# rule on the 10-s samples; this notebook's reading before issue 30) and the **exact** billed integral.

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
from servesim.metrics import IH_READINGS, billed_events, billed_instance_hours, instance_hours_readings
from servesim.systems.sageserve.nulls import held_fleet
from servesim.systems.sageserve.strategies import base_model

apply_style()
base = run_dirs("sageserve", "runs", scale, root)  # run name -> its folder (workflow/runs/sageserve.yaml)
ih = []
held = []  # the claims' null fleets per region (servesim.systems.sageserve.nulls)
for s in strategies:
    h = pd.read_parquet(base[s] / "instance_hours.parquet")
    h = h[base_model(h["model"]) == model]  # Siloed / Chiron pools: m@niw, m@int
    ts = pd.read_parquet(base[s] / "timeseries.parquet")
    ts = ts[base_model(ts["model"]) == model].assign(model=model)  # pools summed per sample
    ev = billed_events(pd.read_parquet(base[s] / "lifecycle.parquet"))
    ev = ev[base_model(ev["model"]) == model].assign(model=model)
    for r, hg in h.groupby("region", observed=True):
        # the authors' instance-hours of the region, the other readings beside it
        both = instance_hours_readings(hg, ts[ts["region"] == r], ev[ev["region"] == r])
        ih.append({"region": str(r), "strategy": s, "hours": both["authors"],
                   **{f"hours_{k}": both[k] for k in IH_READINGS if k != "authors"}})
        # a static fleet sized for Reactive's peak (in an LT strategy's place); Chiron's starting pools
        # held without its scaling (in Chiron's place), through the same instance-hour code and reading
        for name, of, level in (("static_peak", "reactive", "peak"), ("chiron_start_pools", "chiron", "start")):
            if s == of:
                held.append({"region": str(r), "null": name,
                             "hours": billed_instance_hours(None, held_fleet(ts[ts["region"] == r], level), "authors")})
ih = pd.DataFrame(ih)
table = ih.pivot(index="region", columns="strategy", values="hours")[strategies]
tables = {k: ih.pivot(index="region", columns="strategy", values=f"hours_{k}")[strategies]
          for k in IH_READINGS if k != "authors"}
table_exact = tables["exact"]
table

# %%
fig, ax = plt.subplots()
table.plot.bar(ax=ax)
ax.set(ylabel="instance-hours", xlabel="")

# %%
metrics = {"model": model}
for r in ("westus", "centralus", "eastus"):
    for s in strategies:
        metrics[f"instance_hours_{s}_{r}"] = float(table.loc[r, s]) if r in table.index else None
        for k, tab in tables.items():
            metrics[f"instance_hours_{k}_{s}_{r}"] = float(tab.loc[r, s]) if r in table.index else None
lts = [s for s in ("lt_i", "lt_u", "lt_ua") if s in strategies]
metrics["lt_below_reactive_all_regions"] = bool(all(table.loc[r, s] < table.loc[r, "reactive"] for r in table.index for s in lts))
others = [s for s in strategies if s != "chiron"]
metrics["chiron_most_instance_hours_all_regions"] = (
    bool(all(table.loc[r, "chiron"] > table.loc[r, others].max() for r in table.index)) if "chiron" in strategies else None)
metrics["chiron_most_instance_hours_exact_all_regions"] = (
    bool(all(table_exact.loc[r, "chiron"] > table_exact.loc[r, others].max() for r in table.index))
    if "chiron" in strategies else None)
# the nulls of claims 05f and 05e: the same statements with the null fleet in the strategy's place
nulls = pd.DataFrame(held).pivot(index="region", columns="null", values="hours") if held else pd.DataFrame()
for name in nulls.columns:
    for r in nulls.index:
        metrics[f"instance_hours_{name}_{r}"] = float(nulls.loc[r, name])
if "static_peak" in nulls:
    metrics["static_peak_below_reactive_all_regions"] = bool(
        all(nulls.loc[r, "static_peak"] < table.loc[r, "reactive"] for r in table.index))
if "chiron_start_pools" in nulls:
    metrics["chiron_start_pools_most_instance_hours_all_regions"] = bool(
        all(nulls.loc[r, "chiron_start_pools"] > table.loc[r, others].max() for r in table.index))
metrics["instance_hours_reading"] = "authors"
metrics["regions"] = ",".join(table.index)
metrics

# %%
out = FigureOutputs("sageserve", "fig12a_instance_hours_region", scale=scale, root=root)
out.save_figure(fig)
out.write_data(ih)
out.write_metrics(metrics)
