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
#
# %% [markdown]
# # OServe — App. J: a homogeneous workload
#
# One request type of fixed lengths (the Azure 2023 pool's median input and output, 1046 and 90
# tokens) at a stable Poisson rate (run `appj/homogeneous` of workflow/runs/oserve.yaml; full scale
# OPT-66B on 16 GPUs, quick OPT-30B on 8). Alg. 1 starts from the uniform pure-TP deployment at the
# memory minimum; "iterations to converge" is the last iteration whose candidate was accepted.
# Its plan and vLLM static's (the best homogeneous deployment of the same grid) are served on the
# same workload at 70 % of the better plan's capacity. Plan `heuristic` starts as §4.3 says (the
# claims check it); `heuristic-best-uniform` from App. E's reading (the best uniform deployment).
# Alg. 1 draws its moves from a seeded RNG, and the paper reports one run: the search is repeated
# with several seeds (`search-seeds` in the run); the bare metrics are the first seed's draw, and
# they are also summarised over the seeds (`<key>__seed_mean`, `__seed_min`, `__seed_max`), which
# is what the claims judge.
#
# | quantity | paper |
# |---|---|
# | iterations to converge | 2-3, to a near-uniform deployment |
# | P99 vs vLLM (static) | within 3 % |
# | throughput | comparable |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import oserve_scheduler as osch
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
df = osch.load("appj/homogeneous", scale, root)
trace = json.loads((osch.runs_api.run_dir("oserve", "appj/homogeneous", scale, root) / "traces.json").read_text())["homogeneous"]
df[["plan", "deployment", "dp", "alpha", "iterations", "converged_at", "p99_e2e_s", "mean_e2e_s", "throughput_rps"]]

# %%
it = pd.DataFrame([{"iter": t["iter"], "alpha": t["key"][1] if t["key"] else np.nan, "accepted": t["accepted"]} for t in trace])
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
ax = axes[0]
ax.plot(it.iter, it.alpha, ".", color="grey", label="candidate")
acc = it[it.accepted]
ax.step(list(acc.iter) + [it.iter.max()], list(acc.alpha) + [acc.alpha.iloc[-1]], where="post", label="accepted")
ax.axhline(osch.value(df, "alpha", plan="static"), ls=":", color="k", label="vLLM static")
ax.set_xlabel("Alg. 1 iteration")
ax.set_ylabel("α*")
ax.legend(fontsize=7)
ax = axes[1]
first = df[~df.plan.str.contains(osch.SEED_TAG)]   # the first seed's plans, static (the others: the metrics' band)
plans = list(first.plan)
ax.bar(plans, first.p99_e2e_s, color=[f"C{i}" for i in range(len(plans))])
ax.tick_params(axis="x", labelsize=7)
ax.set_ylabel("P99 e2e latency (s)")
for i, d in enumerate(first.deployment):
    ax.text(i, 0, d, rotation=90, ha="center", va="bottom", fontsize=7, color="w")
fig.tight_layout()
fig

# %%
def draw_metrics(df) -> dict:
    """App. J's metrics of one draw of Alg. 1 (its plans under their base names, osch.by_seed)."""
    p_h, p_s = osch.value(df, "p99_e2e_s", plan="heuristic"), osch.value(df, "p99_e2e_s", plan="static")
    t_h, t_s = osch.value(df, "throughput_rps", plan="heuristic"), osch.value(df, "throughput_rps", plan="static")
    return {
        "iterations_to_converge": osch.value(df, "converged_at", plan="heuristic"),
        "iterations_run": osch.value(df, "iterations", plan="heuristic"),
        "alpha_ratio_vs_static": osch.value(df, "alpha", plan="heuristic") / osch.value(df, "alpha", plan="static"),
        "p99_gap_vs_static_pct": abs(p_h / p_s - 1) * 100 if np.isfinite(p_h) and np.isfinite(p_s) else float("nan"),
        "iterations_to_converge_best_uniform": osch.value(df, "converged_at", plan="heuristic-best-uniform"),
        "p99_gap_vs_static_pct_best_uniform": abs(osch.value(df, "p99_e2e_s", plan="heuristic-best-uniform") / p_s - 1) * 100,
        "throughput_ratio_vs_static": t_h / t_s if np.isfinite(t_h) and np.isfinite(t_s) else float("nan"),
    }


# The bare keys are the first seed's draw (the run's --seed); Alg. 1 is randomised and the paper
# reports one run of it, so the run repeats the search with --search-seeds seeds and the metrics are
# also summarised over them (<key>__seed_min / __seed_max / __seed_mean).
metrics = {
    "model": str(df.model.iloc[0]), "gpus": int(df.cluster_gpus.iloc[0]),
    "deployment_oserve": str(df.loc[df.plan == "heuristic", "deployment"].iloc[0]),
    "deployment_static": str(df.loc[df.plan == "static", "deployment"].iloc[0]),
    **draw_metrics(df),
    **osch.over_seeds(df, draw_metrics),
}
out = FigureOutputs("oserve", "appj_homogeneous", scale=scale, root=root)
out.save_figure(fig)
out.write_data(df)
out.write_metrics(metrics)
pd.Series(metrics)
