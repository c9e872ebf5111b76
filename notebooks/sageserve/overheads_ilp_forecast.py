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
# # SageServe §5 / §6.3 — control-plane overheads: ILP solve time and ARIMA fit time
#
# Journal §5: "the average solver runtime with l = 4, r = 3 and g = 1 was 1.41 s; with l and r
# = 20 and g = 5 it rises to 33 s"; §6.3 / App. B: ARIMA takes ≈ 0.7 s per run.
#
# We time our ILP (`servesim.systems.sageserve.ilp`, PuLP on CBC and HiGHS, one thread) on random
# feasible instances of both sizes, and statsmodels ARIMA(3,1,2) fits on 60-minute windows of the
# synthetic O365 week. Wall-clock times depend on the machine and solver; the claims check only
# the order of magnitude. At quick scale the 20/20/5 size is skipped (its solves hit the limit).

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
sizes = ["4x3x1"]          # full: ["4x3x1", "20x20x5"]
n_seeds = 3
time_limit_s = 60.0
solvers = ["cbc", "highs"]
arima_fits = 10            # ARIMA fits on consecutive hourly 60-min windows
workload_scale = 0.2

# %%
import statistics
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.forecast import Arima
from servesim.forecast.series import per_minute_demand
from servesim.systems.sageserve.ilp import random_problem, solve
from servesim.workload import sageserve_week

warnings.simplefilter("ignore", DeprecationWarning)
apply_style()
rows = []
for size in sizes:
    l, r, g = (int(v) for v in size.split("x"))
    for s in range(n_seeds):
        p = random_problem(l, r, g, seed=seed * 1000 + s)
        lb = solve(p, relax=True).objective
        for solver in solvers:
            res = solve(p, solver=solver, time_limit_s=time_limit_s)
            rows.append({"kind": "ilp", "size": size, "seed": s, "solver": solver, "seconds": res.solve_time_s,
                         "objective": res.objective, "lp_bound": lb, "hit_limit": res.solve_time_s >= 0.99 * time_limit_s})
df = per_minute_demand(sageserve_week(scale=workload_scale, seed=seed, days=1), "llama-2-70b", "eastus", t_end=86400.0)
for k in range(arima_fits):
    t = 60 * (k + 1)
    f = Arima().fit(df[t - 60:t])
    rows.append({"kind": "arima", "size": "w60", "seed": k, "solver": "statsmodels", "seconds": f.train_time_s})
table = pd.DataFrame(rows)
table

# %%
metrics = {"time_limit_s": time_limit_s, "ilp_runtime_s_l4_r3_g1": None, "ilp_runtime_s_l20_r20_g5": None}
for (size, solver), g in table[table.kind == "ilp"].groupby(["size", "solver"]):
    key = "l{}_r{}_g{}".format(*size.split("x"))
    metrics[f"ilp_runtime_s_{key}_{solver}"] = float(g["seconds"].mean())
    metrics[f"ilp_hit_limit_{key}_{solver}"] = int(g["hit_limit"].sum())
    if solver == "cbc":  # the authors' solver
        metrics[f"ilp_runtime_s_{key}"] = float(g["seconds"].mean())
metrics["arima_fit_s"] = float(table.loc[table.kind == "arima", "seconds"].mean())
metrics

# %%
fig, ax = plt.subplots()
labels, vals = [], []
for (size, solver), g in table[table.kind == "ilp"].groupby(["size", "solver"]):
    labels.append(f"ILP {size}\n{solver}")
    vals.append(g["seconds"].to_numpy())
labels.append("ARIMA fit\n60 min")
vals.append(table.loc[table.kind == "arima", "seconds"].to_numpy())
ax.boxplot(vals, whis=(5, 95), showfliers=False)
ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
ax.set_yscale("log")
ax.set_ylabel("seconds")
paper = {"ILP 4x3x1": 1.41, "ILP 20x20x5": 33.0, "ARIMA fit": 0.7}
for i, lab in enumerate(labels, 1):
    for k, v in paper.items():
        if lab.startswith(k):
            ax.plot(i, v, "r*", ms=9, label="paper" if i == 1 else None)
ax.legend()

# %%
out = FigureOutputs("sageserve", "overheads_ilp_forecast", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
