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
# # Aegaeon — scheduler settings and the worked example of Eq. 2–3 (§4.2–4.3)
#
# The settings come from `servesim.systems.aegaeon.AegaeonConfig.paper()` (MAX_GPSIZE = 8,
# Q_MAX = 4 s, α floor 0.5). The worked example of §4.3 (three batches, d = 0.1 s, t = 0.025 s,
# c = 3 s, Q_MAX = 3 s; paper: n = 4, α = 1, q = 3 s, 120 tokens per turn, a 12 s round, every
# deadline met) is evaluated by the quota function `servesim.systems.aegaeon.quotas` (Eq. 2–3), and
# "all deadlines met" by replaying `n_rounds` rounds step by step and checking each token against
# its buffered deadline (first token + k·d). A sweep of c shows where the round stops meeting them
# (α > 1).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
n_rounds = 5        # rounds replayed for the deadline check
c_sweep = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]   # summed switch overheads (s) for the sweep

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.comparison import comparison
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.aegaeon import AegaeonConfig, paper_inputs, play_rounds, quotas

apply_style()
cfg = AegaeonConfig.paper()
ex = paper_inputs()["wrr_worked_example"]
q = quotas([ex["step_s"]] * ex["n_batches"], ex["tbt_s"], ex["c_s"], ex["q_max_s"], cfg.alpha_floor)
rep = play_rounds(q, n_rounds, tbt_s=ex["tbt_s"])
print(f"n = {q.n}, alpha = {q.alpha:.6g}, quotas = {q.quota_s} s, tokens/turn = {q.tokens_per_turn}, "
      f"round = {q.round_s:.6g} s; replay of {n_rounds} rounds: {rep.tokens} tokens, min slack {rep.min_slack_s:+.3g} s")

# %% [markdown]
# ## Sweep of the switching cost c (same batches, Q_MAX = 3 s)
# Estimated attainment 1/α against the replay's worst slack: the round meets every deadline
# exactly while α ≤ 1.

# %%
sweep = []
for c in c_sweep:
    qc = quotas([ex["step_s"]] * ex["n_batches"], ex["tbt_s"], c, ex["q_max_s"], cfg.alpha_floor)
    rc = play_rounds(qc, n_rounds, tbt_s=ex["tbt_s"])
    sweep.append({"c_s": c, "alpha": qc.alpha, "quota_s": float(qc.quota_s[0]), "round_s": qc.round_s,
                  "est_attainment": qc.est_attainment, "min_slack_s": rc.min_slack_s, "all_met": rc.all_met()})
sweep = pd.DataFrame(sweep)
sweep

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.0))
ax.plot(sweep.c_s, sweep.est_attainment * 100, marker="o", label="1/α (Eq. 3)")
ax2 = ax.twinx()
ax2.plot(sweep.c_s, sweep.min_slack_s, marker="s", color="tab:red", label="replay: worst slack (s)")
ax2.axhline(0, color="tab:red", lw=0.6, ls=":")
ax.axvline(ex["c_s"], color="0.5", ls="--", lw=0.8)
ax.set_xlabel("summed switching overhead c (s)")
ax.set_ylabel("estimated attainment (%)")
ax2.set_ylabel("worst token slack (s)")
ax.set_title("3 batches, d = 0.1 s, t = 0.025 s, Q_MAX = 3 s (dashed: paper's c = 3)", fontsize=8)
fig.legend(loc="lower left", fontsize=7, bbox_to_anchor=(0.12, 0.18))
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours

# %%
p = ex["paper"]
table = comparison([
    {"quantity": "MAX_GPSIZE", "metric": "max_gpsize", "paper": 8, "ours": cfg.max_gpsize, "how": "config"},
    {"quantity": "Q_MAX (s)", "metric": "q_max_s", "paper": 4, "ours": cfg.q_max_s, "how": "config"},
    {"quantity": "alpha floor", "metric": "alpha_floor", "paper": 0.5, "ours": cfg.alpha_floor, "how": "config"},
    {"quantity": "example n_i", "metric": "wrr_example_n", "paper": p["n"], "ours": float(q.n[0]), "how": "d / t"},
    {"quantity": "example alpha", "metric": "wrr_example_alpha", "paper": p["alpha"], "ours": q.alpha, "how": "Eq. 3"},
    {"quantity": "example quota (s)", "metric": "wrr_example_quota_s", "paper": p["quota_s"], "ours": float(q.quota_s[0]), "how": "Eq. 2"},
    {"quantity": "example tokens per turn", "metric": "wrr_example_tokens_per_turn", "paper": p["tokens_per_turn"],
     "ours": float(q.tokens_per_turn[0]), "how": "q / t"},
    {"quantity": "example round (s)", "metric": "wrr_example_round_s", "paper": p["round_s"], "ours": q.round_s, "how": "sum q + c"},
    {"quantity": "example deadlines met", "metric": "wrr_example_all_deadlines_met", "paper": True, "ours": rep.all_met(),
     "how": f"replay of {n_rounds} rounds"},
])
table

# %%
metrics = {r.metric: (bool(r.ours) if isinstance(r.ours, (bool, np.bool_)) else float(r.ours)) for r in table.itertuples()}
metrics["wrr_example_min_slack_s"] = rep.min_slack_s
out = FigureOutputs("aegaeon", "sec4_scheduling", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.concat([table.assign(kind="claim"), sweep.assign(kind="sweep")], ignore_index=True))
out.write_metrics(metrics)
pd.Series(metrics)
