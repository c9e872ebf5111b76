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
# # OServe — Fig 16: scheduler scalability and optimality (§6.4)
#
# The scheduler (Alg. 1, flow-network-guided merge/split/swap with a seeded RNG, patience 20) and the
# exhaustive search (every partition of the GPUs x every strategy multiset) on one type mix (Table 1's
# S3) as the cluster grows, one job per size (workflow/runs/oserve.yaml `fig16/*`). Both score a
# deployment by the flow network (Φ, ties broken by α*, the largest routable scale of λ) on capacities
# profiled once in the simulator; search seconds exclude that profiling and are single-core wall
# clock of our Python (absolute seconds are implementation-bound: compare ratios). Each plan, and the
# best homogeneous deployment (vLLM static), is then served at 70 % of the best plan's capacity: P99
# e2e of the heuristic's plan vs the exhaustive one's is Fig 16c. Alg. 2's greedy switch plan (the
# other half of the paper's runtime) belongs to the online system and is not timed here.
#
# Alg. 1's start has two readings: §4.3's uniform pure-TP deployment at the memory minimum (plan
# `heuristic`, the one the claims check) and App. E's "random uniform (resource allocation and
# parallel strategies)" read as the best uniform deployment (plan `heuristic-best-uniform`).
#
# Alg. 1 draws its moves from a seeded RNG, and the paper reports one run. Each start is searched with
# several seeds (`search-seeds` in the runs; plans `heuristic@seed<k>`, served on the same workload):
# the bare metrics are the first seed's draw, and the metrics of a draw are also summarised over the
# seeds (`<key>__seed_mean`, `__seed_min`, `__seed_max`), which is what the claims judge.
#
# The panels follow the paper's: (a) the scheduler's runtime as the cluster grows, (b) the search
# time of the heuristic and the exhaustive search on the 16-GPU cluster (`seconds` of the runs'
# cases.csv: each search's own wall clock), (c) P99 of the served plans; (d) adds each plan's α*
# (the flow objective the searches maximise; the claims' objective gap reads it).
#
# Request types: the search runs type the Azure 2023 pool by **k-means** on the lengths, as the
# paper (§5.1) and our online runs (`search.py --types`, default `kmeans`; the median split
# `quadrant` is a reading), for the type pools behind the S3 mix.
#
# | quantity | paper |
# |---|---|
# | scheduler runtime | < 60 s (the 1-min span), scales well with #GPUs |
# | 16 GPUs: exhaustive vs heuristic | ≈ 50 s vs ≤ 12 s |
# | OPT-66B P99 gap heuristic vs exhaustive | ≤ 6 % |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0
ref_gpus = 16       # Fig 16b/c's cluster

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import oserve_scheduler as osch
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
df = osch.load("fig16/*", scale, root)
df[["run", "plan", "deployment", "dp", "alpha", "iterations", "evaluations", "seconds", "p99_e2e_s"]]

# %%
PLANS = (("heuristic", "o-"), ("heuristic-best-uniform", "d-"), ("exhaustive", "s--"))
fig, axes = plt.subplots(2, 2, figsize=(9.5, 6.4))
ax = axes[0][0]
for plan, mk in PLANS:
    d = df[df.plan == plan].sort_values("cluster_gpus")
    ax.plot(d.cluster_gpus, d.seconds, mk, label=plan)
ax.axhline(60, color="grey", lw=0.8, ls=":")
ax.set_yscale("log")
ax.set_xlabel("GPUs")
ax.set_ylabel("search time (s, one core)")
ax.set_title("(a) scheduler runtime", fontsize=9)
ax.legend(fontsize=7)
ax = axes[0][1]
names = [p for p, _ in PLANS]
secs = [osch.value(df, "seconds", plan=p, cluster_gpus=ref_gpus) for p in names]
ax.bar(np.arange(len(names)), secs, 0.6, color=["C0", "C1", "C2"])
for k, v in enumerate(secs):
    if np.isfinite(v):
        ax.text(k, v, f"{v:.3g} s", ha="center", va="bottom", fontsize=7)
ax.set_xticks(np.arange(len(names)), ["heuristic", "heuristic\n(best-uniform)", "exhaustive"], fontsize=7)
if any(np.isfinite(v) and v > 0 for v in secs):
    ax.set_yscale("log")
else:
    ax.text(0.5, 0.5, f"no {ref_gpus}-GPU search at this scale", transform=ax.transAxes, ha="center", fontsize=8)
ax.set_ylabel("search time (s, one core)")
ax.set_title(f"(b) search time, {ref_gpus} GPUs (paper: ≤ 12 s vs ≈ 50 s)", fontsize=9)
ax = axes[1][0]
sizes = sorted(df.cluster_gpus.unique())
w = 0.2
seed_rows = osch.all_draws(df)
for i, plan in enumerate(("heuristic", "heuristic-best-uniform", "exhaustive", "static")):
    ys = [osch.value(df, "p99_e2e_s", plan=plan, cluster_gpus=g) for g in sizes]
    # Alg. 1's plans: the bar is the first seed's draw, the whisker the range over the seeds
    rng = seed_rows[seed_rows.plan == plan].groupby("cluster_gpus").p99_e2e_s.agg(["min", "max"]).reindex(sizes)
    err = np.vstack([np.asarray(ys) - rng["min"], rng["max"] - np.asarray(ys)]) if plan.startswith("heuristic") else None
    ax.bar(np.arange(len(sizes)) + (i - 1.5) * w, ys, w, label=plan, yerr=err, capsize=2, error_kw={"lw": 0.8})
ax.set_xticks(np.arange(len(sizes)), [str(g) for g in sizes])
ax.set_xlabel("GPUs")
ax.set_ylabel("P99 e2e latency (s)")
ax.set_title("(c) P99 of the served plans (whiskers: Alg. 1's seeds)", fontsize=9)
ax.legend(fontsize=7)
ax = axes[1][1]
for plan, mk in (*PLANS, ("static", "^:")):
    d = df[df.plan == plan].sort_values("cluster_gpus")
    ax.plot(d.cluster_gpus, d.alpha, mk, label=plan)
# Alg. 1's seeds (--search-seeds): the band of α* over its draws, per start
for plan, color in (("heuristic", "C0"), ("heuristic-best-uniform", "C1")):
    band = seed_rows[seed_rows.plan == plan].groupby("cluster_gpus").alpha.agg(["min", "max"])
    if len(band):
        ax.fill_between(band.index, band["min"], band["max"], color=color, alpha=0.15, lw=0)
ax.set_xlabel("GPUs")
ax.set_ylabel("α* (routable scale of λ)")
ax.set_title("(d) plan quality (flow objective; shaded: Alg. 1's seeds)", fontsize=9)
ax.legend(fontsize=7)
fig.tight_layout()
fig

# %%
def gap_pct(a, b):
    return float((a / b - 1) * 100) if np.isfinite(a) and np.isfinite(b) and b > 0 else float("nan")


def search_metrics(df) -> dict:
    """Fig 16's metrics of one draw of Alg. 1 (its plans under their base names, osch.by_seed)."""
    h16 = osch.value(df, "seconds", plan="heuristic", cluster_gpus=ref_gpus)
    e16 = osch.value(df, "seconds", plan="exhaustive", cluster_gpus=ref_gpus)
    a_h, a_e = (osch.value(df, "alpha", plan=p, cluster_gpus=ref_gpus) for p in ("heuristic", "exhaustive"))
    p_h, p_e = (osch.value(df, "p99_e2e_s", plan=p, cluster_gpus=ref_gpus) for p in ("heuristic", "exhaustive"))
    a_b, p_b = (osch.value(df, c, plan="heuristic-best-uniform", cluster_gpus=ref_gpus) for c in ("alpha", "p99_e2e_s"))
    # the planner's null (workflow/claims/oserve.yaml): the best single homogeneous deployment (vLLM
    # static's) in Alg. 1's place, served the same way
    a_s, p_s = (osch.value(df, c, plan="static", cluster_gpus=ref_gpus) for c in ("alpha", "p99_e2e_s"))
    heur = df[df.plan == "heuristic"]
    m = {
        "model": str(df.model.iloc[0]),
        "gpus_swept": [int(g) for g in sizes],
        "scheduler_runtime_s_max": float(heur.seconds.max()) if len(heur) else float("nan"),
        "scheduler_runtime_s_32gpus": osch.value(df, "seconds", plan="heuristic", cluster_gpus=32),
        "scheduler_parallel_efficiency": float("nan"),   # not measured: one core per job (see the report)
        "heuristic_runtime_s_16gpus": h16,
        "exhaustive_runtime_s_16gpus": e16,
        "heuristic_over_exhaustive_time_16gpus": h16 / e16 if e16 > 0 else float("nan"),
        "alpha_gap_heuristic_vs_exhaustive_pct": -gap_pct(a_h, a_e),
        "p99_gap_heuristic_vs_exhaustive_pct": gap_pct(p_h, p_e),
        "alpha_gap_best_uniform_vs_exhaustive_pct": -gap_pct(a_b, a_e),
        "p99_gap_best_uniform_vs_exhaustive_pct": gap_pct(p_b, p_e),
        "alpha_gap_static_vs_exhaustive_pct": -gap_pct(a_s, a_e),
        "p99_gap_static_vs_exhaustive_pct": gap_pct(p_s, p_e),
        "heuristic_best_uniform_runtime_s_16gpus": osch.value(df, "seconds", plan="heuristic-best-uniform", cluster_gpus=ref_gpus),
        "heuristic_alpha_vs_static_16gpus": a_h / osch.value(df, "alpha", plan="static", cluster_gpus=ref_gpus),
        "heuristic_iterations_16gpus": osch.value(df, "iterations", plan="heuristic", cluster_gpus=ref_gpus),
        "exhaustive_partitions_16gpus": osch.value(df, "iterations", plan="exhaustive", cluster_gpus=ref_gpus),
        # how Alg. 1 moved (20e's diagnosis): the share of its iterations with U empty (every replica
        # saturated at α*·λ: the pseudo-code's swap needs U, its split applies to U) and the share whose
        # only moves were merges
        **{f"heuristic_{c}_16gpus": osch.value(df, c, plan="heuristic", cluster_gpus=ref_gpus)
           for c in ("u_empty_iter_pct", "merge_only_iter_pct")},
    }
    for g in sizes:
        m[f"heuristic_runtime_s_{g}gpus"] = osch.value(df, "seconds", plan="heuristic", cluster_gpus=g)
    return m


# The bare keys are the first seed's draw (every run's --seed); Alg. 1 is randomised and the paper
# reports one run of it, so the runs repeat the search with --search-seeds seeds and the keys that
# depend on the draw are also summarised over them (<key>__seed_min / __seed_max / __seed_mean).
SEEDED = ("alpha_gap_heuristic", "p99_gap_heuristic", "alpha_gap_best_uniform", "p99_gap_best_uniform",
          "heuristic_alpha_vs_static", "heuristic_iterations", "heuristic_u_empty", "heuristic_merge_only")
metrics = {**search_metrics(df), **osch.over_seeds(df, search_metrics, SEEDED)}
out = FigureOutputs("oserve", "fig16_scalability", scale=scale, root=root)
out.save_figure(fig)
out.write_data(df)
out.write_metrics(metrics)
pd.Series(metrics)
