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

# %%

# %% [markdown]
# # Aegaeon — Fig 17: A10 GPUs and 72B models (§7.4)
#
# Left: one node of 4 A10s (24 GB), 2 prefill + 2 decoding instances, Yi-1.5-6B and Qwen2.5-7B
# (alternating) with step times fitted to the artifact's A10 profiles, 0.1 req/s per model, 4-10
# models; TTFT 5 s and TBT 0.1 s (Normal), 0.05 s (Strict), 0.2 s (Loose), as the artifact's plot.
# Prefetch is left to the memory rule (off when the KV blocks left beside a second model would be
# fewer than max(1024, max_len/16)): `a10_prefetch_disabled` checks that the rule turns it off
# for every model pair on the A10. Right: 4 Qwen2.5-72B models on one H800 node, 1 prefill + 1
# decoding instance of TP=4; per-model rate 0.1-0.6 (aggregate 0.4-2.4 req/s), TBT 0.2 s, TTFT
# 10 s (Normal), 5 s (Strict), 20 s (Loose). No 72B profile is public, so its step times are the
# catalog roofline at TP=4 with the efficiencies fitted to Qwen2.5-7B's H800 profile (an
# assumption; the all-reduce keeps the roofline's NVLink prior). Workloads are drawn with the
# artifact's arrival rule and ShareGPT length pool (`--workloads generated`; full scale 3 seeds per
# point, the curves are their mean). Runs `fig17/*`.
#
# | quantity | paper |
# |---|---|
# | A10 attainment (Normal) | decent |
# | A10 Loose vs Normal | Loose much better |
# | 72B | similar gains to the small models |

# %% tags=["parameters"]
scale = "quick"     # "quick", "full" or "test"; names the output folders and the runs read
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import itertools
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis import aegaeon_sweeps as sw
from servesim.analysis.outputs import FigureOutputs, apply_style, project_root
from servesim.analysis.runs import select
from servesim.systems.aegaeon.models import costs, prefetch_fits
from servesim.systems.aegaeon.settings import Settings

apply_style()
pts = sw.load("fig17/*", ["setup", "slo"], scale, root)
allcur = sw.curves(pts, ["setup", "slo"], muxserve_rule=False)
# ServerlessLLM (runs fig17/*/*/sllm) is the claims' null, not drawn: request-level auto-scaling in
# Aegaeon's place on the same GPUs (4 A10 workers; 2 TP=4 workers on the 8 H800s) and workloads;
# ServerlessLLM+ (fig17/q72b/normal/sllm_plus, paper scale) the null of the 72B gain over it
cur = allcur[allcur.system == "aegaeon"].copy()
cur["x_plot"] = np.where(cur.setup == "q72b", cur.x * 4, cur.x)   # 72B: aggregate rate over its 4 models
cur.pivot_table(index=["setup", "x_plot"], columns="slo", values="attainment_pct").round(1)

# %%
# each SLO's band over the seeds (every point is drawn anew per seed: 3 at paper scale), shaded
bands = sw.band(pts[pts.system == "aegaeon"], ["setup", "slo"])
bands["x_plot"] = np.where(bands.setup == "q72b", bands.x * 4, bands.x)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
styles = {"normal": ("tab:red", "o-"), "strict": ("tab:blue", "s-"), "loose": ("tab:green", "^-")}
for ax, setup in ((a1, "a10"), (a2, "q72b")):
    for s, (color, st) in styles.items():
        g = cur[(cur.setup == setup) & (cur.slo == s)].sort_values("x_plot")
        b = bands[(bands.setup == setup) & (bands.slo == s)].sort_values("x_plot")
        if len(b) and b.seeds.max() > 1:
            ax.fill_between(b.x_plot, b.lo, b.hi, color=color, alpha=0.15, lw=0)
        if len(g):
            ax.plot(g.x_plot, g.attainment_pct, st, color=color, ms=3, lw=1, label=s.capitalize())
    ax.axhline(90, color="0.4", ls="--", lw=0.8)
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7, loc="lower left")
a1.set_xlabel("number of models (0.1 req/s each)")
a1.set_ylabel("SLO attainment (%)")
a1.set_title("4x A10: TTFT 5 s; TBT 0.1 / 0.05 / 0.2 s", fontsize=9)
a2.set_xlabel("aggregate rate (req/s, 4 models)")
a2.set_title("Qwen2.5-72B, TP=4, 1P+1D: TBT 0.2 s; TTFT 10 / 5 / 20 s", fontsize=9)
fig.tight_layout()
fig


# %%
def run_settings(pattern: str) -> Settings | None:
    """The Settings a run used (its summary.json), or None when this scale has no such run."""
    rs = select("aegaeon", pattern, scale, root)
    if not rs:
        return None
    d = json.loads(((Path(root) if root else project_root()) / rs[0].dir / "summary.json").read_text())["settings"]
    return Settings(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def prefetch_off(s: Settings) -> bool:
    """True when the memory rule disables prefetch for every ordered pair of the run's checkpoints."""
    cs = {k: costs(k, s) for k in dict.fromkeys(s.checkpoints)}
    return not any(prefetch_fits(cs[a], cs[b], s) for a, b in itertools.product(cs, repeat=2))


def fig17_metrics(cur, prefix="") -> dict:
    """The claims' metrics of one system's curves (Aegaeon's; ``prefix`` names a null's keys)."""
    def att(setup, slo, x) -> float:
        v = cur[(cur.setup == setup) & (cur.slo == slo) & np.isclose(cur.x, x)].attainment_pct
        return float(v.iloc[0]) if len(v) else float("nan")

    def mean_att(setup, slo) -> float:
        v = cur[(cur.setup == setup) & (cur.slo == slo)].attainment_pct
        return float(v.mean()) if len(v) else float("nan")

    a10 = cur[cur.setup == "a10"].pivot_table(index="x", columns="slo", values="attainment_pct")
    m = {
        "attainment_pct_a10_normal_4models": att("a10", "normal", 4),
        **{f"attainment_pct_a10_{s}_mean": mean_att("a10", s) for s in styles},
        "a10_loose_ge_normal_everywhere": bool((a10["loose"] >= a10["normal"]).all())
        if {"loose", "normal"} <= set(a10.columns) else None,
        "attainment_pct_72b_normal_rps0p4": att("q72b", "normal", 0.1),   # 4 models x 0.1 = 0.4 req/s aggregate
        **{f"attainment_pct_72b_{s}_mean": mean_att("q72b", s) for s in styles},
    }
    def goodputs(gp) -> dict:   # the largest load at >= 90 % (A10: #models; 72B: aggregate req/s); NaN where not run
        out = {}
        for s in styles:
            g = gp[(gp.setup == "a10") & (gp.slo == s)].goodput
            out[f"goodput_models_a10_{s}"] = float(g.iloc[0]) if len(g) else float("nan")
            g = gp[(gp.setup == "q72b") & (gp.slo == s)].goodput
            out[f"goodput_aggregate_rps_72b_{s}"] = 4 * float(g.iloc[0]) if len(g) else float("nan")
        return out

    # a goodput at a sweep's last load is a lower bound (`<key>__bound`): the grid ends first
    m.update(sw.censored_metrics(sw.goodput(cur.drop(columns="x_plot", errors="ignore"), ["setup", "slo"]), goodputs))
    return {f"{prefix}{k}": v for k, v in m.items()}


def gains_72b(gp) -> dict:
    """The 72B gain over ServerlessLLM (Normal SLO): the system's goodput (aggregate req/s at >= 90 %)
    over ServerlessLLM's on the same GPUs and workloads; its null, ServerlessLLM+ (request-level
    auto-scaling with oracle SRTF, runs fig17/q72b/normal/sllm_plus, paper scale only) in Aegaeon's place."""
    G = gp[(gp.setup == "q72b") & (gp.slo == "normal")].set_index("system").goodput
    base = float(G.get("sllm", np.nan))   # NaN where not run: the ratios are NaN too
    return {"goodput_gain_72b_normal_vs_sllm": sw.ratio(G.get("aegaeon", np.nan), base),
            "null_sllmplus_goodput_gain_72b_normal_vs_sllm": sw.ratio(G.get("sllm_plus", np.nan), base)}


s_a10 = run_settings("fig17/a10/*/aegaeon")
metrics = {"a10_prefetch_disabled": prefetch_off(s_a10) if s_a10 else None, **fig17_metrics(cur),
           **fig17_metrics(allcur[allcur.system == "sllm"], "null_sllm_"),
           **sw.censored_metrics(sw.goodput(allcur, ["setup", "slo"]), gains_72b)}
out = FigureOutputs("aegaeon", "fig17_a10_and_72b", scale=scale, root=root)
out.save_figure(fig)
out.write_data(cur)
out.write_metrics(metrics)
pd.Series(metrics)
