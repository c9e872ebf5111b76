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
# # OServe — Fig 15: ablation on T1's P1 and P6 (§6.3)
#
# The ladder, from the latency runs: vLLM (reload) -> + heterogeneous deployment (OServe's
# deployments, type-agnostic routing in proportion to each replica's capacity on the predicted mix)
# -> + optimal assignment (= OServe, the flow's routing). Gain = P99(reload) / P99(variant) - 1 of the
# requests arriving in T1's P1 and P6, over models; read cumulatively vs reload (the paper is
# ambiguous). The routing shares are OServe's plan in T1 P1 of OPT-66B (full scale).
#
# | quantity | paper |
# |---|---|
# | + heterogeneous | 34 % avg, 52 % max |
# | + assignment | 64 % avg, 109 % max |
# | OPT-66B T1 P1 routing | types 1-2 -> the largest replica; 88 % of type 4 -> the second; type 3 -> TP2s |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import oserve_online as OO
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
LADDER = ["reload", "hetero", "oserve"]
NULL = "static"  # the claims' null (workflow/claims/oserve.yaml): vLLM static in a rung's place
spans = OO.load("online/T1/*/latency", "spans.csv", scale, root)
plans = OO.load("online/T1/*/latency", "plans.csv", scale, root)
abl = spans[spans.period.isin(["P1", "P6"]) & spans.system.isin([*LADDER, NULL])] if not spans.empty else spans
p99 = abl.pivot_table(index=["model", "period"], columns="system", values="e2e_p99_s") if not abl.empty else pd.DataFrame()
p99

# %%
fig, ax = plt.subplots(figsize=(6.0, 3.0))
if not p99.empty:
    x = np.arange(len(p99))
    for i, s in enumerate([s for s in LADDER if s in p99]):
        ax.bar(x + (i - 1) * 0.27, p99[s], 0.27, label={"reload": "vLLM (reload)", "hetero": "+ hetero",
                                                         "oserve": "+ assignment (OServe)"}[s])
    ax.set_xticks(x, [f"{m}\n{p}" for m, p in p99.index], fontsize=7)
    ax.legend(fontsize=7)
ax.set_ylabel("P99 latency (s)")
fig.tight_layout()
fig


# %%
def shares(model="opt-66b", system="oserve"):
    """(types 1-2 -> largest replica, type 4 -> second largest, type 3 -> the rest) in T1 P1's plans
    of ``system`` ("hetero": the same deployments routed type-agnostically, the claims' null)."""
    nan = (float("nan"),) * 3
    if plans.empty:
        return nan
    g = plans[(plans.model == model) & (plans.system == system)]
    if g.empty:
        return nan
    g = g[g.span < (g.span.max() + 1) / 6]
    row = g[g.deployment == g.deployment.mode().iloc[0]].iloc[0]
    types = ["SILO", "LILO", "SISO", "LISO"]
    F = OO.route_shares(row, types)
    lam = np.array([g[f"lam_{t}"].sum() for t in types])
    gpus = np.array([int(x.rstrip("*").split(",")[0][2:]) * (int(x.rstrip("*").split("PP")[1]) if "PP" in x else 1)
                     for x in row.deployment.split(" + ")])
    order = np.argsort(-gpus, kind="stable")
    big, second, rest = order[0], order[1] if len(order) > 1 else order[0], order[2:]
    t12 = float((F[big, 0] * lam[0] + F[big, 1] * lam[1]) / max(lam[0] + lam[1], 1e-9))
    return t12, float(F[second, 3]), float(F[rest, 2].sum()) if len(rest) else float("nan")


gain_h = 100.0 * (p99["reload"] / p99["hetero"] - 1.0) if {"reload", "hetero"} <= set(p99) else pd.Series(dtype=float)
gain_f = 100.0 * (p99["reload"] / p99["oserve"] - 1.0) if {"reload", "oserve"} <= set(p99) else pd.Series(dtype=float)
s12, s4, s3 = shares()
n12, n4, n3 = shares(system="hetero")
gain_n = 100.0 * (p99["reload"] / p99[NULL] - 1.0) if {"reload", NULL} <= set(p99) else pd.Series(dtype=float)
metrics = {
    "p99_gain_hetero_mean_pct": OO.stat(gain_h, "mean"),
    "p99_gain_hetero_max_pct": OO.stat(gain_h, "max"),
    "p99_gain_full_mean_pct": OO.stat(gain_f, "mean"),
    "p99_gain_full_max_pct": OO.stat(gain_f, "max"),
    "p99_reload_mean_s": OO.stat(p99.get("reload", pd.Series(dtype=float)), "mean"),
    "p99_hetero_mean_s": OO.stat(p99.get("hetero", pd.Series(dtype=float)), "mean"),
    "p99_full_mean_s": OO.stat(p99.get("oserve", pd.Series(dtype=float)), "mean"),
    "share_types12_to_largest_replica": s12,
    "share_type4_to_second_replica": s4,
    "share_type3_to_smallest_replicas": s3,
    # nulls: vLLM static in the hetero rung's place (15a/b), the hetero rung in OServe's place
    # (15c/d: p99_gain_hetero_*), static in OServe's place in the ladder (15e), and the hetero rung's
    # type-agnostic routing on the same deployments (16a-c)
    "p99_gain_static_mean_pct": OO.stat(gain_n, "mean"),
    "p99_gain_static_max_pct": OO.stat(gain_n, "max"),
    "p99_static_mean_s": OO.stat(p99.get(NULL, pd.Series(dtype=float)), "mean"),
    "share_types12_to_largest_replica_type_agnostic": n12,
    "share_type4_to_second_replica_type_agnostic": n4,
    "share_type3_to_smallest_replicas_type_agnostic": n3,
}
out = FigureOutputs("oserve", "fig15_ablation", scale=scale, root=root)
out.save_figure(fig)
out.write_data(p99.reset_index() if not p99.empty else pd.DataFrame({"model": []}))
out.write_metrics(metrics)
pd.Series(metrics)
