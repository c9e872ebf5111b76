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
# # SageServe — predicted vs measured batch execution time (journal Fig 9, conference Fig 3)
#
# SageServe validates its simulator's per-iteration time model on a real model instance: prompt
# (prefill) time against prompt size (left panel, 10–10⁵ tokens, 0–20 s) and decode iteration
# time against "decode size" (right panel, 5–25 ms). The caption reports **R² = 0.99 (prefill)
# and 0.83 (decode)**, the text **MAPE < 3 %** on an **80:20 train:test split** (J §7.1).
#
# The authors' repository ships two files that match this figure and are used nowhere else:
# `llama-3.1-8B-tp-4-test.csv` (prompt length vs measured prefill time, Llama-3.1-8B, TP 4, vLLM
# on A100) and `decode_data.csv` (100,000 consecutive decode iteration times). We fit servesim's
# few-coefficient step-time model on 80 % of each and score it on the other 20 %:
#
# * prefill: $t = a_p + b\cdot L + c\cdot L^2$ (one prompt of $L$ tokens: prefill_tokens = L,
#   prefill_ctx = L²);
# * decode: $t = a_d + c\cdot \text{ctx}$. `decode_data.csv` records no batch composition; we read
#   it as one sequence decoding, so iteration $i$ has context $c_0 + i$ ($c_0$ is absorbed by the
#   intercept). Its first 16 iterations are engine warm-up (0.107 s, then 17–300 µs: no GPU work)
#   and are dropped (parameter `drop_warmup`; the metrics with them kept are reported too).
#
# As a cross-source check, the left panel also shows SageServe's own database prediction: the
# Splitwise-style table `Llama-3.1-8B-tp-4.csv` (same model and TP) interpolated over prompt tokens.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders (this figure is the same at both)
root = None         # project root; None finds it from the working directory
seed = 0            # seeds the 80:20 split
test_frac = 0.2     # held-out fraction (the paper: 80:20)
drop_warmup = 16    # decode iterations treated as engine warm-up

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.perf import build, fit, measurements as M, sources

apply_style()
pre = sources.sageserve_prefill_test()
dec = sources.sageserve_decode(drop_warmup=drop_warmup)
dec_all = sources.sageserve_decode(drop_warmup=0)
print(f"prefill: {len(pre)} measurements, prompt {pre.prefill_tokens.min():.0f}-{pre.prefill_tokens.max():.0f} tokens")
print(f"decode: {len(dec)} iterations after dropping {drop_warmup} warm-up iterations")

# %% [markdown]
# ## Fit on 80 %, score on the held-out 20 %

# %%
def held_out(df, seed):
    train, test = M.split(df, test_frac, seed)
    model = fit(train)
    pred = model.step_time(*(test[c].to_numpy(float) for c in M.AGGREGATES))
    return model, test.assign(pred_s=pred)


pre_model, pre_test = held_out(pre, seed)
dec_model, dec_test = held_out(dec, seed)
_, dec_test_all = held_out(dec_all, seed)

# SageServe's own database (Llama-3.1-8B, TP 4) as a table interpolated over prompt tokens
db = build({"backend": "splitwise", "file": "Llama-3.1-8B-tp-4.csv"}, model="llama-3.1-8b", hardware="a100-80gb", tp=4)
db_pred = db.step_time(*(pre[c].to_numpy(float) for c in M.AGGREGATES))
metrics = {
    "prefill_r2": M.r2(pre_test.step_s, pre_test.pred_s),
    "prefill_mape_pct": M.mape(pre_test.step_s, pre_test.pred_s),
    "decode_r2": M.r2(dec_test.step_s, dec_test.pred_s),
    "decode_mape_pct": M.mape(dec_test.step_s, dec_test.pred_s),
    "decode_r2_with_warmup": M.r2(dec_test_all.step_s, dec_test_all.pred_s),
    "decode_mape_pct_with_warmup": M.mape(dec_test_all.step_s, dec_test_all.pred_s),
    "prefill_db_r2": M.r2(pre.step_s, db_pred),
    "prefill_db_mape_pct": M.mape(pre.step_s, db_pred),
    "prefill_db_out_of_grid_frac": db.out_of_grid / db.calls,
    "prefill_n_test": len(pre_test),
    "decode_n_test": len(dec_test),
}
# the claims' null: the training-mean predictor (every held-out step takes the training split's mean
# time, no batch-time model), on the same split and through the same R² / MAPE code
for phase, df in (("prefill", pre), ("decode", dec)):
    train, test = M.split(df, test_frac, seed)
    flat = np.full(len(test), float(train.step_s.mean()))
    metrics[f"{phase}_r2_train_mean"] = M.r2(test.step_s, flat)
    metrics[f"{phase}_mape_pct_train_mean"] = M.mape(test.step_s, flat)
pd.Series(metrics).round(4)

# %% [markdown]
# ## The figure

# %%
fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.5, 3.0))
a1.scatter(pre.prefill_tokens, pre.step_s, s=4, color="0.6", label="measured (all)")
a1.scatter(pre_test.prefill_tokens, pre_test.pred_s, s=5, color="tab:red", label="predicted (held-out)")
order = np.argsort(pre.prefill_tokens.to_numpy())
a1.plot(pre.prefill_tokens.to_numpy()[order], db_pred[order], color="tab:blue", lw=1, label="SageServe DB table")
a1.set_xscale("log")
a1.set_xlabel("prompt size (tokens)")
a1.set_ylabel("time (s)")
a1.set_title(f"prefill: R² {metrics['prefill_r2']:.3f}, MAPE {metrics['prefill_mape_pct']:.1f}%", fontsize=8)
a1.legend(fontsize=7)
a2.scatter(dec.decode_ctx, dec.step_s * 1e3, s=1, color="0.6", label="measured (all)", rasterized=True)
a2.scatter(dec_test.decode_ctx, dec_test.pred_s * 1e3, s=1, color="tab:red", label="predicted (held-out)", rasterized=True)
a2.set_xscale("log")
a2.set_xlabel("decode size (iteration index + 1)")
a2.set_ylabel("time (ms)")
a2.set_title(f"decode: R² {metrics['decode_r2']:.3f}, MAPE {metrics['decode_mape_pct']:.1f}%", fontsize=8)
a2.legend(fontsize=7, markerscale=5)
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours
#
# | | paper | ours (held-out 20 %) |
# |---|---|---|
# | prefill R² | 0.99 | see `prefill_r2` above |
# | decode R² | 0.83 | see `decode_r2` above |
# | MAPE | < 3 % | `prefill_mape_pct`, `decode_mape_pct` |
#
# The decode R² depends on what "decode size" is: read as a growing context, the iteration time
# rises almost linearly (6.5 → 14.6 ms over 100k iterations) and a linear model explains nearly
# all of its variance, so our R² is higher than the paper's 0.83; the paper's predictor (Splitwise
# interpolation over a batch-size axis) cannot use the context and explains less. Keeping the
# warm-up iterations raises the decode MAPE (`decode_mape_pct_with_warmup`): 17-µs no-op
# iterations predicted at ~6.5 ms are errors of several hundred percent each.

# %%
data = pd.concat([
    pre_test.assign(phase="prefill", x=pre_test.prefill_tokens)[["phase", "x", "step_s", "pred_s"]],
    dec_test.assign(phase="decode", x=dec_test.decode_ctx)[["phase", "x", "step_s", "pred_s"]],
], ignore_index=True)
out = FigureOutputs("sageserve", "fig09_batch_time", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
