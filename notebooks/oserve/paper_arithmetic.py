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
# # OServe — arithmetic on the paper's own numbers (§6.3)
#
# §6.3: the Moving-Average predictor "reduces throughput from 14.2 req/s to 10.1 req/s (41 %
# degradation)". 14.2 / 10.1 − 1 = 40.6 % (the LSTM's throughput relative to MA's); measured as a
# drop from 14.2 it is 1 − 10.1 / 14.2 = 28.9 %. Inputs: `servesim/systems/oserve/data/paper_inputs.yaml`.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import pandas as pd

from servesim.analysis.comparison import comparison, table_figure
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.oserve import paper_inputs

apply_style()
pb = paper_inputs()["predictor_baseline"]
ratio_pct = 100.0 * (pb["throughput_lstm_rps"] / pb["throughput_ma_rps"] - 1.0)
drop_pct = 100.0 * (1.0 - pb["throughput_ma_rps"] / pb["throughput_lstm_rps"])
table = comparison([
    {"quantity": "MA throughput degradation (%)", "metric": "ma_throughput_degradation_pct", "paper": pb["paper"]["degradation_pct"],
     "ours": ratio_pct, "how": "14.2 / 10.1 - 1"},
    {"quantity": "same, as a drop from 14.2 (%)", "metric": "ma_throughput_drop_pct", "paper": pb["paper"]["degradation_pct"],
     "ours": drop_pct, "how": "1 - 10.1 / 14.2"},
])
fig = table_figure(table, "OServe: the paper's own arithmetic")
table

# %%
metrics = {r.metric: float(r.ours) for r in table.itertuples()}
out = FigureOutputs("oserve", "paper_arithmetic", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
pd.Series(metrics)
