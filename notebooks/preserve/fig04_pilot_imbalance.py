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
# # PreServe Fig 4 — the pilot: LR and MU leave single instances overloaded (§3.2.2)
#
# Four LLaMA-2-7B instances on four A40s serve ShareGPT at a fixed QPS for about five minutes
# under least requests (LR) and minimum use (MU, reading GPU utilisation and KV usage every 1 s as
# Fig 9's MU does); per instance, the queued prompt tokens, the KV
# usage and the normalised latency (E2E / output tokens of the requests finishing there). The paper: under LR instance 1 overloads at **2 min** and again
# at **4 min**; under MU instance 2 at **3 min** and instance 1 at **4 min**.
#
# **What runs.** The declared runs `fig04/{lr,mu}` (the Fig 9 sweep CLI at one QPS, 10.5 [A]: the
# pilot states none; §5.4 names 10.5 QPS as the load where LR imbalances on the same 4 x 7B
# testbed), sampled every second. Overload
# reading: KV usage > 95 % while prompts queue on the instance; an episode's minute is its start.
# Instance numbers are arbitrary in simulation, and the exact minutes depend on the arrival sample.
#
# **Null.** The same pilot with PreServe's Eq. 1 router in LR's / MU's place (run `fig04/preserve`,
# the `preserve_*` keys): the pilot claims that LR's and MU's signals overload single instances;
# if the load-aware router overloads them at the same minutes, the overload is the load's, not the
# routers', and the claims are WEAK (workflow/claims/README.md).

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis import preserve_routing as pr
from servesim.analysis import runs
from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
series = {}
for r in ("lr", "mu", "preserve"):   # preserve: the claims' null (PreServe's router in LR's / MU's place)
    d = runs.run_dir("preserve", f"fig04/{r}", scale, root)
    series[r] = pd.read_csv(d / "timeseries.csv")
metrics = pr.fig04_metrics(series)
pd.Series(metrics)

# %%
fig, axes = plt.subplots(3, len(series), figsize=(4.5 * len(series), 7), sharex=True, squeeze=False)
for c, r in enumerate(series):
    ts = series[r]
    for j, g in ts.groupby("instance"):
        axes[0][c].plot(g.time_s / 60, g.queued_prompt_tokens, lw=0.8, label=f"instance {j + 1}")
        axes[1][c].plot(g.time_s / 60, 100 * g.kv_usage, lw=0.8)
        # normalised latency of the requests finishing each 10 s (the samples' 1-s bins are sparse)
        nl = g.set_index("time_s").norm_latency_s
        nl = nl.groupby((nl.index // 10) * 10).mean()
        axes[2][c].plot(nl.index / 60, nl.to_numpy(), lw=0.8)
    axes[2][c].axhline(0.2, color="k", ls="--", lw=0.6)
    axes[2][c].set(xlabel="minutes", ylabel="norm. latency (s/token)")
    ep = pr.overload_episodes(ts)
    for _, e in ep.iterrows():
        axes[1][c].axvspan(e.start_s / 60, e.end_s / 60, color="red", alpha=0.1)
    axes[0][c].set(title=f"{r.upper()}" + (" (the null)" if r == "preserve" else ""), ylabel="queued prompt tokens")
    axes[1][c].set(ylabel="KV usage (%)")
axes[0][0].legend(fontsize=7)
fig.tight_layout()
fig

# %%
out = FigureOutputs("preserve", "fig04_pilot_imbalance", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.concat([s.assign(router=r) for r, s in series.items()], ignore_index=True))
out.write_metrics(metrics)
