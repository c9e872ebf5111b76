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
# # SageServe — internal consistency of the paper's numbers
#
# Two totals the journal states can be recomputed from its own figure labels:
# - Fig 12a labels Chiron's per-region instance-hours 403 / 381.25 / 371.75; Fig 11 gives 1146.
# - Fig 8a labels instance-hours Unified vs Siloed per model (Bloom 148.0 vs 199.2, Llama2 96.8 vs
#   137.2, Llama3.1 and 3.2 53.0 vs 101.0 each); the text says "34.5% fewer".
# - Fig 11 savings percentages from its labels (362.25 / 274.5 / 291 / 277.5).

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
chiron_region_labels = [403.0, 381.25, 371.75]
chiron_fig11 = 1146.0
fig8_unified = {"bloom_176b": 148.0, "llama2_70b": 96.8, "llama3_1_8b": 53.0, "llama3_2_3b": 53.0}
fig8_siloed = {"bloom_176b": 199.2, "llama2_70b": 137.2, "llama3_1_8b": 101.0, "llama3_2_3b": 101.0}
fig11_labels = {"reactive": 362.25, "lt_i": 274.5, "lt_u": 291.0, "lt_ua": 277.5}
fig11_paper_savings = {"lt_i": 24.21, "lt_u": 19.65, "lt_ua": 23.38}

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style

apply_style()
u, s = sum(fig8_unified.values()), sum(fig8_siloed.values())
metrics = {
    "chiron_region_label_sum": sum(chiron_region_labels),
    "chiron_fig11": chiron_fig11,
    "fig8_reduction_pct_from_labels": 100 * (1 - u / s),
    "fig8_unified_sum": u, "fig8_siloed_sum": s,
}
rows = []
for k in ("lt_i", "lt_u", "lt_ua"):
    ours = 100 * (1 - fig11_labels[k] / fig11_labels["reactive"])
    metrics[f"fig11_savings_pct_{k}_from_labels"] = ours
    rows.append({"item": f"Fig 11 savings {k}", "from_labels": ours, "paper": fig11_paper_savings[k]})
rows += [{"item": "Chiron regions sum", "from_labels": metrics["chiron_region_label_sum"], "paper": chiron_fig11},
         {"item": "Fig 8 reduction %", "from_labels": metrics["fig8_reduction_pct_from_labels"], "paper": 34.5}]
table = pd.DataFrame(rows)
table

# %%
fig, ax = plt.subplots(figsize=(6.0, 2.6))
rel = 100 * (table["from_labels"] / table["paper"] - 1)
ax.barh(table["item"], rel)
ax.axvline(0, color="k", lw=0.8)
ax.set_xlabel("recomputed vs stated (%)")

# %%
out = FigureOutputs("sageserve", "paper_arithmetic", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
