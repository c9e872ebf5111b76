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
# # Aegaeon — two costs the paper does not give, swept (claims 02b, 06a, 26e, 27d)
#
# Four Aegaeon claims turn on costs the paper does not state for its testbed.
#
# - **The host link** that weights and KV cross. The paper's scale-up floor (§3) assumes 32 GB/s
#   (PCIe 4.0); its Eq. 4 corrects the switch estimate by a profiled β = 0.625 "to take account of the
#   PCIe inefficiencies"; the authors' simulator uses 16 GB/s. The default is 32 GB/s
#   (`Settings.load_bw`, `kv_bw`). Swept: 16, 20, 24 and 28 GB/s for weights and KV alike, every
#   system (runs `linkseeds/*`, `linkfiles/*`, `linkdetail/*`; `fig13bw16` and `fig14bw16` at 16 GB/s).
# - **A per-step control-plane time** for Aegaeon (Fig 14's "control": dispatch, cache-index
#   bookkeeping, CUDA events), which the paper measures but does not quantify. The default charges
#   none (`Settings.control_step_s` = 0). Swept as a what-if: 2, 5 and 10 ms before every Aegaeon decode
#   step, at the default link (runs `ctlseeds/*`, `ctlfiles/*`, `ctldetail/*`; ServerlessLLM is not
#   charged, so 02b divides by the default ServerlessLLM runs).
#
# Each claim's value is a curve of each cost. The claims report judges each point as a named reading
# (`link16` ... `link28`, `control2` ... `control10`). Nothing is judged here and no paper number is typed.
#
# | claim | setting | value |
# |---|---|---|
# | 02b | Fig 11b, 0.5 req/s per model, generated workloads (3 seeds) | Aegaeon / ServerlessLLM goodput (mean over seeds) |
# | 06a | Fig 11a, 0.1 req/s per model, generated workloads (3 seeds) | Aegaeon's goodput / 10 decoding GPUs (mean over seeds) |
# | 26e | Fig 13c, SLO x0.2, the artifact's files | Aegaeon's goodput / MuxServe's 32 |
# | 27d | Fig 15 left, the 32 x 0.1 switch log, the artifact's files | largest switch latency (s) |
#
# The default's point of every curve is the figures' own runs. At quick scale only those exist.

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0
goodput_reading = "largest_meeting"   # or "before_first_miss" (servesim.metrics.slo.goodput_x)

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis import aegaeon_sweeps as sw
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.aegaeon import muxserve
from servesim.systems.aegaeon.settings import Settings

apply_style()
DEFAULTS = Settings()
assert DEFAULTS.kv_bw == DEFAULTS.load_bw, "the link sweep moves weights and KV together"
default_gbps, default_ms = round(DEFAULTS.load_bw / 1e9), round(DEFAULTS.control_step_s * 1e3)
SEEDS = ("rps0p1/aegaeon", "rps0p5/aegaeon", "rps0p5/sllm")   # the seed runs each point needs
DEFAULT_RUNS = ([f"fig11seeds/{s}" for s in SEEDS], "fig13/x0.2/aegaeon", "fig14/rps0p1/aegaeon")
# per cost, per value: (seed runs of 02b / 06a, the SLO x0.2 file run of 26e, the 32 x 0.1 switch log of 27d)
SWEEPS = {
    "link": {default_gbps: DEFAULT_RUNS,
             16: ([f"linkseeds/g16/{s}" for s in SEEDS], "fig13bw16/x0.2/aegaeon", "fig14bw16/rps0p1/aegaeon"),
             **{g: ([f"linkseeds/g{g}/{s}" for s in SEEDS], f"linkfiles/g{g}/x0.2/aegaeon",
                    f"linkdetail/g{g}/rps0p1/aegaeon") for g in (20, 24, 28)}},
    "control": {default_ms: DEFAULT_RUNS,   # ServerlessLLM is not charged: its default runs
                **{c: ([f"ctlseeds/c{c}/{s}" for s in SEEDS[:2]] + ["fig11seeds/rps0p5/sllm"],
                       f"ctlfiles/c{c}/x0.2/aegaeon", f"ctldetail/c{c}/rps0p1/aegaeon") for c in (2, 5, 10)}},
}
AXIS = {"link": "host link (GB/s, weights and KV)", "control": "Aegaeon control time per decode step (ms)"}
decode_gpus = 10   # §7.1: 10 decoding instances (2 nodes x 5)


def facets(name: str, last: str) -> list[str]:
    """A run's facets between its figure and its system: the swept families (``linkseeds/g20/...``)
    name their value before the figure's own facet (``last``: the panel or the SLO scale)."""
    return ["value"] * (len(name.split("/")) - 3) + [last]


def seed_points(names):
    """The points of those seed runs this scale declares (a ``panel`` column); None if it declares none."""
    found = [n for n in names if sw.declared(n, scale, root)]
    return pd.concat([sw.load(n, facets(n, "panel"), scale, root) for n in found], ignore_index=True) if found else None


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


def point_metrics(seed_runs, strict_run, detail_run) -> dict:
    """The four claims' values at one point of a sweep (keys as the figures' own; NaN-free: a value
    this scale does not run is left out)."""
    m = {}
    pts = seed_points(seed_runs) if sw.declared(seed_runs[0], scale, root) else None   # the point's own runs
    if pts is not None:   # the seeds' mean, with its bound where the grid censors a seed
        m.update({k: v for k, v in sw.seed_metrics(pts, ["panel"], goodput_reading, seed_value_metrics).items()
                  if "__seed_mean" in k})
    if sw.declared(strict_run, scale, root):
        strict = sw.load(strict_run, facets(strict_run, "slo"), scale, root)
        m.update(sw.censored_metrics(sw.goodput(sw.curves(strict, ["slo"], muxserve_rule=False), ["slo"],
                                                goodput_reading), strict_metrics))
    if sw.declared(detail_run, scale, root):
        log = sw.load_detail(detail_run, "switches", scale, root)
        left = log[(log.models == 32) & (log.rate == 0.1)]
        m["switch_latency_max_s"] = float(left.latency_s.max()) if len(left) else float("nan")
    return m


rows, metrics = [], {"link_default_gbps": default_gbps, "control_default_ms": default_ms}
default_point = point_metrics(*DEFAULT_RUNS)   # both sweeps' default point: computed once
for cost, points in SWEEPS.items():
    for x, runs in sorted(points.items()):
        m = default_point if runs is DEFAULT_RUNS else point_metrics(*runs)
        metrics.update({f"{cost}{x}_{k}": v for k, v in m.items()})
        # bound: "lower" where the sweep's grid ends before Aegaeon misses the 90 % line (servesim.metrics.bounds)
        rows += [{"cost": cost, "x": x, "metric": k.split("__")[0], "value": v, "bound": m.get(f"{k}__bound")}
                 for k, v in m.items() if not k.endswith("__bound")]
data = pd.DataFrame(rows, columns=["cost", "x", "metric", "value", "bound"])
data.pivot_table(index=["cost", "metric"], columns="x", values="value") if len(data) else data

# %%
PANELS = [("goodput_ratio_sllm_rps0p5", "02b: Aegaeon / SLLM goodput, 0.5 req/s"),
          ("models_per_decode_gpu_rps0p1", "06a: models per decoding GPU, 0.1 req/s"),
          ("models_ratio_muxserve_slo0p2", "26e: Aegaeon / MuxServe models, SLO x0.2"),
          ("switch_latency_max_s", "27d: largest switch latency (s), 32 x 0.1")]
fig, axes = plt.subplots(len(SWEEPS), len(PANELS), figsize=(3.4 * len(PANELS), 2.9 * len(SWEEPS)), squeeze=False)
for row, (cost, points) in zip(axes, SWEEPS.items()):
    default = default_gbps if cost == "link" else default_ms
    for ax, (key, title) in zip(row, PANELS):
        d = data[(data.cost == cost) & (data.metric == key)].sort_values("x")
        ax.plot(d.x, d.value, "o-", color="tab:red")
        lo = d[d.bound == "lower"]
        ax.plot(lo.x, lo.value, "^", color="tab:red", ms=9, label="lower bound (grid ends first)" if len(lo) else None)
        dd = d[d.x == default]
        ax.plot(dd.x, dd.value, "o", mfc="none", ms=11, color="0.3", label="default")
        ax.set_xlabel(AXIS[cost], fontsize=8)
        ax.set_title(title, fontsize=8)
        ax.set_xticks(sorted(points))
    row[0].legend(fontsize=7)
fig.tight_layout()
fig

# %%
# every key at every point at every scale: NaN where this scale does not run it (quick: the defaults only)
for cost, points in SWEEPS.items():
    for x in points:
        for key, _ in PANELS:
            suffix = "__seed_mean" if key in ("goodput_ratio_sllm_rps0p5", "models_per_decode_gpu_rps0p1") else ""
            metrics.setdefault(f"{cost}{x}_{key}{suffix}", float("nan"))
out = FigureOutputs("aegaeon", "cost_sensitivity", scale=scale, root=root)
out.save_figure(fig)
out.write_data(data)
out.write_metrics(metrics)
pd.Series(metrics)
