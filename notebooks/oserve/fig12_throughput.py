# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # OServe — Fig 12: throughput (§6.2)
#
# With fixed arrivals, throughput equals the arrival rate until a system saturates (spec §2 [A]).
# The `online/<trace>/<model>/throughput` runs scale each trace so that its busiest span loads the
# best static deployment to the run's `load` (its argument in workflow/runs/oserve.yaml; the value
# each run used is read back from its summary.json below and printed in the figure's title), well
# above 1: every system is saturated for most of the trace, and completed requests / (last
# completion - first arrival) is its sustained rate. Gain = throughput(OServe) /
# throughput(baseline) per (model, trace).
#
# | quantity | paper |
# |---|---|
# | throughput vs vLLM static | up to 2.0x, 1.5x on average |
# | throughput vs vLLM reload | up to 1.5x, 1.3x on average |
#
# **Nulls**: the same gains with vLLM reload in OServe's place (over vLLM static) and vLLM static in
# OServe's place (over vLLM reload).
#
# **Readings.** OServe is Alg. 1 on the LSTM's forecast, as the paper's system (the claims read it);
# `reference` (`online/<trace>/<model>/throughput-reference`, 8-GPU cases: the exhaustive search on
# the oracle λ, same workload) is reported beside it (`reference_*` metrics, bars "oserve_reference"),
# `xnode` (`...-xnode`, full scale's 16-GPU cases: Alg. 1 on the latency-aware objective) and
# `balanced` (`...-balanced`: the same plans, each type spread over its replicas by capacity among
# the flow's optimal assignments), `uniform` (`...-uniform`: Alg. 1 from the best homogeneous
# deployment instead of §4.3's memory minimum), `restarts` (`...-restarts`, full scale: Alg. 1 from
# three seeds per span, the plan best on the objective kept); `openloop` (`...-openloop`, full scale: every system planned on n_kj measured
# under open-loop traffic; gains within its own runs).

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import oserve_online as OO
from servesim.analysis import runs as R
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
SYS = ["oserve", "static", "reload", *(f"oserve_{rd}" for rd in OO.ONLINE_READINGS)]
sysdf = OO.load("online/*/*/throughput", "systems.csv", scale, root)
for reading in OO.ONLINE_READINGS:
    sysdf = OO.with_reading(sysdf, OO.load(f"online/*/*/throughput-{reading}", "systems.csv", scale, root), f"oserve_{reading}")
# the load each run used (the busiest span's arrivals over the best static deployment's capacity)
loads = {r.name: float(R.load_summary("oserve", r.name, scale, root)["load"])
         for r in OO.declared("online/*/*/throughput", scale, root)}
load_label = ", ".join(f"{x:g}x" for x in sorted(set(loads.values()))) or "no runs"
print(f"busiest span loaded to {load_label} of the best static deployment's capacity: {loads}")
sysdf[["model", "trace", "system", "throughput_rps", "n_completed", "e2e_p99_s"]] if not sysdf.empty else sysdf

# %%
fig, ax = plt.subplots(figsize=(6.0, 3.0))
if not sysdf.empty:
    p = sysdf.pivot_table(index=["model", "trace"], columns="system", values="throughput_rps")
    x = np.arange(len(p))
    for i, s in enumerate([s for s in SYS if s in p]):
        ax.bar(x + (i - (len(SYS) - 1) / 2) * 0.1, p[s], 0.1, label=s)
    ax.set_xticks(x, [f"{m}\n{t}" for m, t in p.index], fontsize=7)
    ax.legend(fontsize=7)
ax.set_ylabel("throughput (req/s)")
ax.set_title(f"busiest span at {load_label} of vLLM static's capacity", fontsize=9)
fig.tight_layout()
fig

# %%
vs_static = OO.paired(sysdf, "throughput_rps", "oserve", "static")
vs_reload = OO.paired(sysdf, "throughput_rps", "oserve", "reload")
null_vs_static = OO.paired(sysdf, "throughput_rps", "reload", "static")
null_vs_reload = OO.paired(sysdf, "throughput_rps", "static", "reload")
metrics = {
    "throughput_gain_vs_static_max": OO.stat(vs_static, "max"),
    "throughput_gain_vs_static_mean": OO.stat(vs_static, "mean"),
    "throughput_gain_vs_reload_max": OO.stat(vs_reload, "max"),
    "throughput_gain_vs_reload_mean": OO.stat(vs_reload, "mean"),
    "n_cases": len(vs_static),
    # the runs' load (read from their summary.json; NaN when they differ or none ran)
    "busiest_span_load": (next(iter(set(loads.values()))) if len(set(loads.values())) == 1 else float("nan")),
    "throughput_gain_reload_vs_static_max": OO.stat(null_vs_static, "max"),
    "throughput_gain_reload_vs_static_mean": OO.stat(null_vs_static, "mean"),
    "throughput_gain_static_vs_reload_max": OO.stat(null_vs_reload, "max"),
    "throughput_gain_static_vs_reload_mean": OO.stat(null_vs_reload, "mean"),
}
# the named readings (`reference`, `xnode`), not the claims' system; each over the cases it ran
for reading in OO.ONLINE_READINGS:
    for base in ("static", "reload"):
        r = OO.paired(sysdf, "throughput_rps", f"oserve_{reading}", base)
        metrics.update({f"{reading}_throughput_gain_vs_{base}_max": OO.stat(r, "max"),
                        f"{reading}_throughput_gain_vs_{base}_mean": OO.stat(r, "mean")})
openloop = OO.load("online/*/*/throughput-openloop", "systems.csv", scale, root)
for base in ("static", "reload"):
    r = OO.paired(openloop, "throughput_rps", "oserve", base)
    metrics.update({f"openloop_throughput_gain_vs_{base}_max": OO.stat(r, "max"),
                    f"openloop_throughput_gain_vs_{base}_mean": OO.stat(r, "mean")})
out = FigureOutputs("oserve", "fig12_throughput", scale=scale, root=root)
out.save_figure(fig)
out.write_data(sysdf)
out.write_metrics(metrics)
pd.Series(metrics)
