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
# # SageServe — sensitivity of the LT-vs-Reactive saving (J §7.2.1, Fig 11)
#
# The journal reports LT-I / LT-U / LT-UA using **24.21 / 19.65 / 23.38 %** fewer instance-hours
# than Unified Reactive on the peak day, without hurting tail TTFT (LT-U, LT-UA; J §7.2.2). The
# saving hinges on how much load the ILP assumes one instance serves. J §5 defines θ as the TPS
# one instance of the model provides, by benchmarking, with no headroom factor: the default
# (`SageServeConfig.theta_headroom = 1.0`) is the saturation throughput of one simulated instance
# under the run's engine (`theta.measure_theta`). The authors' code uses an absolute 30 × 7516.67
# = 225 500 prompt tok/min (`theta_source="code"`), a little below our instance's saturation
# throughput (its equivalent headroom is the `code` rows' `x_headroom` below).
# A *headroom* below 1 (θ = headroom × saturation) is a sensitivity study only.
#
# Each run is one (reading, headroom, strategy) of the runs `sensitivity/*` (workflow/runs/sageserve.yaml)
# (`servesim.systems.sageserve.sensitivity`); Reactive runs once per reading. Readings
# (`sensitivity.READINGS`):
#
# | reading | what it is |
# |---|---|
# | `paper` | the journal's text (`SageServeConfig.paper()`): 70/30 % thresholds, 15-s cooldown, rolling ARIMA, deferred LT downs, delays simulated, start 20 |
# | `code` | the authors' code (`SageServeConfig.code()`): 0.5/0.25, locks, in-sample ARIMA max over [t+20, t+60], immediate ILP downs, LT starts at 8 (Reactive at 20), no delays in the simulator, θ = 225 500 tok/min |
# | `code_measured` | `code`, but θ = headroom × the measured saturation throughput |
# | `paper_period1` | `paper` with Reactive sampling utilisation every 1 s instead of 5 s (the paper: on every arrival) |
# | `paper_5030` | `paper` with the code's 0.5/0.25 thresholds (Reactive and LT-U/UA) |
# | `paper_nodelay` | `paper` with instances usable at once (the code's simulator) |
# | `paper_start8` | `paper`, LT runs start at 8 instances |
# | `paper_insample` | `paper` with the code's in-sample one-step ARIMA |
#
# The code reading's scalers were incomplete before this study: `use_locks` was set but never
# applied (Reactive and LT-U ran with no cooldown at all), and the LT-U 0.9 override raised the
# target, so it fired again every actor period (the code allows one instance beyond the target).
# Both are fixed (`reactive.LockedReactive`, `actors.LongTermScaler`); the paper reading never
# used them.
#
# Quick scale runs a few points on the quick window (East US, 12:00–16:00 of the peak day); full
# runs the grid on the whole peak day over the three regions. Savings = 100 (1 − IH_LT / IH_Reactive)
# of the same reading; "TTFT ratio" = LT's IW P95 TTFT ÷ Reactive's.

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
target_saving_pct = 18.0   # the lower end of the paper's 19.65-24.21 % (and the abstract's "up to 25 %")
paper_savings = {"lt_i": 24.21, "lt_u": 19.65, "lt_ua": 23.38}
hourly_reading = "paper"   # the reading whose hour-by-hour instances the bottom panel shows

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from IPython.display import display

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dir
from servesim.metrics import billed_instance_hours
from servesim.systems.sageserve.nulls import held_fleet, savings_pct
from servesim.systems.sageserve.sensitivity import LT_STRATEGIES, headroom_at_saving, own_theta, savings_table

apply_style()
base = run_dir("sageserve", "sensitivity_tables", scale, root)  # the grid gathered (workflow/runs/sageserve.yaml)
runs = pd.read_csv(base / "runs.csv")
hourly = pd.read_csv(base / "runs_hourly.csv")
sav = savings_table(runs)
names = {"reactive": "Reactive", "lt_i": "LT-I", "lt_u": "LT-U", "lt_ua": "LT-UA"}
strategies = [s for s in LT_STRATEGIES if s in set(sav["strategy"])]
readings = list(dict.fromkeys(runs["reading"]))

# %% [markdown]
# ## What this run shows
# Computed from the runs (no number here is typed in). Per reading and LT strategy: the saving at
# the reading's own θ (the paper's: headroom 1.0; the code's: its absolute θ) on the authors'
# instance-hours (below) and on the exact billed integral, with IW P95 TTFT ÷ Reactive's; the largest
# saving whose tail TTFT is no worse than Reactive's; and the headroom at which the saving reaches
# `target_saving_pct`. Below it, every (reading, headroom, strategy) point whose saving on the
# paper's metric lies in the paper's 18–25 % with tail TTFT no worse than Reactive's.

# %%
rows = []
for (r, s), g in sav.groupby(["reading", "strategy"]):
    own, ok = own_theta(g), g[g["ttft_p95_ratio"] <= 1.0]
    best = ok.loc[ok["savings_pct"].idxmax()] if len(ok) else None
    rows.append({"reading": r, "strategy": names[s],
                 "saving_own_theta_pct": np.nan if own is None else own["savings_pct"],
                 "saving_exact_own_theta_pct": np.nan if own is None else own.get("savings_pct_exact", np.nan),
                 "ttft_ratio_own_theta": np.nan if own is None else own["ttft_p95_ratio"],
                 "best_saving_ttft_ok_pct": np.nan if best is None else best["savings_pct"],
                 "at_headroom": np.nan if best is None else best["x_headroom"],
                 f"headroom_at_{target_saving_pct:g}pct": headroom_at_saving(g, target_saving_pct)})
summary = pd.DataFrame(rows)
display(summary.round(3))
in_range = sav[sav["savings_pct"].between(18.0, 25.0) & (sav["ttft_p95_ratio"] <= 1.0)]
in_range[["reading", "strategy", "x_headroom", "savings_pct", "savings_pct_exact", "ttft_p95_ratio"]].round(3)

# %% [markdown]
# Drivers, in order of effect (each visible in the figure and the table below):
#
# 1. **θ headroom** (the paper's definition is 1.0; below 1 is a sensitivity study). Reactive
#    settles where KV utilisation sits inside its band (instances about half full); LT provisions
#    the hour's *maximum* forecast at θ. The saving grows with θ, and so does LT's tail latency once
#    the forecast lags the load.
# 2. **Reactive's own reading** moves the baseline: the code's 0.5/0.25 thresholds (`paper_5030`)
#    keep more Reactive instances, removing provisioning delays (`paper_nodelay`) fewer; the code's
#    locks after scale-ups make Reactive cheaper and slower.
# 3. **Forecast**: the rolling 60-min ARIMA lags the diurnal ramp: LT under-provisions the morning
#    ramp and over-provisions the ramp-down; the code's in-sample forecast (`paper_insample`,
#    `code`) sees the future and has neither.
# 4. **The 2-instance floor** in lightly loaded regions is common to all strategies and dilutes the
#    relative saving of a multi-region total.
# 5. Start state (`paper_start8`) and Reactive's sampling period (`paper_period1`).
#
# Reactive thrashes (scale-ups and scale-ins every few minutes, KV utilisation swinging across its
# band), so its tail TTFT is poor; the paper's Reactive is not as far behind (R: P90 TTFT 18.7 s
# vs LT-U 14.6 s).
#
# Instance-hours are the **authors'** reading (their `plotting_scripts/Figures9-10.py`: at every
# 2-s tick the billed instances counted over all the window's regions, each 15-min bin's maximum
# of that total, summed ÷ 4; the ticks rebuilt from each run's transition log,
# `servesim.systems.sageserve.sensitivity.collect`): `instance_hours`, `savings_pct_*`. Beside it:
# **sum_of_region_maxima** (each region's own bin maxima summed: the reading before issue 30;
# `instance_hours_sum_of_region_maxima`, `savings_pct_sum_of_region_maxima_*`) and the **exact**
# billed integral (`instance_hours_exact`, `savings_pct_exact_*`).
#
# ## The readings tried: instance-hours and IW P95 TTFT

# %%
table = runs.copy()
table["x_headroom"] = table["headroom"].where(table["headroom"].notna(), table["theta_equiv_headroom"])
table = table.merge(sav[["reading", "strategy", "x_headroom", "savings_pct", "savings_pct_sum_of_region_maxima",
                         "savings_pct_exact", "ttft_p95_ratio"]],
                    on=["reading", "strategy", "x_headroom"], how="left")
table = table.sort_values(["reading", "strategy", "x_headroom"], na_position="first").reset_index(drop=True)
cols = ["reading", "strategy", "headroom", "theta_equiv_headroom", "instance_hours", "instance_hours_sum_of_region_maxima",
        "instance_hours_exact", "mean_instances_per_endpoint", "ttft_p50", "ttft_p95", "e2e_p95", "savings_pct",
        "savings_pct_sum_of_region_maxima", "savings_pct_exact", "ttft_p95_ratio"]
table[cols].round(3)

# %% [markdown]
# ## Savings vs θ headroom (top), tail TTFT vs Reactive (middle), where the instance-hours go (bottom)

# %%
fig = plt.figure(figsize=(4.2 * len(strategies), 10.5))
gs = fig.add_gridspec(3, len(strategies), height_ratios=[1.0, 0.8, 1.0])
colors = {r: f"C{i}" for i, r in enumerate(readings)}
for j, s in enumerate(strategies):
    ax = fig.add_subplot(gs[0, j])
    ax2 = fig.add_subplot(gs[1, j], sharex=ax)
    ax.axhspan(18, 25, color="0.9", label="paper 18-25 %")
    ax.axhline(paper_savings.get(s, np.nan), color="0.5", ls=":", lw=1)
    for r in readings:
        g = sav[(sav["strategy"] == s) & (sav["reading"] == r)].sort_values("x_headroom")
        if g.empty:
            continue
        fixed = g["headroom"].isna().all()
        kw = dict(marker="*" if fixed else "o", ms=11 if fixed else 4, ls="none" if fixed else "-", color=colors[r])
        ax.plot(g["x_headroom"], g["savings_pct"], label=r + (" (θ = 225.5k)" if fixed else ""), **kw)
        ax2.plot(g["x_headroom"], g["ttft_p95_ratio"], **kw)
    ax.axhline(0, color="k", lw=0.6)
    ax2.axhline(1, color="k", lw=0.6)
    ax.set(title=names[s], ylabel="instance-h saved vs Reactive (%)" if j == 0 else None)
    ax2.set(xlabel="θ headroom (× measured saturation throughput)", ylabel="P95 TTFT / Reactive's" if j == 0 else None,
            yscale="log")
    ax.legend(fontsize=7)
# bottom: instances per hour (one endpoint summed over regions) for one reading, with the ILP target
ax = fig.add_subplot(gs[2, :])
hr = hourly[hourly["reading"] == hourly_reading]
agg = hr.groupby(["strategy", "headroom", "hour"], dropna=False).agg(instances=("instances", "sum"),
                                                                     ilp_target=("ilp_target", "sum"),
                                                                     ttft_p95=("ttft_p95", "max")).reset_index()
for (s, h), g in agg.groupby(["strategy", "headroom"], dropna=False, sort=False):
    if s not in ("reactive", "lt_ua", "lt_i"):
        continue
    lab = names[s] + ("" if pd.isna(h) else f" h={h:.2f}")
    line, = ax.step(g["hour"], g["instances"], where="post", label=lab)
    if s != "reactive" and g["ilp_target"].gt(0).any():
        ax.step(g["hour"], g["ilp_target"], where="post", ls="--", color=line.get_color(), lw=0.8)
ax.set(xlabel="trace hour", ylabel=f"instances ({hourly_reading}; dashed: ILP target)")
ax.legend(fontsize=7, ncol=3)
fig.tight_layout()

# %% [markdown]
# Hour by hour (reading `hourly_reading`): billed instances, the ILP target, and P95 TTFT per run.

# %%
hr.pivot_table(index="hour", columns=["strategy", "headroom"], values=["instances", "ttft_p95"], dropna=False).round(2)

# %%
def _h(h: float) -> str:
    return f"h{int(round(100 * h)):03d}"


metrics: dict = {"target_saving_pct": target_saving_pct, "preset": str(runs["preset"].iloc[0])}
rx = runs[runs["strategy"] == "reactive"].set_index("reading")
for r in readings:
    if r in rx.index:
        metrics[f"instance_hours_reactive_{r}"] = float(rx.loc[r, "instance_hours"])
        for k in ("sum_of_region_maxima", "exact"):
            metrics[f"instance_hours_{k}_reactive_{r}"] = float(rx.loc[r, f"instance_hours_{k}"])
        metrics[f"ttft_p95_reactive_{r}"] = float(rx.loc[r, "ttft_p95"])
        metrics[f"mean_instances_reactive_{r}"] = float(rx.loc[r, "mean_instances_per_endpoint"])
for (r, s), g in sav.groupby(["reading", "strategy"]):
    fixed = g["headroom"].isna().all()
    for _, row in g.iterrows():
        tag = "" if fixed else "_" + _h(row["x_headroom"])
        metrics[f"savings_pct_{s}_{r}{tag}"] = float(row["savings_pct"])
        for k in ("sum_of_region_maxima", "exact"):
            metrics[f"savings_pct_{k}_{s}_{r}{tag}"] = float(row.get(f"savings_pct_{k}", float("nan")))
        metrics[f"ttft_p95_{s}_{r}{tag}"] = float(row["ttft_p95"])
        metrics[f"ttft_p95_ratio_{s}_{r}{tag}"] = float(row["ttft_p95_ratio"])
        metrics[f"mean_instances_{s}_{r}{tag}"] = float(row["mean_instances_per_endpoint"])
    if fixed:
        metrics[f"theta_equiv_headroom_{r}"] = float(g["theta_equiv_headroom"].iloc[0])
    else:
        metrics[f"headroom_at_{int(target_saving_pct)}pct_{s}_{r}"] = headroom_at_saving(g, target_saving_pct)
    ok = g[g["ttft_p95_ratio"] <= 1.0]
    metrics[f"best_savings_pct_ttft_ok_{s}_{r}"] = float(ok["savings_pct"].max()) if len(ok) else float("nan")
# what holding the peak costs under the code reading: a static fleet sized for the peak (each
# endpoint held at the code reading's Reactive's largest count; servesim.systems.sageserve.nulls),
# through the same instance-hour code and reading as the runs (the headline claims' null, 02f-02h,
# under the paper reading)
ts_code = pd.read_parquet(run_dir("sageserve", "sensitivity/code/reactive/reactive", scale, root) / "timeseries.parquet")
metrics["instance_hours_static_peak_code"] = billed_instance_hours(None, held_fleet(ts_code, "peak"), "authors")
metrics["instance_hours_reading"] = "authors"
metrics["savings_pct_static_peak_code"] = savings_pct(metrics["instance_hours_static_peak_code"],
                                                      metrics["instance_hours_reactive_code"])
for s in strategies:
    g = sav[(sav["strategy"] == s) & (sav["ttft_p95_ratio"] <= 1.0)]
    metrics[f"best_savings_pct_ttft_ok_{s}"] = float(g["savings_pct"].max()) if len(g) else float("nan")
    hit = g[(g["savings_pct"] >= target_saving_pct)]
    metrics[f"readings_reaching_target_ttft_ok_{s}"] = int(hit["reading"].nunique())
metrics

# %%
out = FigureOutputs("sageserve", "sens_lt_savings", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table[cols + ["x_headroom", "preset", "iw_unfinished", "window_hours"]])
out.write_metrics(metrics)
