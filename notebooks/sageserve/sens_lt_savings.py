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
# # SageServe — sensitivity of the LT-vs-Reactive saving (J §7.2.1, Fig 11)
#
# The journal reports LT-I / LT-U / LT-UA using **24.21 / 19.65 / 23.38 %** fewer instance-hours
# than Unified Reactive on the peak day, without hurting tail TTFT (LT-U, LT-UA; J §7.2.2). The
# saving hinges on how much load the ILP assumes one instance serves. J §5 defines θ as the TPS
# one instance of the model provides, by benchmarking, with no headroom factor: the default
# (`SageServeConfig.theta_headroom = 1.0`) is the saturation throughput of one simulated instance
# under the run's engine (`theta.measure_theta`). The authors' code uses an absolute 30 × 7516.67
# = 225 500 prompt tok/min (`theta_source="code"`), ≈ 0.9 × our instance's saturation throughput.
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
# With both fixed (`reactive.LockedReactive`, `actors.LongTermScaler`), the code reading on the
# East US peak day: Reactive 126.1 → 110.4 instance-h (P95 TTFT 15.0 → 35.2 s), LT-UA 115.0 →
# 98.5 (6.2 → 7.1 s), LT-I unchanged (90.1); the paper reading is unaffected.
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

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dir
from servesim.systems.sageserve.sensitivity import LT_STRATEGIES, headroom_at_saving, savings_table

apply_style()
base = run_dir("sageserve", "sensitivity_tables", scale, root)  # the grid gathered (workflow/runs/sageserve.yaml)
runs = pd.read_csv(base / "runs.csv")
hourly = pd.read_csv(base / "runs_hourly.csv")
sav = savings_table(runs)
names = {"reactive": "Reactive", "lt_i": "LT-I", "lt_u": "LT-U", "lt_ua": "LT-UA"}
strategies = [s for s in LT_STRATEGIES if s in set(sav["strategy"])]
readings = list(dict.fromkeys(runs["reading"]))

# %% [markdown]
# ## What we found (measured with this package; seed 0)
#
# **Journal Fig 11's setting** (`--preset peak_llama2`: Llama-2 over the three regions, the whole
# peak day), instance-hours (IW P95 TTFT s), saving vs the same reading's Reactive:
#
# | reading | Reactive | LT-I | LT-UA |
# |---|---|---|---|
# | paper, h = 0.5 (default) | 283.0 (11.1) | | 305.6 (5.6) **+8.0 %** |
# | paper, h = 0.7 | | | 265.0 (6.2) −6.4 % |
# | paper, h = 0.8 | | 243.5 (7.1) −13.9 % | 242.4 (7.2) −14.3 % |
# | paper, h = 0.9 | | | 226.1 (8.7) **−20.1 %** |
# | paper_5030 (code thresholds), h = 0.7 | 338.7 (7.9) | | 267.6 (6.1) **−21.0 %** |
# | code (θ = 225 500 = 0.90 × saturation) | 268.8 (9.3) | 231.3 (7.3) −14.0 % | 243.7 (6.7) −9.4 % |
#
# (paper: Reactive 362.25, LT-I 274.5, LT-UA 277.5; −24.2 / −23.4 %). Per region, our Reactive
# averages 5.8 (East) / 3.5 (Central) / 2.5 (West) instances, 3.9 overall vs the paper's ≈ 5.0
# (362.25 / 72); the `paper_5030` Reactive averages 4.7. West and Central carry 0.4 / 0.6 M prompt
# tok/min at peak against ≈ 0.25 M an instance saturates at, so they sit at the 2-instance floor
# for much of the day under every strategy (West: 46 % of hours for Reactive, 54–79 % for LT):
# a fixed cost that dilutes the relative saving.
#
# **Whole peak day of East US alone** (`--preset day_east`):
#
# | reading | Reactive | LT-I | LT-UA |
# |---|---|---|---|
# | paper, h = 0.5 (default) | 124.8 (17.7) | 144.1 (5.4) **+15.5 %** | 134.1 (5.7) **+7.5 %** |
# | paper, h = 0.6 | | 120.1 (6.1) −3.7 % | 118.8 (6.1) −4.8 % |
# | paper, h = 0.7 | | 106.1 (6.5) −14.9 % | 106.4 (6.5) −14.7 % |
# | paper, h = 0.8 | | 96.1 (8.2) −23.0 % | 96.5 (8.1) −22.6 % |
# | paper_5030, h = 0.7 | 151.8 (9.5) | | 106.6 (6.5) −29.8 % |
# | paper_nodelay, h = 0.7 | 106.9 (11.7) | | 106.4 (6.5) −0.5 % |
# | code | 110.4 (35.2) | 90.1 (8.0) −18.4 % | 98.5 (7.1) −10.7 % |
#
# Quick window (12:00–16:00, the morning ramp and the peak), paper reading: Reactive 33.8 (16.7);
# LT-UA −1.5 / +9.8 / +21.0 / +29.9 % saved at h = 0.5 / 0.6 / 0.7 / 0.8, with P95 TTFT 5.7 / 6.1 /
# 6.8 / **20.4** s: above ≈ 0.75 the rolling forecast's lag on the ramp under-provisions and the
# tail passes Reactive's. With the code's in-sample forecast (reading `code`) θ = 0.9 × saturation
# keeps P95 TTFT at 7.5 s on the same window.
#
# Drivers, in order of effect:
#
# 1. **θ headroom** (the paper's definition is 1.0; below 1 is our sensitivity study). Reactive settles where KV utilisation sits in its
#    30–70 % band (mean ≈ 0.5, ≈ 0.7 × saturation throughput per instance); LT provisions the
#    hour's *maximum* forecast at θ. LT at h = 0.5 runs at KV ≈ 0.3 and spends more than
#    Reactive; LT-UA's saving crosses 18 % near h ≈ 0.86 in Fig 11's setting, ≈ 0.74 for East US
#    alone, ≈ 0.67 on the quick window (metric `headroom_at_18pct_lt_ua_<reading>`).
# 2. **Reactive's own reading** moves the baseline by ±20 %: the code's 0.5/0.25 thresholds
#    raise Reactive by 22 % (LT-UA h = 0.7 then saves 30 %); removing provisioning delays cuts it
#    by 14 % (the saving vanishes); the code's 65/155-s lock after scale-ups makes it cheaper and
#    slower (P95 TTFT 35 s).
# 3. **Forecast**: the rolling 60-min ARIMA lags the diurnal ramp by about an hour (ρ at 13:00 ≈
#    the 12:00 level): LT over-provisions on the afternoon ramp-down (LT-UA h = 0.5 holds 10
#    instances at KV ≈ 0.2 over 16:00–19:00 while Reactive has 6–9) and under-provisions on the
#    morning ramp; the code's in-sample forecast sees the future and has neither.
# 4. **The 2-instance floor** in lightly loaded regions (West, Central here) is common to all
#    strategies and dilutes the relative saving of the 3-region total.
# 5. Start state (LT from 8 instead of 20) changes < 0.5 instance-h on the quick window;
#    Reactive sampling every 1 s instead of 5 s (closer to the paper's per-arrival check) adds
#    1 instance-h and worsens its P95 TTFT to 21.7 s (it thrashes more).
#
# Reactive thrashes: ≈ 30–45 scale-ups and as many scale-ins per hour, KV utilisation swinging
# 0.2 ↔ 1.0 within minutes, queues on saturated instances (P95 TTFT 17.7 s over the day, 45–57 s
# in the morning-ramp hours of East US); LT scales ≈ 1 per hour. So "without hurting tail TTFT"
# holds for every LT run we made except h ≥ 0.8 on the quick window, because our Reactive's tail
# is poor — the paper's Reactive (R: P90 TTFT 18.7 s vs LT-U 14.6 s) is not this far behind.
# Per-region average instances: paper Fig 11 implies Reactive ≈ 5.0 and LT-I ≈ 3.8 per region
# over the day; ours (Fig 11's setting): Reactive 3.9, LT-UA 4.2 (h = 0.5) / 3.7 (h = 0.7) /
# 3.1 (h = 0.9); East US alone: Reactive 5.2, LT-I 6.0 (h = 0.5) / 4.4 (h = 0.7) / 3.75 (code).
#
# Instance-hours are the paper's reading (per endpoint, the maximum count in each 15-min bin,
# summed ÷ 4; samples every 10 s): `instance_hours`, `savings_pct_*`; the exact billed integral
# is beside it (`instance_hours_exact`, `savings_pct_exact_*`). The numbers quoted in this text
# were measured on the exact integral before the paper's reading became the default; the
# metrics and table below are current.
#
# Verdict: in Fig 11's setting the paper's 18–25 % with tail TTFT no worse than Reactive's appears
# (a) in the paper reading with θ ≈ 0.9 × the instance's saturation throughput (LT-UA −20.1 %,
# TTFT ratio 0.79), and (b) in the paper reading with the code's 0.5/0.25 utilisation thresholds
# at h = 0.7 (LT-UA −21.0 %, TTFT ratio 0.78; its instance-hours, Reactive 338.7 and LT-UA 267.6,
# are also the closest to the paper's 362.25 / 277.5). The code reading as we model it gives
# 9–14 %. Nothing reaches 18 % at the default h = 0.5 (the code's 30/60 factor applied to *our*
# measured saturation), where LT spends 8 % more than Reactive.
#
# ## The readings tried: instance-hours and IW P95 TTFT

# %%
table = runs.copy()
table["x_headroom"] = table["headroom"].where(table["headroom"].notna(), table["theta_equiv_headroom"])
table = table.merge(sav[["reading", "strategy", "x_headroom", "savings_pct", "savings_pct_exact", "ttft_p95_ratio"]],
                    on=["reading", "strategy", "x_headroom"], how="left")
table = table.sort_values(["reading", "strategy", "x_headroom"], na_position="first").reset_index(drop=True)
cols = ["reading", "strategy", "headroom", "theta_equiv_headroom", "instance_hours", "instance_hours_exact",
        "mean_instances_per_endpoint", "ttft_p50", "ttft_p95", "e2e_p95", "savings_pct", "savings_pct_exact",
        "ttft_p95_ratio"]
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
        metrics[f"instance_hours_exact_reactive_{r}"] = float(rx.loc[r, "instance_hours_exact"])
        metrics[f"ttft_p95_reactive_{r}"] = float(rx.loc[r, "ttft_p95"])
        metrics[f"mean_instances_reactive_{r}"] = float(rx.loc[r, "mean_instances_per_endpoint"])
for (r, s), g in sav.groupby(["reading", "strategy"]):
    fixed = g["headroom"].isna().all()
    for _, row in g.iterrows():
        tag = "" if fixed else "_" + _h(row["x_headroom"])
        metrics[f"savings_pct_{s}_{r}{tag}"] = float(row["savings_pct"])
        metrics[f"savings_pct_exact_{s}_{r}{tag}"] = float(row.get("savings_pct_exact", float("nan")))
        metrics[f"ttft_p95_{s}_{r}{tag}"] = float(row["ttft_p95"])
        metrics[f"ttft_p95_ratio_{s}_{r}{tag}"] = float(row["ttft_p95_ratio"])
        metrics[f"mean_instances_{s}_{r}{tag}"] = float(row["mean_instances_per_endpoint"])
    if fixed:
        metrics[f"theta_equiv_headroom_{r}"] = float(g["theta_equiv_headroom"].iloc[0])
    else:
        metrics[f"headroom_at_{int(target_saving_pct)}pct_{s}_{r}"] = headroom_at_saving(g, target_saving_pct)
    ok = g[g["ttft_p95_ratio"] <= 1.0]
    metrics[f"best_savings_pct_ttft_ok_{s}_{r}"] = float(ok["savings_pct"].max()) if len(ok) else float("nan")
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
