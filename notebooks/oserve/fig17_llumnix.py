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
# # OServe — Fig 17: OServe vs Llumnix (§6.2, App. H)
#
# The `fig17/<trace>/<model>/<load>` runs serve one trace with OServe and with our Llumnix
# (`servesim.systems.oserve.llumnix`): vLLM static's homogeneous deployment for the whole trace
# (the paper optimises each baseline's deployment), every request dispatched at its arrival to the
# instance with the largest Llumnix *freeness* (decode steps left per request once the queue's
# virtual usage is counted: Llumnix's `remaining_steps` load), and live migration every 0.05 s from
# instances below 48 steps to the least loaded one when the gap exceeds 48 steps (the decoding
# request with the least KV; its KV copied at NVLink / InfiniBand speed while it keeps decoding,
# only the last stage blocking it).
#
# Per case (model, GPUs, trace), as the paper's "P99 latency and throughput":
# - P99 speedup = P99 E2E(Llumnix) / P99 E2E(OServe) on the `latency` run (busiest span at 0.9 of
#   the best static deployment);
# - throughput gain = throughput(OServe) / throughput(Llumnix) on the `throughput` run (2.5: both
#   saturated for most of the trace; completed / (last completion - first arrival)).
#
# The claims take the smallest and largest of all these gains (both metrics, every case).
#
# | quantity | paper |
# |---|---|
# | OServe over Llumnix, P99 latency and throughput, Llama-30B / Llama2-70B, 8-16 GPUs | 1.32-1.51x |

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
SYS = ["oserve", "llumnix"]
BY = ("model", "gpus", "trace")
lat = OO.load("fig17/*/*/latency", "systems.csv", scale, root)
thr = OO.load("fig17/*/*/throughput", "systems.csv", scale, root)
p99 = OO.paired(lat, "e2e_p99_s", "llumnix", "oserve", by=BY)
tput = OO.paired(thr, "throughput_rps", "oserve", "llumnix", by=BY)
table = pd.DataFrame({"p99_speedup": p99, "throughput_gain": tput})
# the claims' null (workflow/claims/oserve.yaml): vLLM static (round-robin over Llumnix's own
# deployment) in OServe's place: does the naive deployment also beat Llumnix?
null_both = pd.concat([OO.paired(lat, "e2e_p99_s", "llumnix", "static", by=BY),
                       OO.paired(thr, "throughput_rps", "static", "llumnix", by=BY)], ignore_index=True)
table

# %%
# Llumnix's migrations per run (the latency and the throughput load)
MIG = ["migrations_started", "migrations_done", "migrated_requests", "migration_gb", "migration_downtime_mean_s",
       "migration_copy_mean_s"]
mig = pd.concat([d.assign(load=name) for name, d in (("latency", lat), ("throughput", thr)) if not d.empty],
                ignore_index=True)
mig = mig[mig.system == "llumnix"][[*BY, "load", "n_requests", *[c for c in MIG if c in mig]]] if not mig.empty else mig
mig

# %%
cases = table.index.tolist()
SHORT = {"llama-30b": "L-30B", "llama-2-70b": "L2-70B"}
labels = [f"{SHORT.get(m, m)}\n{g}G {t}" for m, g, t in cases]
x = np.arange(len(cases))
fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.2))
for ax, df, value, ylabel in ((axes[0], lat, "e2e_p99_s", "P99 E2E latency (s)"),
                              (axes[1], thr, "throughput_rps", "throughput (req/s)")):
    if cases and not df.empty:
        p = df.pivot_table(index=list(BY), columns="system", values=value, aggfunc="first").reindex(cases)
        for i, s in enumerate(SYS):
            if s in p:
                ax.bar(x + (i - 0.5) * 0.38, p[s].astype(float), 0.38, label="OServe" if s == "oserve" else "Llumnix")
    ax.set_xticks(x, labels, fontsize=6)
    ax.set_ylabel(ylabel)
    vals = df[value].to_numpy(float) if cases and not df.empty else np.array([])
    if value == "e2e_p99_s" and vals.size and np.nanmax(vals) > 20 * np.nanmin(vals):
        # the Llama2-70B cases queue for thousands of seconds, LLaMA-30B's for tens; bars start at 1 s
        ax.set_yscale("log")
        ax.set_ylim(bottom=1.0)
    else:
        ax.set_ylim(bottom=0.0)  # a linear axis from zero: bar heights compare
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
ax = axes[2]
for i, c in enumerate(("p99_speedup", "throughput_gain")):
    ax.bar(x + (i - 0.5) * 0.38, table[c].astype(float) if cases else [], 0.38, label=c.replace("_", " "))
ax.axhspan(1.32, 1.51, color="0.85", zorder=0, label="paper 1.32-1.51x")
ax.axhline(1.0, color="k", lw=0.6)
ax.set_xticks(x, labels, fontsize=6)
ax.set_ylabel("OServe over Llumnix (x)")
ax.legend(fontsize=6, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
fig.tight_layout()
fig

# %%
both = pd.concat([table["p99_speedup"], table["throughput_gain"]]) if cases else pd.Series(dtype=float)
metrics = {
    "gain_vs_llumnix_min": OO.stat(both, "min"),
    "gain_vs_llumnix_max": OO.stat(both, "max"),
    "gain_vs_llumnix_mean": OO.stat(both, "mean"),
    **{f"{c}_vs_llumnix_{how}": OO.stat(table[c] if cases else both, how)
       for c in ("p99_speedup", "throughput_gain") for how in ("min", "max", "mean")},
    "llumnix_migrations_done": float(mig["migrations_done"].sum()) if len(mig) and "migrations_done" in mig else float("nan"),
    "n_cases": len(cases),
    "static_gain_vs_llumnix_min": OO.stat(null_both, "min"),
    "static_gain_vs_llumnix_max": OO.stat(null_both, "max"),
}
data = table.reset_index() if cases else pd.DataFrame(columns=[*BY, "p99_speedup", "throughput_gain"])
out = FigureOutputs("oserve", "fig17_llumnix", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
pd.Series(metrics)
