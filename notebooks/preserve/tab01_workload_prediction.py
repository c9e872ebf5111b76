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
# # PreServe Table 1 — 10-minute workload prediction: mLSTM vs ARIMA, ETS and Prophet
#
# PreServe §5.2.1, Table 1: mean / max absolute percentage error (APE) of the predicted prompt and
# response tokens per 10-minute window of the Azure code and chat services, test half of one
# week (1:1 chronological split). The paper: PreServe's mLSTM **7.74 / 8.45 / 4.15 / 4.30 %** mean
# APE (code prompt, code response, chat prompt, chat response), below Prophet, ETS and ARIMA in
# every column (ARIMA up to **91 %** max APE).
#
# **What runs.** The declared run `tab01` (`python -m servesim.systems.preserve.table1`): the Krause
# et al. multiplicative LSTM trained once on the first half and run online over the second by
# Alg. 2 (two-step forecasts, truth replacing each forecast as its window ends), against ARIMA
# (order by AIC), Holt-Winters ETS (period 144, additive season; full scale adds the multiplicative
# reading `ets_mul`, shown in the tables) and Prophet (daily term; weekly only by Prophet's own rule,
# which leaves it out under two weeks of data: the training half is 3.5 days), each **fit once** on
# the training half and forecasting the whole test half (the protocol the paper's baseline APEs
# imply: row `once`, claim 42a) and, as a second reading, **rolling** two steps ahead with the truth
# (`*_rolling`, the same information PreServe gets: claim 42a's reading `rolling`). Full scale adds other
# history lengths k and daily retraining.
#
# **Data substitute.** The Azure 2024 weeks are not reachable offline: the windows come from the
# synthetic weeks of `servesim.workload.azure_week`, so absolute APEs describe its noise model
# (those claims are NOT-REPRODUCIBLE); the orderings are what this table checks.
#
# **Null.** Every measured claim here is also checked with the last-value forecaster in PreServe's
# place (`last_value`: the truth of window j-2, under PreServe's own two-step protocol and the same
# APE code): a claim it passes too is WEAK, not a reproduction (workflow/claims/README.md).

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the run read
root = None         # project root; None finds it from the working directory
seed = 0
protocol = "once"   # the baselines drawn in the figure: "once" (the paper's, what the claims read) or "rolling"

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import runs
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
run_dir = runs.run_dir("preserve", "tab01", scale, root)
table = pd.read_csv(run_dir / "table1.csv")
preds = pd.read_csv(run_dir / "table1_predictions.csv")
m = json.loads((run_dir / "table1_metrics.json").read_text())
if protocol not in ("once", "rolling"):
    raise ValueError(f"protocol={protocol!r}: expected 'once' or 'rolling'")
cols = [(s, x) for s in ("code", "chat") for x in ("prompt", "response")]
table.pivot_table(index=["method", "protocol"], columns=["service", "series"], values="mean_ape_pct").round(2)

# %% [markdown]
# Mean / max APE per column (rows: methods; `_rolling` is the second protocol reading):

# %%
table.pivot_table(index="method", columns=["service", "series"], values=["mean_ape_pct", "max_ape_pct"]).round(1)

# %%
methods = [x for x in ("preserve", "prophet", "ets", "arima") if x in set(table.method)]
COLORS = {"preserve": "C0", "prophet": "C1", "ets": "C2", "arima": "C3"}   # one colour per method in every panel
fig, axes = plt.subplots(2, 3, figsize=(13, 6), gridspec_kw={"width_ratios": [2, 2, 1.3]})
for ax, (svc, ser) in zip([axes[0][0], axes[0][1], axes[1][0], axes[1][1]], cols):
    p = preds[(preds.service == svc) & (preds.series == ser)]
    ax.plot(p.window, p.actual, color="k", lw=1.0, label="actual")
    for meth in methods:
        name = meth if meth == "preserve" or protocol == "once" else f"{meth}_rolling"
        if name in p:
            ax.plot(p.window, p[name], lw=0.8, label=name, color=COLORS[meth])
    ax.set_title(f"{svc} {ser} tokens / 10 min (test half)", fontsize=9)
    ax.set_xlabel("window")
axes[0][0].legend(fontsize=7)
for ax, stat in zip((axes[0][2], axes[1][2]), ("mean_ape_pct", "max_ape_pct")):
    t = table[table.protocol.isin(["online", protocol])]
    t = t[t.method.isin([x if x == "preserve" or protocol == "once" else f"{x}_rolling" for x in methods])]
    piv = t.pivot_table(index=["service", "series"], columns="method", values=stat)
    piv.plot.bar(ax=ax, width=0.8, legend=stat == "mean_ape_pct",
                 color=[COLORS[c.removesuffix("_rolling")] for c in piv.columns])
    # log scale: a baseline that drifts (ETS on the code series) reaches 1,000 % and more, which on
    # a linear axis hides the few-percent bars the table compares
    ax.set_yscale("log")
    ax.set_ylabel(stat.replace("_pct", " (%, log)").replace("_", " "))
    ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    if ax.get_legend():
        ax.legend(fontsize=6)
fig.tight_layout()
fig

# %%
def best_all_columns(metrics: dict, suffix: str = "", baselines=("arima", "ets", "prophet"),
                     method: str = "preserve") -> bool | None:
    """True if ``method``'s mean and max APE are below every baseline's (``<name><suffix>``) in all
    four columns, False if not, None when a baseline did not run (nothing to compare: NOT-CHECKED)."""
    wins = []
    for svc, ser in cols:
        for stat in ("mean", "max"):
            mine = metrics.get(f"ape_{stat}_{method}_{svc}_{ser}")
            for b in baselines:
                theirs = metrics.get(f"ape_{stat}_{b}{suffix}_{svc}_{ser}")
                if mine is None or theirs is None:
                    return None
                wins.append(mine < theirs)
    return all(wins)


metrics = {k: v for k, v in m.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
metrics.update({k: v for k, v in m.items() if isinstance(v, bool)})
# every key the claims name, at every scale (NaN where the scale ran no such method)
for meth in ("preserve", "last_value", "arima", "ets", "prophet"):
    for svc, ser in cols:
        for stat in ("mean", "max"):
            metrics.setdefault(f"ape_{stat}_{meth}_{svc}_{ser}", float("nan"))
for svc in ("code", "chat"):
    metrics.setdefault(f"preserve_vs_prophet_{svc}_pct", float("nan"))
metrics["preserve_best_all_columns"] = best_all_columns(m)                    # the paper's protocol
metrics["preserve_best_all_columns_rolling"] = best_all_columns(m, "_rolling")  # baselines rolling too
# the claims' null: the last-value forecaster in PreServe's place (same protocol, same APE code)
metrics["last_value_best_all_columns"] = best_all_columns(m, method="last_value")
metrics["last_value_best_all_columns_rolling"] = best_all_columns(m, "_rolling", method="last_value")
for svc in ("code", "chat"):
    lv = [metrics[f"ape_mean_last_value_{svc}_{x}"] for x in ("prompt", "response")]
    pr_ = [metrics[f"ape_mean_prophet_{svc}_{x}"] for x in ("prompt", "response")]
    metrics[f"last_value_vs_prophet_{svc}_pct"] = 100.0 * (1.0 - np.mean(lv) / np.mean(pr_))  # NaN without Prophet
metrics["prophet_ran"] = float(m.get("prophet_not_checked") is None)
out = FigureOutputs("preserve", "tab01_workload_prediction", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table.drop(columns=["reading"]))
out.write_metrics(metrics)
pd.Series({k: v for k, v in metrics.items() if "preserve" in k})
