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
# # SageServe §7.2.1 — the dollar arithmetic
#
# Journal §7.2.1: "85 instance-hours saved per day per model-region" × $98.32/h (an 8×H100
# cluster) × "3 models × 4 regions" × 7 days ≈ **$0.6M/week** ≈ **$2.5M/month**. Conference:
# ≈ $0.5M/week, $2M/month from the Nov'24 numbers (Reactive 302.25 vs LT-UA 233.25 instance-h).
#
# We recompute each product from the paper's *stated* factors (the price from our hardware
# catalog). The claims report then says whether the paper's totals follow from its inputs.
# A month is 52/12 weeks.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; pure arithmetic, the same at both
root = None
seed = 0
# journal Fig 11 labels (Jul'25, Llama-2, peak day): Reactive, LT-UA instance-hours
j_reactive_ih = 362.25
j_lt_ua_ih = 277.5
# conference Fig 11 labels (Nov'24)
c_reactive_ih = 302.25
c_lt_ua_ih = 233.25
model_regions = 12   # "3 models x 4 regions" in J (the setup is 4 models x 3 regions: also 12)
days_per_week = 7
weeks_per_month = 52 / 12

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware

apply_style()
price = get_hardware("h100-80gb").cluster_price_per_hour
saved_j = j_reactive_ih - j_lt_ua_ih
saved_c = c_reactive_ih - c_lt_ua_ih
week_j = price * saved_j * model_regions * days_per_week
week_c = price * saved_c * model_regions * days_per_week
metrics = {
    "h100_cluster_price_per_hour": price,
    "saved_instance_hours_per_day": saved_j,
    "savings_usd_per_week": week_j,
    "savings_usd_per_month": week_j * weeks_per_month,
    "c_saved_instance_hours_per_day": saved_c,
    "c_savings_usd_per_week": week_c,
    "c_savings_usd_per_month": week_c * weeks_per_month,
    # the product with the paper's round 85 instead of the label difference
    "savings_usd_per_week_85": price * 85 * model_regions * days_per_week,
    "paper_usd_per_week": 0.6e6, "paper_usd_per_month": 2.5e6,
    "c_paper_usd_per_week": 0.5e6, "c_paper_usd_per_month": 2.0e6,
}
table = pd.DataFrame([
    {"version": "journal", "saved_ih_per_day": saved_j, "ours_usd_week": week_j, "paper_usd_week": 0.6e6,
     "ours_usd_month": week_j * weeks_per_month, "paper_usd_month": 2.5e6},
    {"version": "conference", "saved_ih_per_day": saved_c, "ours_usd_week": week_c, "paper_usd_week": 0.5e6,
     "ours_usd_month": week_c * weeks_per_month, "paper_usd_month": 2.0e6},
])
table

# %%
fig, axes = plt.subplots(1, 2, figsize=(6.0, 2.8))
for ax, col in zip(axes, ("week", "month")):
    x = range(len(table))
    ax.bar([i - 0.2 for i in x], table[f"ours_usd_{col}"] / 1e6, width=0.4, label="recomputed")
    ax.bar([i + 0.2 for i in x], table[f"paper_usd_{col}"] / 1e6, width=0.4, label="paper")
    ax.set_xticks(list(x), table["version"])
    ax.set_ylabel(f"$M per {col}")
axes[0].legend()

# %% [markdown]
# The journal's product is $98.32 × 84.75 × 12 × 7 ≈ $0.70M per week (with the round 85:
# `savings_usd_per_week_85`), not $0.6M, and ≈ $3.0M per month, not $2.5M. The conference's
# Nov'24 labels give ≈ $0.57M/week, which it rounds to "$0.5M". Note also that the 84.75
# instance-hours of Fig 11 are Llama-2 summed over the three regions, whereas the product
# treats them as per model-region.

# %%
out = FigureOutputs("sageserve", "sec72_cost_arithmetic", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
