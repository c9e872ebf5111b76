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
# # Aegaeon — arithmetic on the paper's own numbers (Abstract, §1, §6, §7.5)
#
# "Reduces the number of GPUs ... from 1,192 to 213, an 82 % GPU resource saving": the saving is
# recomputed from the two stated counts (`servesim/systems/aegaeon/data/paper_inputs.yaml`). The
# counts themselves are production telemetry, and the 5,700 lines are a statement about the
# authors' code base: both are NOT-REPRODUCIBLE, and their metrics are written as null (we compute
# nothing comparable).

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import pandas as pd

from servesim.analysis.comparison import comparison, table_figure
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.aegaeon import paper_inputs

apply_style()
prod = paper_inputs()["production"]
saving_pct = 100.0 * (1.0 - prod["gpus_after"] / prod["gpus_before"])
print(f"1 - {prod['gpus_after']}/{prod['gpus_before']} = {saving_pct:.2f} %")
table = comparison([
    {"quantity": "GPU saving (%)", "metric": "production_gpu_saving_pct", "paper": prod["paper"]["saving_pct"],
     "ours": saving_pct, "how": "1 - 213 / 1192"},
    {"quantity": "GPUs after (H20)", "metric": "production_gpus_after", "paper": prod["gpus_after"], "ours": None,
     "how": "NOT-REPRODUCIBLE: production telemetry"},
    {"quantity": "lines of code", "metric": "implementation_lines", "paper": 5700, "ours": None,
     "how": "NOT-REPRODUCIBLE: the authors' code base"},
])
fig = table_figure(table, "Aegaeon: the paper's own arithmetic")
table

# %%
metrics = {"production_gpu_saving_pct": saving_pct, "production_gpus_after": None, "implementation_lines": None}
out = FigureOutputs("aegaeon", "paper_arithmetic", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
pd.Series(metrics)
