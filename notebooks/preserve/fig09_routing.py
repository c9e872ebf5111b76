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
# # PreServe Fig 9 — routing four LLM instances at increasing QPS (§5.4, RQ3)
#
# Four LLaMA-2-7B instances (one A40 each) and four LLaMA-2-13B instances (TP = 2) serve ShareGPT
# requests at Poisson QPS for 10 minutes under four routers: round robin (RR), least requests
# (LR), minimum use (MU: 0.5 x GPU busy fraction + 0.5 x KV usage, both read every 1 s as a router
# polling vLLM's `/metrics` and NVML would, held between reads; `--mu-kv oracle` gives it the
# engine's exact values) and PreServe's Eq. 1 (queued prompt tokens + predicted decode tokens + the
# anticipated KV overflow over the next 100 iterations). The paper: below 9.3 QPS the routers are comparable; at 10.5 QPS (7B) LR, the second
# best, has mean TTFT **7.6 s** and P99 normalised latency **1.1 s** against PreServe's **2.2 s**
# and **0.45 s** (−71.1 %, −59.1 %), SLO attainment **88.8 → 98.8 %** (−89.3 % violations); 13B:
# P99 normalised latency −**45.8 %**, violations −**61.8 %** against the second-best router.
#
# **What runs.** The declared runs `fig09/{model}/{router}` (`python -m
# servesim.systems.preserve.routing_sweep`), one per model and router over the QPS grid; requests
# and PreServe's predicted lengths come from the `tab02` run's cached test-split predictions (at
# quick scale the frozen-encoder ablation's 130 test pairs, drawn with replacement). Simulated
# engine: vLLM 0.6 V0 scheduling, KV capacity from the A40's 48 GB, 7B step times from Vidur's A40
# profile, 13B by the roofline with PCIe all-reduce. **Calibration, not results:** one per-sequence
# CPU overhead is set so that LR's 7B knee falls between 9.3 and 10.5 QPS (the spec's anchor); the
# isolated normalised latency (SLO = 3 x isolated, §5.1) is reported as a check of that
# calibration. PreServe pays the stated 45.6 ms dispatch overhead in its TTFT and E2E.
#
# **Reading `true-lengths`** (dashed grey; runs `fig09truelen/{model}`, metrics prefixed `truelen_`):
# PreServe's router told each request's true output length, on the same requests and arrivals: what
# Eq. 1 does with a perfect length predictor. It is not the paper's system; the claims judge the
# predicted lengths and report this reading beside them.
#
# **Readings of what MU reads** (paper scale; dotted; runs `fig09mu/{model}/{read}`): the paper does
# not say how its MU reads the engines. `mu-oracle` (prefix `muoracle_`) gives MU the engine's exact,
# live values at every decision, which no router outside vLLM has; `mu-scrape15` and `mu-scrape30`
# (prefixes `mu15_`, `mu30_`) read them every 15 s (Prometheus' example scrape interval) or 30 s
# (vLLM production stack's engine-stats interval). Each swaps MU's rows in the same metrics; the
# claims against the best baseline report them beside the default.

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis import preserve_routing as pr
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
pts, summ = pr.load("fig09/*", scale, root)
cur = pr.curves(pts)
# the reading `true-lengths`: PreServe's router told each request's true output length (runs fig09truelen/*)
cur_true = pr.curves(pr.load("fig09truelen/*", scale, root)[0])
# the readings of what MU reads (runs fig09mu/*; paper scale only): curves by read
cur_mu = pr.load_mu_readings(scale, root)
cur.round(3)

# %%
panels = [("ttft_mean_s", "mean TTFT (s)"), ("ttft_p99_s", "P99 TTFT (s)"), ("norm_mean_s", "mean norm. latency (s/token)"),
          ("norm_p99_s", "P99 norm. latency (s/token)"), ("slo_attainment_pct", "SLO attainment (%)")]
models = [m for m in ("7b", "13b") if m in set(cur.model)]
fig, axes = plt.subplots(len(models), len(panels), figsize=(3.2 * len(panels), 2.8 * len(models)), squeeze=False)
names = {"rr": "RR", "lr": "LR", "mu": "MU", "preserve": "PreServe"}
mu_labels = {"oracle": "MU, exact live reads", "s15": "MU, read every 15 s", "s30": "MU, read every 30 s"}
for i, mo in enumerate(models):
    for ax, (col, label) in zip(axes[i], panels):
        for r in pr.ROUTERS:
            c = cur[(cur.model == mo) & (cur.router == r)]
            if len(c):
                ax.plot(c.qps, c[col], marker="o", ms=3, label=names[r])
        c = cur_true[cur_true.model == mo]
        ax.plot(c.qps, c[col], ls="--", color="grey", lw=1, label="PreServe, true lengths")
        for (read, label_mu), ls in zip(mu_labels.items(), (":", (0, (1, 3)), (0, (3, 1, 1, 1)))):
            if read in cur_mu:
                c = cur_mu[read][cur_mu[read].model == mo]
                ax.plot(c.qps, c[col], ls=ls, color="tab:green", lw=1, label=label_mu)
        if col != "slo_attainment_pct":
            ax.set_yscale("log")
        ax.set(xlabel="QPS", ylabel=label, title=f"LLaMA-2-{mo.upper()}")
axes[0][0].legend(fontsize=7)
fig.tight_layout()
fig

# %%
metrics = {**pr.fig09_metrics(cur, summ), **pr.true_lengths_metrics(cur, cur_true, summ),
           **pr.mu_reading_metrics(cur, cur_mu, summ)}
out = FigureOutputs("preserve", "fig09_routing", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.concat([cur, cur_true.assign(router="preserve_truelen")]
                         + [c.assign(router=f"mu_{read}") for read, c in cur_mu.items()], ignore_index=True))
out.write_metrics(metrics)
pd.Series(metrics)
