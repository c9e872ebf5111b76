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
# # OServe — Fig 18: OServe vs Dynamo + vLLM (§6.2, App. H)
#
# The `fig18/<trace>/<model>/<gpus>` runs serve one trace, scaled as Fig 11's latency runs (busiest
# span at 0.9 of the best static deployment), with OServe and with our Dynamo + vLLM
# (`servesim.systems.oserve.dynamo`): prefill and decode workers of one fixed shape (the best
# homogeneous shape on a P/D capacity model), a reactive planner moving one worker between the pools
# per 1-min span (drain, then reload), the decode worker with the most free KV, and the prompt's KV
# handed over NVLink within a node, InfiniBand across.
#
# Gain per case = OServe's end-to-end improvement over Dynamo in %. The paper says only "end-to-end
# performance"; its end-to-end metrics are the latency percentiles (Fig 11 is "end-to-end latency")
# and throughput, and its other baseline claims (Llumnix, vLLM) are in P99 latency. Readings
# (`reading` picks the one the claims take):
# - `p99` (default): P99 E2E latency, (P99 Dynamo / P99 OServe - 1) x 100;
# - `mean`: mean E2E latency, the same ratio;
# - `throughput`: completed requests / makespan, (OServe / Dynamo - 1) x 100 (at a load both
#   sustain it is the arrival rate for both, so near 0).
#
# | quantity | paper |
# |---|---|
# | gain over Dynamo + vLLM, Llama-30B / Llama2-70B, 8-16 GPUs, several traces | 12-20 % |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0
reading = "p99"     # p99 | mean | throughput: the gain the claims take (see above)

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import oserve_online as OO
from servesim.analysis import runs as runs_api
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
READINGS = {"p99": ("e2e_p99_s", False), "mean": ("e2e_mean_s", False), "throughput": ("throughput_rps", True)}
if reading not in READINGS:
    raise ValueError(f"reading={reading!r}: one of {sorted(READINGS)}")
SYS = ["oserve", "dynamo"]
NULL = "static"  # the claims' null (workflow/claims/oserve.yaml): vLLM static in OServe's place
sysdf = OO.load("fig18/*", "systems.csv", scale, root)
sysdf = sysdf[sysdf.system.isin([*SYS, NULL])].reset_index(drop=True) if not sysdf.empty else sysdf
BY = ("model", "gpus", "trace")


def gains(value: str, higher_is_better: bool, system: str = "oserve") -> pd.Series:
    """``system``'s gain over Dynamo in % per (model, gpus, trace)."""
    r = OO.paired(sysdf, value, system, "dynamo", by=BY) if higher_is_better else \
        OO.paired(sysdf, value, "dynamo", system, by=BY)
    return (r - 1.0) * 100.0


table = pd.DataFrame({f"gain_{k}_pct": gains(*v) for k, v in READINGS.items()})
null_gain = gains(*READINGS[reading], system=NULL)
table

# %%
# each case's Dynamo: worker shape, split at the start and the planner's moves
dyn_rows = []
for r in OO.declared("fig18/*", scale, root):
    s = json.loads((runs_api.run_dir("oserve", r.name, scale, root) / "summary.json").read_text())
    d = s.get("dynamo", {})
    pw = d.get("prefill_workers", [])
    dyn_rows.append({"model": s["model"], "gpus": int(s["gpus"]), "trace": s["name"], "shape": d.get("shape"),
                     "workers": d.get("workers"), "prefill_start": d.get("prefill_workers_start"),
                     "prefill_min": min(pw, default=np.nan), "prefill_max": max(pw, default=np.nan),
                     "moves": int(s["systems"].get("dynamo", {}).get("switches", 0))})
dyn = pd.DataFrame(dyn_rows)
dyn

# %%
cases = table.index.tolist()
fig, axes = plt.subplots(1, 2, figsize=(max(7.2, 1.3 * len(cases) + 2.0), 3.6))
labels = [f"{m}\n{g} GPUs, {t}" for m, g, t in cases]
ax = axes[0]
x = np.arange(len(cases))
if cases:
    p = sysdf.pivot_table(index=list(BY), columns="system", values="e2e_p99_s", aggfunc="first").loc[cases]
    for i, sname in enumerate(SYS):
        ax.bar(x + (i - 0.5) * 0.38, p[sname].astype(float), 0.38, label="Dynamo + vLLM" if sname == "dynamo" else "OServe")
ax.set_xticks(x, labels, fontsize=6, rotation=45, ha="right")
ax.set_ylabel("P99 E2E latency (s)")
ax.set_yscale("log")  # overloaded cases reach thousands of seconds
ax.legend(fontsize=7, loc="upper right", framealpha=0.9)
ax = axes[1]
for i, k in enumerate(READINGS):
    ax.bar(x + (i - 1) * 0.27, table[f"gain_{k}_pct"].astype(float) if cases else [], 0.27, label=k)
ax.axhspan(12, 20, color="0.85", zorder=0, label="paper 12-20 %")
ax.axhline(0, color="k", lw=0.6)
ax.set_xticks(x, labels, fontsize=6, rotation=45, ha="right")
ax.set_ylabel("OServe gain over Dynamo (%)")
ax.legend(fontsize=6, loc="upper right", framealpha=0.9)
fig.tight_layout()
fig

# %%
col = f"gain_{reading}_pct"
metrics = {
    "reading": reading,
    "gain_vs_dynamo_min_pct": OO.stat(table[col], "min") if cases else float("nan"),
    "gain_vs_dynamo_max_pct": OO.stat(table[col], "max") if cases else float("nan"),
    "gain_vs_dynamo_mean_pct": OO.stat(table[col], "mean") if cases else float("nan"),
    **{f"gain_{k}_vs_dynamo_{how}_pct": (OO.stat(table[f"gain_{k}_pct"], how) if cases else float("nan"))
       for k in READINGS for how in ("min", "max")},
    "n_cases": len(cases),
    "static_gain_vs_dynamo_min_pct": OO.stat(null_gain, "min") if cases else float("nan"),
    "static_gain_vs_dynamo_max_pct": OO.stat(null_gain, "max") if cases else float("nan"),
}
data = sysdf.merge(table.reset_index(), on=list(BY), how="left") if cases else sysdf
out = FigureOutputs("oserve", "fig18_dynamo", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
pd.Series(metrics)
