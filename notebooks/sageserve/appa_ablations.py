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
# # SageServe App. A — ablations: A100 vs H100, IW:NIW 9:1 and 1:1
#
# Journal App. A: on A100 clusters LT-UA uses **28.2 %** fewer GPU-hours than Reactive ("mainly
# due to the longer model loading times on A100"); with the Nov'24 trace's IW:NIW ratio (3:1)
# changed to **9:1** and **1:1**, LT-UA saves **26.3 %** and **22 %** ("LT-UA uses the NIW token
# count to determine the buffer size").
#
# Ours (the runs `ablations/<study>/*` of workflow/runs/sageserve.yaml, study `appa`; paper reading): one Reactive and one LT-UA
# run per variant on the synthetic O365 peak day (quick: Llama-2 in East US, 06:00-14:00 at half
# volume, the morning ramp; full: the three regions, 24 h at full volume).
#
# - **Hardware** (`--hardware`, `SageServeConfig.hardware`): the instance's step time is a
#   few-coefficient fit (`servesim.perf.fitted`) to the Splitwise profile rows of Llama-2-70B /
#   Bloom-176B at TP 8 on that GPU (`systems/sageserve/instance_models.py`). The H100 profile is
#   the baseline (J §7.1 profiled on H100). Model loading times are the config's on both GPUs:
#   the paper gives no A100-specific loading time, so the reason the paper names for the larger
#   A100 saving is not modelled; only the slower step time is.
# - **IW:NIW** (`--iw-niw-ratio`, `sageserve_week(iw_niw_ratio=...)`): the generator re-splits
#   its tiers with the week's total request count held (IW-F:IW-N stays 2:1), on the H100 profile.
#   The paper does not say which volume it held; holding the total means 1:1 has a third less IW
#   and twice the NIW of 3:1.
#
# The absolute percentages rest on the private Nov'24 trace (NOT-REPRODUCIBLE); the directions
# (A100 saving more than H100; 9:1 saving more than 1:1) are what we check.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
variants = {"h100": "H100, 3:1", "a100": "A100, 3:1", "iwniw9": "H100, IW:NIW 9:1", "iwniw1": "H100, IW:NIW 1:1"}

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dirs
from servesim.metrics import IH_READINGS, billed_events, billed_instance_hours, instance_hours_readings
from servesim.systems.sageserve.nulls import held_fleet, savings_pct

apply_style()
points = run_dirs("sageserve", "ablations/appa", scale, root)  # point -> its run folder (workflow/runs/sageserve.yaml)
rows = []
for v in variants:
    for s in ("reactive", "lt_ua"):
        d = points[f"{v}__{s}"]
        summ = json.loads((d / "summary.json").read_text())
        req = pd.read_parquet(d / "requests.parquet", columns=["tier"])
        n_niw = int((req["tier"] == "NIW").sum())
        iw, niw = summ["groups"]["iw"], summ["by_tier"].get("NIW", {"requests": 0, "completed": 0})
        # the authors' instance-hours (the run's billed instances counted over all its endpoints at
        # each 2-s tick, rebuilt from the transition log; each 15-min bin's maximum, summed / 4), the
        # other readings beside it (servesim.metrics.IH_READINGS)
        ihr = instance_hours_readings(pd.read_parquet(d / "instance_hours.parquet"),
                                      pd.read_parquet(d / "timeseries.parquet"),
                                      billed_events(pd.read_parquet(d / "lifecycle.parquet")))
        rows.append({"variant": v, "strategy": s, "instance_hours": ihr["authors"], "gpu_hours": 8.0 * ihr["authors"],
                     **{f"instance_hours_{k}": ihr[k] for k in IH_READINGS[1:]},
                     **{f"gpu_hours_{k}": 8.0 * ihr[k] for k in IH_READINGS[1:]}, "ttft_p95": iw["p95_ttft_s"], "e2e_p95": iw["p95_e2el_s"],
                     "hardware": summ["hardware"], "iw_niw_ratio_config": summ["iw_niw_ratio"],
                     "iw_niw_ratio_served": (len(req) - n_niw) / n_niw if n_niw else float("nan"),
                     "niw_unfinished": niw["requests"] - niw["completed"]})
data = pd.DataFrame(rows)
data

# %%
piv = data.pivot(index="variant", columns="strategy", values="gpu_hours").loc[list(variants)]
savings = 100.0 * (1.0 - piv["lt_ua"] / piv["reactive"])
savings_by = {}  # the other readings
for k in IH_READINGS[1:]:
    pk = data.pivot(index="variant", columns="strategy", values=f"gpu_hours_{k}").loc[list(variants)]
    savings_by[k] = 100.0 * (1.0 - pk["lt_ua"] / pk["reactive"])
paper = {"h100": None, "a100": 28.2, "iwniw9": 26.3, "iwniw1": 22.0}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
x = range(len(variants))
ax1.bar([i - 0.2 for i in x], piv["reactive"], 0.4, label="Reactive")
ax1.bar([i + 0.2 for i in x], piv["lt_ua"], 0.4, label="LT-UA")
ax1.set_xticks(list(x), [variants[v] for v in variants], rotation=15)
ax1.set(ylabel="GPU-hours (8 x instance-hours)")
ax1.legend()
ax2.bar([i - 0.2 for i in x], savings, 0.4, label="ours")
ax2.bar([i + 0.2 for i in x], [paper[v] or 0.0 for v in variants], 0.4, label="paper (private trace)")
ax2.axhline(0.0, color="k", lw=0.8)
ax2.set_xticks(list(x), [variants[v] for v in variants], rotation=15)
ax2.set(ylabel="LT-UA GPU-hour saving vs Reactive (%)")
ax2.legend()
fig.tight_layout()

# %%
served = data[data["strategy"] == "reactive"].set_index("variant")["iw_niw_ratio_served"]
metrics = {
    "savings_pct_lt_ua_h100": float(savings["h100"]),
    "savings_pct_lt_ua_a100": float(savings["a100"]),
    "savings_pct_lt_ua_iw_niw_9to1": float(savings["iwniw9"]),
    "savings_pct_lt_ua_iw_niw_1to1": float(savings["iwniw1"]),
    "savings_pct_lt_ua_iw_niw_3to1": float(savings["h100"]),
    # directions the paper's numbers imply (App. A vs the main text's ~23-25 %; 26.3 vs 22)
    "savings_a100_minus_h100_pp": float(savings["a100"] - savings["h100"]),
    "savings_9to1_minus_1to1_pp": float(savings["iwniw9"] - savings["iwniw1"]),
    **{f"savings_pct_{rd}_lt_ua_{k}": float(savings_by[rd][v]) for rd in IH_READINGS[1:] for k, v in
       (("h100", "h100"), ("a100", "a100"), ("iw_niw_9to1", "iwniw9"), ("iw_niw_1to1", "iwniw1"))},
    "instance_hours_reading": "authors",
    "iw_niw_ratio_default": float(served["h100"]),
    "iw_niw_ratio_9to1": float(served["iwniw9"]),
    "iw_niw_ratio_1to1": float(served["iwniw1"]),
}
# the claims' null: a static fleet sized for the peak (each endpoint held at Reactive's largest count;
# servesim.systems.sageserve.nulls) in LT-UA's place, per variant, through the same instance-hour code
static = {v: billed_instance_hours(None, held_fleet(pd.read_parquet(points[f"{v}__reactive"] / "timeseries.parquet"), "peak"),
                                   "authors") for v in variants}
react = data[data["strategy"] == "reactive"].set_index("variant")["instance_hours"]
sav_static = {v: savings_pct(static[v], react[v]) for v in variants}
for k, v in (("h100", "h100"), ("a100", "a100"), ("iw_niw_9to1", "iwniw9"), ("iw_niw_1to1", "iwniw1")):
    metrics[f"savings_pct_static_peak_{k}"] = float(sav_static[v])
metrics["savings_a100_minus_h100_pp_static_peak"] = float(sav_static["a100"] - sav_static["h100"])
metrics["savings_9to1_minus_1to1_pp_static_peak"] = float(sav_static["iwniw9"] - sav_static["iwniw1"])
for r in rows:
    metrics[f"gpu_hours_{r['variant']}_{r['strategy']}"] = r["gpu_hours"]
    metrics[f"ttft_p95_{r['variant']}_{r['strategy']}"] = r["ttft_p95"]
metrics

# %%
out = FigureOutputs("sageserve", "appa_ablations", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
