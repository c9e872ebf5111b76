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
# # OServe — Fig 7: per-type arrival prediction (§5.1, §6.3)
#
# Per type, the requests of each 1-minute span are counted; an LSTM reads the last 50 spans of the
# 4 counts and predicts the next span.
# Baselines (§6.3): the 50-span moving average, and the same LSTM on the type-agnostic total, split
# by the previous span's mix. RRMSE = RMSE / mean(actual) per type, averaged over types (the paper
# does not define it). Training data: two weeks of synthetic per-minute type counts
# (`gen_oserve.type_counts`; the paper's Azure 2024 weeks are not reachable), 90/10 split; the
# T1/T2 traces are scored too. The throughput with each predictor (§6.3: 14.2 vs 10.1 req/s) comes
# from the online runs driven by the LSTM and by the moving average, where this scale has them.
#
# | quantity | paper |
# |---|---|
# | LSTM RRMSE | 5.045 % |
# | moving average RRMSE | 43.375 % |
# | type-agnostic LSTM RRMSE | ~40 % ("fails to converge") |
# | inference | < 30 ms |
# | throughput LSTM vs MA (OPT-30B, 8 GPUs, T1) | 14.2 vs 10.1 req/s |
#
# **Request types.** The paper types requests by k-means on (input, output) length (§5.1, S1). Ours:
# the two-week training and test series are drawn as per-type counts directly (`type_counts`: no
# lengths, so no split applies to them); the T1/T2 traces the predictor is scored on, and the online
# runs `online/T1/opt-30b/pred-*`, draw each type's lengths from the **k-means** split of the Azure
# 2023 pool (the predictor fixes it; `online.py --types` defaults to `kmeans` and these runs do not
# set it): as the paper, and as the scheduler's own runs (Fig 16, Table 3: `search.py --types`,
# default `kmeans`). The split each run used is read back from its summary.json below.

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis import runs as R
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
d = R.run_dir("oserve", "fig07/predictor", scale, root)
summ = json.loads((d / "summary.json").read_text())
pred = pd.read_csv(d / "predictions.csv")
err = pd.read_csv(d / "rrmse.csv")
types = summ["types"]
err.pivot_table(index="predictor", columns="source", values="rrmse_mean")

# %%
week = pred[(pred.source == "azure_week_test") & (pred.predictor == "lstm")]
fig, axes = plt.subplots(2, len(types), figsize=(3.2 * len(types), 5.0), squeeze=False)
for j, t in enumerate(types):
    ax = axes[0][j]
    ax.plot(week.span, week[f"actual_{t}"], lw=0.6, color="0.5", label="actual")
    ax.plot(week.span, week[f"pred_{t}"], lw=0.8, color="C0", label="LSTM")
    ax.set_title(f"{t}: last test day", fontsize=9)
    ax.set_xlabel("minute")
    ax = axes[1][j]
    t1 = pred[pred.source == "T1"]
    ax.plot(t1[t1.predictor == "lstm"].span, t1[t1.predictor == "lstm"][f"actual_{t}"], color="0.5", lw=0.8, label="actual")
    for p, c in (("lstm", "C0"), ("moving_average", "C1"), ("aggregate_lstm", "C2")):
        s = t1[t1.predictor == p]
        ax.plot(s.span, s[f"pred_{t}"], color=c, lw=0.8, label=p)
    ax.set_title(f"{t}: trace T1", fontsize=9)
    ax.set_xlabel("minute")
axes[0][0].set_ylabel("requests / span")
axes[1][0].set_ylabel("requests / span")
axes[1][0].legend(fontsize=6)
fig.tight_layout()
fig

# %%
def online_throughput(predictor: str) -> float:
    """OServe's throughput (req/s) on T1 with OPT-30B / 8 GPUs driven by ``predictor`` (NaN: no run here)."""
    name = f"online/T1/opt-30b/pred-{predictor}"
    if name not in R.declared("oserve", scale, root):
        return float("nan")
    s = R.load_summary("oserve", name, scale, root)
    return float(s["systems"]["oserve"]["throughput_rps"])


def ratio(a, b) -> float:
    return float(a / b) if b is not None and a is not None and b > 0 else float("nan")


def online_type_method(predictor: str) -> str | None:
    """The request-type split (``kmeans`` or ``quadrant``) the online run driven by ``predictor`` used."""
    name = f"online/T1/opt-30b/pred-{predictor}"
    if name not in R.declared("oserve", scale, root):
        return None
    return R.load_summary("oserve", name, scale, root).get("type_method")


type_methods = {"fig07/predictor": summ.get("type_method"),
                **{f"online/T1/opt-30b/pred-{p}": online_type_method(p) for p in ("lstm", "moving_average", "last_value")}}
print("request-type split per run:", type_methods)


test = summ["rrmse_test_pct"]
thr_lstm, thr_ma = online_throughput("lstm"), online_throughput("moving_average")
# the claims' null (workflow/claims/oserve.yaml): the last-value predictor (next span = this span)
# in the LSTM's place, scored and served through the same code
thr_last = online_throughput("last_value")
rr_last = test.get("last_value", float("nan"))
metrics = {
    "lookback_spans": summ["lookback_spans"],
    "horizon_s": summ["horizon_s"],
    "train_fraction": summ["train_fraction"],
    "rrmse_lstm_pct": test["lstm"],
    "rrmse_ma_pct": test["moving_average"],
    "rrmse_aggregate_lstm_pct": test["aggregate_lstm"],
    "lstm_inference_ms": summ["inference_ms"]["lstm"],
    "throughput_lstm_rps": thr_lstm,
    "throughput_ma_rps": thr_ma,
    "throughput_degradation_ma_pct": 100.0 * (thr_lstm / thr_ma - 1.0) if thr_ma > 0 else float("nan"),
    # "far more accurate" (§6.3): the baselines' RRMSE over the LSTM's (the paper: 43.375 / 5.045 = 8.6,
    # about 40 / 5.045 = 7.9 for the type-agnostic LSTM)
    "rrmse_ratio_ma_over_lstm": ratio(test["moving_average"], test["lstm"]),
    "rrmse_ratio_aggregate_over_lstm": ratio(test["aggregate_lstm"], test["lstm"]),
    # nulls: the last-value predictor in the LSTM's place
    "rrmse_last_value_pct": rr_last,
    "rrmse_ratio_ma_over_last_value": ratio(test["moving_average"], rr_last),
    "rrmse_ratio_aggregate_over_last_value": ratio(test["aggregate_lstm"], rr_last),
    "throughput_last_value_rps": thr_last,
    "throughput_degradation_ma_vs_last_value_pct": 100.0 * (thr_last / thr_ma - 1.0) if thr_ma > 0 else float("nan"),
    **{f"rrmse_{k.replace('/', '_').lower()}_pct": v for k, v in summ["rrmse_trace_pct"].items()},
    # the request-type split of the scored traces and of the online runs (the paper: k-means)
    "type_method_predictor": type_methods["fig07/predictor"],
    "type_method_online": (",".join(sorted({m for k, m in type_methods.items() if k.startswith("online/") and m})) or None),
}
out = FigureOutputs("oserve", "fig07_prediction", scale=scale, root=root)
out.save_figure(fig)
out.write_data(err)
out.write_metrics(metrics)
pd.Series(metrics)
