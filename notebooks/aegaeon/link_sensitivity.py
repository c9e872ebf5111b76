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
# # Aegaeon — the host link's bandwidth, swept (claims 02b, 06a, 26e, 27d)
#
# Four Aegaeon claims turn on how fast weights and KV cross the host link, which the paper does not
# give for its testbed: its scale-up floor (§3) assumes 32 GB/s (PCIe 4.0), its Eq. 4 corrects the
# switch estimate by a profiled β = 0.625 "to take account of the PCIe inefficiencies", and the
# authors' simulator uses 16 GB/s. The default is 32 GB/s (`Settings.load_bw`, `kv_bw`); this notebook
# runs each claim's own setting at 16, 20, 24 and 28 GB/s as well (weights and KV alike, every system;
# runs `linkseeds/*`, `linkfiles/*`, `linkdetail/*`, with `fig13bw16`, `fig14bw16` at 16 GB/s, the
# figures' own runs at 32), so each
# claim's value is a curve of the bandwidth and the claims report judges it at each (readings
# `link16` ... `link28`). Nothing is judged here and no paper number is typed.
#
# | claim | setting | value |
# |---|---|---|
# | 02b | Fig 11b, 0.5 req/s per model, generated workloads (3 seeds) | Aegaeon / ServerlessLLM goodput (mean over seeds) |
# | 06a | Fig 11a, 0.1 req/s per model, generated workloads (3 seeds) | Aegaeon's goodput / 10 decoding GPUs (mean over seeds) |
# | 26e | Fig 13c, SLO x0.2, the artifact's files | Aegaeon's goodput / MuxServe's 32 |
# | 27d | Fig 15 left, the 32 x 0.1 switch log, the artifact's files | largest switch latency (s) |
#
# At quick scale only the default link's runs exist (one point per curve).

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0
goodput_reading = "largest_meeting"   # or "before_first_miss" (servesim.metrics.slo.goodput_x)

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import aegaeon_sweeps as sw
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.aegaeon import muxserve
from servesim.systems.aegaeon.settings import Settings

apply_style()
default_gbps = round(Settings().load_bw / 1e9)
assert Settings().kv_bw == Settings().load_bw, "the sweep moves weights and KV together"
# each bandwidth's runs: (seed runs of 02b / 06a, the SLO x0.2 file run of 26e, the 32 x 0.1 switch log of 27d);
# the default link's are the figures' own runs, 16 GB/s's the authors'-simulator reading's where they exist
SEEDS = ("rps0p1/aegaeon", "rps0p5/aegaeon", "rps0p5/sllm")   # the seed runs each bandwidth needs
RUNS = {default_gbps: ([f"fig11seeds/{s}" for s in SEEDS], "fig13/x0.2/aegaeon", "fig14/rps0p1/aegaeon"),
        16: ([f"linkseeds/g16/{s}" for s in SEEDS], "fig13bw16/x0.2/aegaeon", "fig14bw16/rps0p1/aegaeon")}
RUNS.update({g: ([f"linkseeds/g{g}/{s}" for s in SEEDS], f"linkfiles/g{g}/x0.2/aegaeon", f"linkdetail/g{g}/rps0p1/aegaeon")
             for g in (20, 24, 28)})
decode_gpus = 10   # §7.1: 10 decoding instances (2 nodes x 5)


def seed_points(names):
    """The points of those seed runs this scale declares, with a ``panel`` column (the figure's runs
    name it second, the sweep's third); None if it declares none."""
    found = [n for n in names if sw.declared(n, scale, root)]
    return pd.concat([sw.load(n, ["link", "panel"] if n.startswith("link") else ["panel"], scale, root)
                      for n in found], ignore_index=True) if found else None


def seed_value_metrics(gp) -> dict:
    def g(panel, system):
        v = gp[(gp.panel == panel) & (gp.system == system)]
        return float(v.goodput.iloc[0]) if len(v) else float("nan")

    return {"models_per_decode_gpu_rps0p1": g("rps0p1", "aegaeon") / decode_gpus,
            "goodput_ratio_sllm_rps0p5": sw.ratio(g("rps0p5", "aegaeon"), g("rps0p5", "sllm"))}


def strict_metrics(gp) -> dict:
    v = gp[gp.system == "aegaeon"]
    return {"models_ratio_muxserve_slo0p2": sw.ratio(float(v.goodput.iloc[0]), muxserve.max_models())
            if len(v) else float("nan")}


rows, metrics = [], {"link_default_gbps": default_gbps}
for gbps, (seed_runs, strict_pat, detail_pat) in sorted(RUNS.items()):
    m = {}
    pts = seed_points(seed_runs)
    if pts is not None:
        band = sw.seed_metrics(pts, ["panel"], goodput_reading, seed_value_metrics)
        m.update({k: v for k, v in band.items() if "__seed_mean" in k})
    if sw.declared(strict_pat, scale, root):
        strict = sw.load(strict_pat, ["link", "slo"] if strict_pat.startswith("link") else ["slo"], scale, root)
        m.update(sw.censored_metrics(sw.goodput(sw.curves(strict, ["slo"], muxserve_rule=False), ["slo"],
                                                goodput_reading), strict_metrics))
    if sw.declared(detail_pat, scale, root):
        log = sw.load_detail(detail_pat, "switches", scale, root)
        left = log[(log.models == 32) & (log.rate == 0.1)]
        m["switch_latency_max_s"] = float(left.latency_s.max()) if len(left) else float("nan")
    metrics.update({f"link{gbps}_{k}": v for k, v in m.items()})
    rows += [{"link_gbps": gbps, "metric": k.split("__")[0], "value": v, "bound": m.get(f"{k}__bound")}
             for k, v in m.items() if not k.endswith("__bound")]
# bound: "lower" where the sweep's grid ends before Aegaeon misses the 90 % line (servesim.metrics.bounds)
data = pd.DataFrame(rows, columns=["link_gbps", "metric", "value", "bound"])
data.pivot_table(index="metric", columns="link_gbps", values="value") if len(data) else data

# %%
PANELS = [("goodput_ratio_sllm_rps0p5", "02b: Aegaeon / SLLM goodput, 0.5 req/s"),
          ("models_per_decode_gpu_rps0p1", "06a: models per decoding GPU, 0.1 req/s"),
          ("models_ratio_muxserve_slo0p2", "26e: Aegaeon / MuxServe models, SLO x0.2"),
          ("switch_latency_max_s", "27d: largest switch latency (s), 32 x 0.1")]
fig, axes = plt.subplots(1, len(PANELS), figsize=(3.4 * len(PANELS), 3.0), squeeze=False)
for ax, (key, title) in zip(axes[0], PANELS):
    d = data[data.metric == key].sort_values("link_gbps")
    ax.plot(d.link_gbps, d.value, "o-", color="tab:red")
    lo = d[d.bound == "lower"]
    ax.plot(lo.link_gbps, lo.value, "^", color="tab:red", ms=9, label="lower bound (grid ends first)" if len(lo) else None)
    dd = d[d.link_gbps == default_gbps]
    ax.plot(dd.link_gbps, dd.value, "o", mfc="none", ms=11, color="0.3", label=f"default ({default_gbps} GB/s)")
    ax.set_xlabel("host link (GB/s, weights and KV)")
    ax.set_title(title, fontsize=8)
    ax.set_xticks(sorted(RUNS))
axes[0][0].legend(fontsize=7)
fig.tight_layout()
fig

# %%
# every key at every bandwidth at every scale: NaN where this scale does not run it (quick: the default only)
for gbps in RUNS:
    for key, _ in PANELS:
        name = f"link{gbps}_{key}__seed_mean" if key in ("goodput_ratio_sllm_rps0p5", "models_per_decode_gpu_rps0p1") \
            else f"link{gbps}_{key}"
        metrics.setdefault(name, float("nan"))
out = FigureOutputs("aegaeon", "link_sensitivity", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
pd.Series(metrics)
