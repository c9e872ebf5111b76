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
# # Aegaeon — Fig 7 right: the auto-scaling latency breakdown, before and after (§3.2, §5)
#
# The paper measures its engine's initialisation on H800s (vLLM 0.5.1, Llama-2-13B at TP=2) and
# gives two numbers: up to 26.9 s in total and 4.6 s of weight loading (§5.1); the executor
# ("tens of seconds"), profiling and KV pinning ("several seconds") are given only in words. No
# GPU is lent to this artifact and the authors' engine is not public, so every *measured* claim of
# Fig 7 is reported NaN here (NOT-CHECKED or NOT-REPRODUCIBLE in the claims). What the notebook
# draws is a parameterised cost model whose parts are labelled by where they come from:
#
# - **stated** (`paper_inputs.yaml`, key `scaling`): the 26.9 s total and the 4.6 s TP=2 load;
# - **assumed** (this notebook's parameters): how the other 22.3 s split between executor init,
#   profiling, KV-cache init/pinning and the rest (`split_*`);
# - **derived**: T1 (component reuse: engine, executor, profile and host KV pool reused, so only
#   the weight load is left) and T3 (+ explicit memory management and fine-grained KV sync: the
#   weights come from the host Model Cache at the load bandwidth the simulator uses,
#   `servesim.systems.aegaeon.Settings.load_bw`, each TP shard over its own link; KV sync hidden).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders (the model is the same at every scale)
root = None         # project root; None finds it from the working directory
seed = 0
# [assumed] shares of the non-load part of the 26.9 s init (executor "tens of seconds"; profiling
# and KV pinning "several seconds" each, §5.1); they only shape the T0 bar
split_executor = 0.55
split_profiling = 0.15
split_kv_init = 0.2
split_other = 0.1

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_model
from servesim.systems.aegaeon import Settings, paper_inputs

apply_style()
s = paper_inputs()["scaling"]
if abs(split_executor + split_profiling + split_kv_init + split_other - 1.0) > 1e-9:
    raise ValueError("the split_* parameters must sum to 1")
total, load = s["init_s_13b"], s["weight_load_s_13b_tp2"]
rest = total - load
w13 = get_model(s["model_13b"]).param_bytes
t3_load = w13 / s["tp_13b"] / Settings().load_bw   # one TP shard per GPU, in parallel
rows = [
    ("T0 (stock engine)", "Executor init", rest * split_executor, "assumed"),
    ("T0 (stock engine)", "Profiling", rest * split_profiling, "assumed"),
    ("T0 (stock engine)", "Weight loading", load, "stated"),
    ("T0 (stock engine)", "KV cache init", rest * split_kv_init, "assumed"),
    ("T0 (stock engine)", "Other", rest * split_other, "assumed"),
    ("T1 (+ component reuse)", "Weight loading", load, "stated"),
    ("T3 (+ memory mgmt, KV sync)", "Weight loading", t3_load, "derived"),
]
bd = pd.DataFrame(rows, columns=["stage", "component", "seconds", "source"])
bd

# %%
fig, ax = plt.subplots(figsize=(6, 3))
colors = {"Executor init": "tab:blue", "Profiling": "tab:orange", "Weight loading": "tab:green",
          "KV cache init": "tab:red", "Other": "tab:gray"}
stages = list(dict.fromkeys(bd.stage))
for i, st in enumerate(stages):
    left = 0.0
    for r in bd[bd.stage == st].itertuples():
        ax.barh(i, r.seconds, left=left, color=colors[r.component], hatch="//" if r.source == "assumed" else None,
                edgecolor="white", label=r.component if i == 0 else None)
        left += r.seconds
    ax.text(left + 0.3, i, f"{left:.2f} s", va="center", fontsize=7)
ax.set_yticks(range(len(stages)), stages, fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("Llama-2-13B (TP=2) auto-scaling latency (s)")
ax.set_title("Cost model: hatched = assumed split, solid = stated / derived", fontsize=9)
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()
fig

# %%
t0, t1, t3 = (float(bd[bd.stage == st].seconds.sum()) for st in stages)
nan = float("nan")
metrics = {
    # measured on the authors' engine / a lent GPU: none here (NaN -> NOT-CHECKED / NOT-REPRODUCIBLE)
    "t3_reduction_pct_measured": nan, "t1_reduction_pct_measured": nan, "vllm_restart_s_13b": nan,
    "vllm_init_s_13b": nan, "vllm_weight_load_s_13b_tp2": nan, "vllm_executor_init_s_13b_tp2": nan,
    "quick_load_s_13b": nan,
    # the cost model (stated + assumed + derived; not measurements)
    "model_t0_s_13b": t0, "model_t1_s_13b": t1, "model_t3_s_13b": t3,
    "model_t1_reduction_pct": 100.0 * (1.0 - t1 / t0), "model_t3_reduction_pct": 100.0 * (1.0 - t3 / t0),
    "model_t3_load_bw_gbps": Settings().load_bw / 1e9,
}
out = FigureOutputs("aegaeon", "fig07_scaling_breakdown", scale=scale, root=root)
out.save_figure(fig)
out.write_data(bd)
out.write_metrics(metrics)
pd.Series(metrics)
