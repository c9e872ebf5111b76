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
# # SageServe Fig 16a — bursts: memory utilisation of LT-I, LT-U and LT-UA
#
# Journal Fig 16a / conference Fig 16 (Llama-2, US-East): load is multiplied **8×** for one minute
# every hour (the authors' notebook copies the first 60 s of each hour 8 more times, i.e. 9×);
# "LT-UA recovers its memory utilisation fastest"; its scale-up trigger is **5×** the forecast.
#
# Ours: the runs of the runs `runs_burst/<strategy>` (workflow/runs/sageserve.yaml) on the synthetic week with
# `sageserve_week(bursts=True, burst_factor=8)`, paper reading. Note a conflict in the paper's
# own design: its LT-UA only follows traffic in the *last 20 minutes* of the hour, while the
# bursts fall in the *first* minute, so under the paper's reading LT-UA cannot react to them.
# The authors' code has no 20-minute gate, and its runs made the figure, so LT-UA runs in two
# named readings: `lt_ua` (the paper's gate) and `lt_ua_nogate` (the paper otherwise, without the
# gate, `lt_ua_window_s=None`). Recovery time = minutes after a burst until the endpoint's KV
# utilisation is back below its pre-burst level + 0.05.
#
# The burst's load multiple is measured on the **offered** trace (the run's window regenerated
# with the same seed), not on what reaches the endpoints (that includes NIW releases and queueing):
# prompt tokens arriving in each burst minute over those of the same minute without the copies.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
strategies = ["lt_i", "lt_u", "lt_ua", "lt_ua_nogate"]
burst_factor = 8.0  # the runs' --burst-factor (workflow/runs/sageserve.yaml leaves the default, 8)

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dirs
from servesim.systems.sageserve import SageServeConfig
from servesim.systems.sageserve.runs import window_workload

apply_style()
base = run_dirs("sageserve", "runs_burst", scale, root)  # run name -> its folder (workflow/runs/sageserve.yaml)
ts, summ = {}, {}
for s in strategies:
    summ[s] = json.loads((base[s] / "summary.json").read_text())
    t = pd.read_parquet(base[s] / "timeseries.parquet")
    t = t.assign(waiting=t["endpoint_queue"] + t["engine_waiting"])
    ts[s] = t.groupby("time_s", as_index=False).agg(kv_util=("kv_util", "mean"), tokens=("prompt_tokens_in", "sum"),
                                                   ready=("n_ready", "sum"), waiting=("waiting", "sum"))
t0h = summ[strategies[0]]["preset_from_h"]

# %%
def recovery_minutes(df, col="kv_util", tol=0.05):
    """Per burst (top of each hour after the first): minutes until ``col`` <= its pre-burst mean + tol."""
    out = []
    for h in range(1, int(df["time_s"].max() // 3600) + 1):
        pre = df[(df.time_s >= h * 3600 - 600) & (df.time_s < h * 3600)][col]
        post = df[df.time_s >= h * 3600]
        if pre.empty or post.empty:
            continue
        ok = post[post[col] <= pre.mean() + tol]
        out.append((ok.time_s.iloc[0] - h * 3600) / 60.0 if len(ok) else np.nan)
    return out

rec = {s: recovery_minutes(ts[s]) for s in strategies}
rec_queue = {s: recovery_minutes(ts[s], "waiting", 1.0) for s in strategies}
d = ts[strategies[0]]
sample_s = float(np.diff(d["time_s"]).min()) if len(d) > 1 else 60.0
pd.DataFrame(rec, index=[f"burst {i + 1}" for i in range(len(next(iter(rec.values()))))])

# %%
# the offered burst: the run's window regenerated (same seed and generator options as the run)
sm = summ[strategies[0]]
window = {k: sm[f"preset_{k}"] for k in ("scale", "days", "models", "regions", "from_h", "to_h")}
window["bursts"] = bool(sm.get("preset_bursts", False))
offered, t0_s = window_workload(window, seed=sm["seed"], burst_factor=burst_factor)
offered = offered[offered["arrival_s"] >= t0_s]
minute = (offered["arrival_s"] // 60).astype(np.int64)
in_burst = (offered["arrival_s"] % 3600) < 60.0   # the generator's burst minute (burst_len_s = 60)
# a burst copies each of the minute's requests: the distinct rows are what the minute offered without it
ident = ["arrival_s", "tier", "model", "region", "prompt_tokens", "output_tokens", "app"]
bursts = []
for m, g in offered[in_burst].groupby(minute[in_burst]):
    hour = offered[(minute // 60 == m // 60) & ~in_burst]  # the rest of that hour
    bursts.append({"minute": int(m), "tokens": int(g["prompt_tokens"].sum()),
                   "tokens_without_copies": int(g.drop_duplicates(ident)["prompt_tokens"].sum()),
                   "hour_mean_tokens_per_min": float(hour["prompt_tokens"].sum() / 59.0)})
bursts = pd.DataFrame(bursts)
bursts["multiple"] = bursts["tokens"] / bursts["tokens_without_copies"]
bursts["vs_rest_of_hour"] = bursts["tokens"] / bursts["hour_mean_tokens_per_min"]
bursts

# %%
fig, ax = plt.subplots()
ax2 = ax.twinx()
for s in strategies:
    ax.plot((ts[s]["time_s"] / 3600 + t0h), ts[s]["kv_util"], label=s.upper().replace("_", "-"))
ax2.plot(d["time_s"] / 3600 + t0h, d["tokens"] / sample_s * 60 / 1000, color="0.6", lw=0.8, label="prompt TPM (×1000)")
ax.set(xlabel="Time (h, trace hours)", ylabel="KV memory utilisation", ylim=(0, 1))
ax2.set_ylabel("prompt tokens / min (×1000)")
ax2.grid(False)
ax.legend(loc="upper left")

# %%
mean_rec = {s: float(np.nanmean(rec[s])) if rec[s] else None for s in strategies}
metrics = {"burst_load_multiplier": float(bursts["multiple"].mean()) if len(bursts) else None,
           "burst_load_vs_rest_of_hour": float(bursts["vs_rest_of_hour"].mean()) if len(bursts) else None,
           "bursts_offered": int(len(bursts)),
           "burst_factor_param": burst_factor,
           "lt_ua_scaleup_ratio": SageServeConfig().lt_ua_up_ratio,
           **{f"recovery_min_{s}": mean_rec[s] for s in strategies},
           **{f"queue_recovery_min_{s}": float(np.nanmean(rec_queue[s])) if rec_queue[s] else None for s in strategies},
           **{f"instance_hours_{s}": summ[s]["instance_hours"]["billed"] for s in strategies}}


def recovers_fastest(ua: str) -> bool:
    """Is LT-UA reading ``ua`` alone the fastest to recover among LT-I, LT-U and itself?"""
    valid = {s: v for s, v in mean_rec.items() if s in ("lt_i", "lt_u", ua) and v is not None and np.isfinite(v)}
    return bool(ua in valid and min(valid, key=valid.get) == ua and sum(v == valid[ua] for v in valid.values()) == 1)


metrics["lt_ua_gated_recovers_fastest"] = recovers_fastest("lt_ua")       # the paper's last-20-min gate
metrics["lt_ua_nogate_recovers_fastest"] = recovers_fastest("lt_ua_nogate")  # no gate: the authors' code, which made Fig 16a
# the claim's null: LT-U (LT-UA without its >= 5x forecast branch) in LT-UA's place, among LT-I and itself
metrics["lt_u_recovers_fastest"] = recovers_fastest("lt_u")
metrics

# %%
out = FigureOutputs("sageserve", "fig16a_burst", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.concat([ts[s].assign(strategy=s) for s in strategies], ignore_index=True))
out.write_metrics(metrics)
