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
# # OServe — Table 3 / App. G: per-span allocations
#
# Alg. 1's deployment for each span P1-P6 of our T1 and T2 traces (each span's own type mix, oracle
# λ), beside the paper's Table 3 (OPT-66B on 16 GPUs; runs `tab03/*` of workflow/runs/oserve.yaml:
# full scale OPT-66B/16, quick OPT-30B/8) and beside the best homogeneous deployment (vLLM static's
# grid). The traces are ours (the paper's are private), so rows are compared by structure: the paper
# mixes large model-parallel replicas (TP3-4, PP2) with small TP2 ones at DP 3-5, and T1 moves to
# fewer, larger replicas (DP 5 → 3) as long-output types grow. "ours" is Alg. 1 from §4.3's start
# (memory-minimum pure TP); "ours (best-uniform start)" from App. E's reading (the best uniform one).
# Request types: the search runs draw each type's lengths from the k-means split of the Azure 2023
# pool, as the paper (§5.1) and our online runs (`search.py --types`, default `kmeans`).
# Alg. 1 draws its moves from a seeded RNG, and the paper reports one run: each span is searched with
# several seeds (`search-seeds` in the runs); "ours" is the first seed's draw, the shaded band the
# range over the seeds, and the allocation metrics are also summarised over them
# (`<key>__seed_mean`, `__seed_min`, `__seed_max`), which is what the claims judge.
#
# | quantity | paper |
# |---|---|
# | rows | 12 allocations, each 16 GPUs |
# | DP | 3-5 (T1: 5,4,4,4,3,3; T2: 4,3,4,3,4,5) |
# | App. G | T1 P1→P2 merge into (TP4,PP2): ≈ 20 % lower average latency |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import oserve_scheduler as osch
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.oserve import paper_inputs

apply_style()
paper = paper_inputs()["table3"]
df = osch.load("tab03/*", scale, root)
df["trace"], df["span"] = df.case.str.split("-").str[0], df.case.str.split("-").str[1]
ours = df[df.plan == "heuristic"].set_index(["trace", "span"])
ours_bu = df[df.plan == "heuristic-best-uniform"].set_index(["trace", "span"])
static = df[df.plan == "static"].set_index(["trace", "span"])


def paper_row(rows) -> str:
    return osch.table3_row(" + ".join(" + ".join([f"TP{t},PP{p}" if p > 1 else f"TP{t}"] * c) for t, p, c in rows))


table = pd.DataFrame([{"trace": tr, "span": sp, "paper": paper_row(paper[tr][sp]), "paper_dp": sum(c for *_, c in paper[tr][sp]),
                       "ours": osch.table3_row(ours.loc[(tr, sp), "deployment"]) if (tr, sp) in ours.index else None,
                       "ours_dp": ours.loc[(tr, sp), "dp"] if (tr, sp) in ours.index else np.nan,
                       "ours_best_uniform": osch.table3_row(ours_bu.loc[(tr, sp), "deployment"]) if (tr, sp) in ours_bu.index else None,
                       "ours_best_uniform_dp": ours_bu.loc[(tr, sp), "dp"] if (tr, sp) in ours_bu.index else np.nan,
                       "static": osch.table3_row(static.loc[(tr, sp), "deployment"]) if (tr, sp) in static.index else None,
                       "alpha_vs_static": (ours.loc[(tr, sp), "alpha"] / static.loc[(tr, sp), "alpha"]) if (tr, sp) in ours.index else np.nan}
                      for tr in ("T1", "T2") for sp in paper[tr]])
table

# %%
# Alg. 1's seeds (--search-seeds): the range of DP over its draws, per span (shaded)
seed_dp = osch.all_draws(df).query("plan == 'heuristic'").groupby(["trace", "span"]).dp.agg(["min", "max"])
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
for ax, tr in zip(axes, ("T1", "T2")):
    t = table[table.trace == tr]
    x = np.arange(len(t))
    ax.plot(x, t.paper_dp, "s--", label="paper (OPT-66B, 16 GPUs)")
    ax.plot(x, t.ours_dp, "o-", label=f"ours ({df.model.iloc[0]}, {df.cluster_gpus.iloc[0]} GPUs)")
    band = seed_dp.reindex(pd.MultiIndex.from_arrays([t.trace, t.span]))
    ax.fill_between(x, band["min"], band["max"], color="C1", alpha=0.15, lw=0, label="ours, range over Alg. 1's seeds")
    ax.plot(x, t.ours_best_uniform_dp, "d:", label="ours, best-uniform start")
    ax.set_xticks(x, t.span)
    ax.set_ylim(0, max(6, np.nanmax(t.ours_dp.to_numpy(float)) + 1) if t.ours_dp.notna().any() else 6)
    ax.set_ylabel("replicas (DP)")
    ax.set_title(tr, fontsize=9)
    ax2 = ax.twinx()
    ax2.bar(x, t.alpha_vs_static - 1, 0.4, color="grey", alpha=0.3)
    ax2.set_ylabel("α* gain vs static", fontsize=8)
axes[0].legend(fontsize=7, loc="lower left")
fig.tight_layout()
fig

# %%
def dp(tr, sp, plans=None):
    plans = ours if plans is None else plans
    return float(plans.loc[(tr, sp), "dp"]) if (tr, sp) in plans.index else float("nan")


spans = [f"P{k}" for k in range(1, 7)]


def switch_gain(case, plan="heuristic"):
    """App. G: (1 - mean e2e of the span's plan / mean e2e of the previous span's plan kept) x 100."""
    new, kept = (osch.value(df, "mean_e2e_s", plan=p, case=case) for p in (plan, "previous"))
    return float((1 - new / kept) * 100) if np.isfinite(new) and np.isfinite(kept) and kept > 0 else float("nan")


def draw_metrics(d) -> dict:
    """The allocation metrics of one draw of Alg. 1 (its plans under their base names, osch.by_seed)."""
    o, st = (d[d.plan == p].set_index(["trace", "span"]) for p in ("heuristic", "static"))
    m = {
        "dp_mean_all_spans": float(o.dp.mean()) if len(o) else float("nan"),
        **{f"dp_mean_{tr.lower()}": float(np.nanmean([dp(tr, s, o) for s in spans])) if (tr, "P1") in o.index else float("nan")
           for tr in ("T1", "T2")},
        "heterogeneous_span_frac": float(np.mean([len(set(x.split(" + "))) > 1 for x in o.deployment])) if len(o) else float("nan"),
        "alpha_gain_vs_static_mean": float((o.alpha / st.alpha.reindex(o.index)).mean() - 1) if len(o) else float("nan"),
    }
    m.update({f"dp_{tr.lower()}_{s.lower()}": dp(tr, s, o) for tr in ("T1", "T2") for s in spans})
    return m


gains = np.array([switch_gain(f"{tr}-{s}") for tr in ("T1", "T2") for s in spans[1:]])
paper_ok = all(sum(t * p * c for t, p, c in paper[tr][sp]) == 16 for tr in ("T1", "T2") for sp in paper[tr])
metrics = {
    "model": str(df.model.iloc[0]), "gpus": int(df.cluster_gpus.iloc[0]),
    "paper_rows_sum_16": bool(paper_ok),
    "ours_rows_use_all_gpus": bool((df.gpus == df.cluster_gpus).all()),
    **draw_metrics(df),
    "dp_mean_all_spans_best_uniform": float(table.ours_best_uniform_dp.mean()) if table.ours_best_uniform_dp.notna().any() else float("nan"),
    "alpha_best_uniform_vs_ours_mean": float(np.mean([ours_bu.loc[i, "alpha"] / ours.loc[i, "alpha"] for i in ours.index if i in ours_bu.index]))
    if len(ours_bu) else float("nan"),
    "merge_latency_gain_pct_t1_p2": switch_gain("T1-P2"),
    "switch_latency_gain_pct_mean": float(np.nanmean(gains)) if np.isfinite(gains).any() else float("nan"),
}
# The bare keys are the first seed's draw (every run's --seed); Alg. 1 is randomised and the paper
# reports one run of it, so the runs repeat the search with --search-seeds seeds and the allocation
# metrics are also summarised over them (<key>__seed_min / __seed_max / __seed_mean). The switch
# gains stay on the first seed: its "previous" plan is that seed's.
metrics.update(osch.over_seeds(df, draw_metrics))
# the planner's null (workflow/claims/oserve.yaml): the best single homogeneous deployment of each
# span (vLLM's) in Alg. 1's place
st_dp = [dp(tr, s, static) for tr in ("T1", "T2") for s in spans if (tr, s) in ours.index]
metrics.update({
    "dp_mean_all_spans_static": float(np.nanmean(st_dp)) if np.isfinite(st_dp).any() else float("nan"),
    "dp_mean_t2_static": float(np.nanmean([dp("T2", s, static) for s in spans])) if ("T2", "P1") in static.index
    else float("nan"),
    "dp_t1_p1_static": dp("T1", "P1", static),
    "dp_t1_p6_static": dp("T1", "P6", static),
    "merge_latency_gain_pct_t1_p2_static": switch_gain("T1-P2", plan="static"),
})
out = FigureOutputs("oserve", "tab03_allocations", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
pd.Series(metrics)
