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
# # OServe — Fig 10: latency per span P1-P6 (§6.2)
#
# The latency runs cut into six equal periods P1-P6 per trace (T1: from short-output-heavy P1 to
# long-output-heavy P6; T2: balanced -> long-output -> short-output). As the paper's Fig 10 (§6.1:
# "average, P90, and P95-99"), the figure draws per period the average, P90, P95 and P99 e2e latency
# of the requests arriving in it (one row per statistic, one column per model x trace; the runs'
# spans.csv holds each, P96-P98 too, all in data.csv). Gain = P99(baseline) / P99(OServe) per period,
# over models x traces x periods (the claims read P99, as §6.2's numbers; the other statistics'
# gains are printed beside). The deployments quoted in §6.2 are read from the plans of the 16-GPU
# OPT-66B runs (full scale).
#
# | quantity | paper |
# |---|---|
# | per-span gain vs static / vs reload | 1.1-2.7x / 1.1-1.9x |
# | static's worst spans | T1 P1 / P6 |
# | vLLM's best at T1 P1 / P6 | (DP8, TP2) / (DP2, TP8) |
# | T2 P5 | reload (DP4, TP2, PP2) 1.5x worse; OServe 4 replicas |
#
# **Nulls** (workflow/claims/oserve.yaml): the per-span gains with vLLM reload in OServe's place
# (over static) and vLLM static in OServe's place (over reload); for the best-deployment claims, no
# search at all (§4.3's memory-minimum pure-TP replica); for OServe's replica count, the best
# homogeneous deployment's (vLLM reload's plan of the same span).

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis import oserve_online as OO
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware, get_model
from servesim.systems.oserve import min_gpus_per_replica

apply_style()
spans = OO.load("online/*/*/latency", "spans.csv", scale, root)
plans = OO.load("online/*/*/latency", "plans.csv", scale, root)
g_static = OO.paired(spans, "e2e_p99_s", "static", "oserve", by=("model", "trace", "period"))
g_reload = OO.paired(spans, "e2e_p99_s", "reload", "oserve", by=("model", "trace", "period"))
# the nulls (workflow/claims/oserve.yaml): vLLM reload in OServe's place against vLLM static, and
# vLLM static in OServe's place against vLLM reload, span by span
n_static = OO.paired(spans, "e2e_p99_s", "static", "reload", by=("model", "trace", "period"))
n_reload = OO.paired(spans, "e2e_p99_s", "reload", "static", by=("model", "trace", "period"))
pd.DataFrame({"vs_static": g_static, "vs_reload": g_reload})

# %%
# the per-period gains of every statistic the figure draws (the claims read the P99 ones above)
STATS = {"e2e_mean_s": "average", "e2e_p90_s": "P90", "e2e_p95_s": "P95", "e2e_p99_s": "P99"}
by = ("model", "trace", "period")
pd.DataFrame({name: {"vs_static_min": OO.stat(OO.paired(spans, col, "static", "oserve", by=by), "min"),
                     "vs_static_max": OO.stat(OO.paired(spans, col, "static", "oserve", by=by), "max"),
                     "vs_reload_min": OO.stat(OO.paired(spans, col, "reload", "oserve", by=by), "min"),
                     "vs_reload_max": OO.stat(OO.paired(spans, col, "reload", "oserve", by=by), "max")}
              for col, name in STATS.items()}) if not spans.empty else None

# %%
cases = spans[["model", "trace"]].drop_duplicates().values.tolist() if not spans.empty else []
nc = max(1, len(cases))
fig, axes = plt.subplots(len(STATS), nc, figsize=(3.4 * nc, 2.0 * len(STATS)), squeeze=False, sharex=True)
for j, (m, t) in enumerate(cases):
    g = spans[(spans.model == m) & (spans.trace == t)]
    for i, (col, name) in enumerate(STATS.items()):
        ax = axes[i][j]
        for s in ("oserve", "static", "reload"):
            h = g[g.system == s]
            ax.plot(h.period, h[col], marker="o", ms=3, label=s)
        if i == 0:
            ax.set_title(f"{m}, {t}", fontsize=9)
        if j == 0:
            ax.set_ylabel(f"{name} latency (s)")
axes[0][0].legend(fontsize=7)
fig.tight_layout()
fig


# %%
def period_plan(model, trace, period, system):
    """The most frequent plan of ``system`` over the spans of ``period`` (None: no such run)."""
    if plans.empty:
        return None
    g = plans[(plans.model == model) & (plans.trace == trace) & (plans.system == system)]
    if g.empty:
        return None
    n = g.span.max() + 1
    i = int(period[1:]) - 1
    g = g[(g.span >= i * n / 6) & (g.span < (i + 1) * n / 6)]
    return g.deployment.mode().iloc[0] if not g.empty else None


def tp_pp(label):
    if label is None:
        return float("nan"), float("nan")
    first = label.split(" + ")[0].rstrip("*")
    tp = int(first.split(",")[0][2:])
    pp = int(first.split("PP")[1]) if "PP" in first else 1
    return tp, pp


REF = "opt-66b"  # §6.2's quoted deployments are 16-GPU ones; Table 3 is OPT-66B
worst_t1 = g_static.xs("T1", level="trace").groupby(level="period").max() if len(g_static) else pd.Series(dtype=float)
worst_t1_null = n_static.xs("T1", level="trace").groupby(level="period").max() if len(n_static) else pd.Series(dtype=float)
r_t2p5 = g_reload.get((REF, "T2", "P5"), float("nan")) if len(g_reload) else float("nan")
r_t2p5_null = n_reload.get((REF, "T2", "P5"), float("nan")) if len(n_reload) else float("nan")
os_t2p5 = period_plan(REF, "T2", "P5", "oserve")
rl_t2p5 = period_plan(REF, "T2", "P5", "reload")
# the planner's null for the best-deployment claims: no search, §4.3's memory-minimum pure-TP replica
_m = get_model(REF)
mem_min_tp = float(min_gpus_per_replica(_m.param_bytes, get_hardware("h100-80gb").mem_bytes, _m.heads))
metrics = {
    "span_gain_vs_static_min": OO.stat(g_static, "min"),
    "span_gain_vs_static_max": OO.stat(g_static, "max"),
    "span_gain_vs_reload_min": OO.stat(g_reload, "min"),
    "span_gain_vs_reload_max": OO.stat(g_reload, "max"),
    "static_worst_span_t1_is_p1_or_p6": (bool(worst_t1.idxmax() in ("P1", "P6")) if len(worst_t1) else float("nan")),
    "reload_best_tp_t1_p1": tp_pp(period_plan(REF, "T1", "P1", "reload"))[0],
    "reload_best_tp_t1_p6": tp_pp(period_plan(REF, "T1", "P6", "reload"))[0],
    "reload_best_pp_t2_p5": tp_pp(period_plan(REF, "T2", "P5", "reload"))[1],
    "reload_gain_t2_p5": float(r_t2p5),
    "oserve_n_replicas_t2_p5": float(len(os_t2p5.split(" + "))) if os_t2p5 else float("nan"),
    # nulls
    "span_gain_reload_vs_static_min": OO.stat(n_static, "min"),
    "span_gain_reload_vs_static_max": OO.stat(n_static, "max"),
    "span_gain_static_vs_reload_min": OO.stat(n_reload, "min"),
    "span_gain_static_vs_reload_max": OO.stat(n_reload, "max"),
    "static_worst_span_t1_is_p1_or_p6_vs_reload": (bool(worst_t1_null.idxmax() in ("P1", "P6")) if len(worst_t1_null)
                                                   else float("nan")),
    "memory_min_tp_ref": mem_min_tp,
    "memory_min_pp_ref": 1.0,   # §4.3's start is pure TP
    "static_gain_vs_reload_t2_p5": float(r_t2p5_null),
    "reload_n_replicas_t2_p5": float(len(rl_t2p5.split(" + "))) if rl_t2p5 else float("nan"),
}
out = FigureOutputs("oserve", "fig10_span_latency", scale=scale, root=root)
out.save_figure(fig)
out.write_data(spans)
out.write_metrics(metrics)
pd.Series(metrics)
