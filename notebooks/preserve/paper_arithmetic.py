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
# # PreServe — arithmetic on the paper's own numbers (§5.2–5.5)
#
# PreServe derives averages, improvements and ratios from values it reports (Tables 1–2, §5.3–5.5).
# We recompute every one of them from those reported values
# (`servesim/systems/preserve/data/paper_inputs.yaml`) and put the paper's rounded figure beside
# ours. Conventions as the paper uses them: a "reduction"/"better" in error or latency is
# 1 − ours/baseline; a gain in accuracy is ours/baseline − 1; violation reduction compares
# 100 − attainment. These check the paper's arithmetic, not our measurements (those are in
# `tab01_workload_prediction`, `tab02_length_prediction`, `fig08_autoscaling`, `fig09_routing`,
# `fig10_overhead`).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import numpy as np
import pandas as pd

from servesim.analysis.comparison import comparison, table_figure
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.preserve import paper_inputs

apply_style()
pi = paper_inputs()
t1, t2 = pi["table1_ape_pct"], pi["table2_length"]
col = {c: i for i, c in enumerate(t1["columns"])}


def mean_of(method, stat, cols):
    return float(np.mean([t1[method][stat][col[c]] for c in cols]))


code, chat = ("code_prompt", "code_response"), ("chat_prompt", "chat_response")
pre_code, pre_chat = mean_of("PreServe", "mean", code), mean_of("PreServe", "mean", chat)
pro_code, pro_chat = mean_of("Prophet", "mean", code), mean_of("Prophet", "mean", chat)
pre, mu, pia = t2["preserve"], t2["mu_serve"], t2["pia_chatgpt"]
pk, q, ov = pi["sec53_peak"], pi["sec54_qps10p5"], pi["sec55_overhead"]
total_ms = ov["length_predict_ms"] + ov["other_ms"]
P1, P2, P3, P5, P4 = t1["paper"], t2["paper"], pk["paper"], ov["paper"], q["paper"]


def pct_lower(ours, base):
    return 100.0 * (1.0 - ours / base)


def pct_higher(ours, base):
    return 100.0 * (ours / base - 1.0)


table = comparison([
    {"quantity": "avg mean APE, code (%)", "metric": "preserve_avg_mean_ape_code", "paper": P1["avg_mean_code"], "ours": pre_code, "how": "(7.74 + 8.45) / 2"},
    {"quantity": "avg mean APE, chat (%)", "metric": "preserve_avg_mean_ape_chat", "paper": P1["avg_mean_chat"], "ours": pre_chat, "how": "(4.15 + 4.30) / 2"},
    {"quantity": "better than Prophet, code (%)", "metric": "preserve_vs_prophet_code_pct", "paper": P1["vs_prophet_code_pct"],
     "ours": pct_lower(pre_code, pro_code), "how": "1 - 8.095 / 27.375"},
    {"quantity": "better than Prophet, chat (%)", "metric": "preserve_vs_prophet_chat_pct", "paper": P1["vs_prophet_chat_pct"],
     "ours": pct_lower(pre_chat, pro_chat), "how": "1 - 4.225 / 8.165"},
    {"quantity": "avg max APE (%)", "metric": "preserve_avg_max_ape", "paper": P1["avg_max"],
     "ours": float(np.mean(t1["PreServe"]["max"])), "how": "mean of 4 max APEs"},
    {"quantity": "MAE vs mu-Serve (%)", "metric": "mae_improvement_vs_museve_pct", "paper": P2["mae_vs_museve_pct"],
     "ours": pct_lower(pre["mae"], mu["mae"]), "how": "1 - MAE / MAE_mu"},
    {"quantity": "Acc-100 vs mu-Serve (%)", "metric": "acc100_improvement_vs_museve_pct", "paper": P2["acc100_vs_museve_pct"],
     "ours": pct_higher(pre["acc100"], mu["acc100"]), "how": "Acc / Acc_mu - 1"},
    {"quantity": "MAE vs PiA-ChatGPT (%)", "metric": "mae_improvement_vs_pia_chatgpt_pct", "paper": P2["mae_vs_pia_pct"],
     "ours": pct_lower(pre["mae"], pia["mae"]), "how": "1 - MAE / MAE_pia"},
    {"quantity": "Acc-25 vs PiA-ChatGPT (%)", "metric": "acc25_improvement_vs_pia_chatgpt_pct", "paper": P2["acc25_vs_pia_pct"],
     "ours": pct_higher(pre["acc25"], pia["acc25"]), "how": "Acc / Acc_pia - 1"},
    {"quantity": "Acc-50 vs PiA-ChatGPT (%)", "metric": "acc50_improvement_vs_pia_chatgpt_pct", "paper": P2["acc50_vs_pia_pct"],
     "ours": pct_higher(pre["acc50"], pia["acc50"]), "how": "Acc / Acc_pia - 1"},
    {"quantity": "Acc-100 vs PiA-ChatGPT (%)", "metric": "acc100_improvement_vs_pia_chatgpt_pct", "paper": P2["acc100_vs_pia_pct"],
     "ours": pct_higher(pre["acc100"], pia["acc100"]), "how": "Acc / Acc_pia - 1"},
    {"quantity": "peak latency reduction vs Hybrid (%)", "metric": "peak_reduction_from_paper_values_pct", "paper": P3["reduction_pct"],
     "ours": pct_lower(pk["preserve_s"], pk["hybrid_s"]), "how": "1 - 0.197 / 0.92"},
    {"quantity": "TTFT reduction vs LR @10.5 QPS (%)", "metric": "ttft_reduction_from_paper_values_pct", "paper": P4["ttft_reduction_pct"],
     "ours": pct_lower(q["ttft_mean_s"]["preserve"], q["ttft_mean_s"]["lr"]), "how": "1 - 2.2 / 7.6"},
    {"quantity": "P99 norm. latency reduction vs LR (%)", "metric": "p99_norm_reduction_from_paper_values_pct", "paper": P4["p99_reduction_pct"],
     "ours": pct_lower(q["p99_norm_latency_s"]["preserve"], q["p99_norm_latency_s"]["lr"]), "how": "1 - 0.45 / 1.1"},
    {"quantity": "SLO violation reduction vs LR (%)", "metric": "violation_reduction_from_paper_values_pct", "paper": P4["violation_reduction_pct"],
     "ours": pct_lower(100 - q["slo_attainment_pct"]["preserve"], 100 - q["slo_attainment_pct"]["lr"]), "how": "1 - 1.2 / 11.2"},
    {"quantity": "total overhead (ms)", "metric": "overhead_total_ms", "paper": P5["total_ms"], "ours": total_ms, "how": "35.9 + 9.7"},
    {"quantity": "mean TTFT / overhead", "metric": "ttft_over_overhead", "paper": P5["ttft_ratio"], "ours": ov["ttft_mean_ms"] / total_ms, "how": "236 / 45.6"},
    {"quantity": "mean norm. latency / overhead", "metric": "norm_latency_over_overhead", "paper": P5["norm_ratio"],
     "ours": ov["norm_latency_mean_ms"] / total_ms, "how": "72.9 / 45.6"},
    {"quantity": "overhead share of E2E (%)", "metric": "overhead_pct_of_e2e", "paper": P5["overhead_pct_of_e2e"],
     "ours": 100.0 * total_ms / (ov["e2e_mean_s"] * 1e3), "how": "45.6 ms / 19.4 s"},
])
fig = table_figure(table, "PreServe: the paper's own arithmetic")
table

# %% [markdown]
# `rel_diff` is ours / paper − 1 per row: how far each printed figure is from the arithmetic of
# the paper's own inputs.

# %%
print(table[["quantity", "paper", "ours", "rel_diff"]].round(4).to_string(index=False))

# %%
metrics = {r.metric: float(r.ours) for r in table.itertuples()}
out = FigureOutputs("preserve", "paper_arithmetic", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
pd.Series(metrics)
