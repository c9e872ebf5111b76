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
# # SageServe Fig 17 — forecasters: MAPE vs training time
#
# Journal App. B: ARIMA and a moving average trained on windows of 60/90/120/180 minutes, TVAR
# and an HMM on 60/180, each forecasting the next 60 minutes of tokens per minute; MAPE
# (10–40 %) against training time (0–8 s). The paper: TVAR and HMM are more accurate but slower
# to train, the moving average fast but inaccurate; ARIMA with window 60 is chosen.
#
# **Series.** The O365 traces are not public. We forecast the IW (IW-F + IW-N) prompt tokens per
# minute of Llama-2-70B in East US from the synthetic O365-like week
# (`servesim.workload.sageserve_week`), every hour, on the same origins for every method
# (after the longest window). Our implementations: statsmodels ARIMA(3,1,2) (the authors' order),
# flat moving average, time-varying AR(4) by recursive least squares with forgetting 0.98, and a
# 3-state Gaussian HMM fitted by Baum–Welch (numpy). Training times are wall-clock on this
# machine (single-threaded BLAS) and vary from run to run; the MAPEs are deterministic.
#
# The evaluation runs in the workflow's run `forecast` (workflow/runs/sageserve.yaml)
# (`python -m servesim.forecast.evaluate`); this notebook reads its CSV.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"
root = None         # project root; None finds it from the working directory
seed = 0
eval_csv = None     # None: run `forecast`'s fig17_eval.csv (workflow/runs/sageserve.yaml)

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dir

apply_style()
path = Path(eval_csv) if eval_csv else run_dir("sageserve", "forecast", scale, root) / "fig17_eval.csv"
summary = pd.read_csv(path)
summary

# %%
fig, ax = plt.subplots()
markers = {"arima": "o", "moving_average": "s", "tvar": "^", "hmm": "D"}
labels = {"arima": "ARIMA", "moving_average": "Moving Avg.", "tvar": "TVAR", "hmm": "HMM"}
for m, g in summary.groupby("method", sort=False):
    ax.plot(g["train_s_mean"], g["mape_pct"], marker=markers.get(m, "x"), ls="", label=labels.get(m, m))
    for _, r in g.iterrows():
        ax.annotate(str(int(r["window"])), (r["train_s_mean"], r["mape_pct"]), fontsize=6,
                    xytext=(3, 3), textcoords="offset points")
ax.set(xlabel="Training time (s)", ylabel="Mean absolute percentage error (%)", xscale="symlog")
ax.set_xscale("symlog", linthresh=1e-3)
ax.legend()

# %%
short = {"arima": "arima", "moving_average": "ma", "tvar": "tvar", "hmm": "hmm"}
metrics = {"series": f"{summary['model'].iloc[0]} {summary['region'].iloc[0]} IW prompt tokens/min, "
                     f"sageserve_week scale {summary['scale'].iloc[0]}, {summary['days'].iloc[0]} days",
           "n_origins": int(summary["n_origins"].iloc[0])}
for _, r in summary.iterrows():
    k = f"{short.get(r['method'], r['method'])}_w{int(r['window'])}"
    metrics[f"mape_pct_{k}"] = float(r["mape_pct"])
    metrics[f"wape_pct_{k}"] = float(r["wape_pct"])
    metrics[f"train_s_{k}"] = float(r["train_s_mean"])
metrics

# %% [markdown]
# Paper vs ours: see the metrics above. The accuracy ordering is the reproducible part; the
# training-time ordering depends on how TVAR and the HMM are implemented (the paper does not
# say): our recursive-least-squares TVAR trains in about a millisecond, far faster than ARIMA.

# %% [markdown]
# **The synthetic week's calibration target (spec §1.4).** The authors' notebook fits
# ARIMA(3,1,2) once on each whole week of IW prompt tokens per minute per (model, region) and
# reports the in-sample one-step error 100·mean|e|/mean(actual): 16–24 % over the 12 series
# (mean 19.96 %). The generator's per-minute noise is fitted to that mean
# (`gen_sageserve.MINUTE_NOISE_READINGS["arima_fit"]`), so meeting it is a calibration check, not
# a reproduction. Run `forecast_onestep/<reading>` measures it on the week at the authors' volume,
# for the fitted noise and the earlier hand-set one (`smooth_v1`).

# %%
from servesim.analysis.runs import load_summary, run_dirs

for reading, d in run_dirs("sageserve", "forecast_onestep", scale, root).items():
    s = load_summary("sageserve", f"forecast_onestep/{reading}", scale, root)
    for k in ("mean", "min", "max"):
        metrics[f"arima_onestep_error_pct_{k}_{reading}"] = s[f"error_pct_{k}"]
    print(reading, s["minute_noise_sigmas"], {k: round(s[f"error_pct_{k}"], 2) for k in ("mean", "min", "max")})
    print(pd.read_csv(d / "onestep_error.csv").round(2).to_string(index=False))
metrics["arima_onestep_error_pct_mean"] = metrics.get("arima_onestep_error_pct_mean_arima_fit", float("nan"))

# %%
out = FigureOutputs("sageserve", "fig17_forecasters", scale=scale, root=root)
out.save_figure(fig)
out.write_data(summary)
out.write_metrics(metrics)
