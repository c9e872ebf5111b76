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
# # SageServe §4 / §6 / §7.1 — experimental setup and controller parameters
#
# The paper's setup numbers (20 instances per model-region, siloed 16 + 4, 2–3 instances per
# deployment, 15-s cooldown, provisioning delays, NIW deadline and release thresholds, LT-UA
# ratios) are the *defaults* of `servesim.systems.sageserve.SageServeConfig`; the authors' code
# values are its `SageServeConfig.code()` preset. This notebook tabulates both, so the claims
# report shows which reading each run uses, and records the size of our substitute trace (the
# O365 week is not public: `servesim.workload.sageserve_week`).

# %% tags=["parameters"]
scale = "quick"
root = None
seed = 0
workload_scale = 0.05   # generate this fraction of the week and scale the count back up

# %%
import matplotlib.pyplot as plt
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.sageserve import SageServeConfig
from servesim.workload import sageserve_week
from servesim.workload.gen_sageserve import MODELS, REGIONS

apply_style()
paper, code = SageServeConfig.paper(), SageServeConfig.code()
table = pd.DataFrame({"key": list(paper.to_dict()), "paper": [str(v) for v in paper.to_dict().values()],
                      "code": [str(v) for v in code.to_dict().values()]})
table["differs"] = table["paper"] != table["code"]
week = sageserve_week(scale=workload_scale, seed=seed)
metrics = {
    "n_regions": len(REGIONS), "n_models": len(MODELS),
    "trace_requests_week": len(week) / workload_scale,
    "initial_instances_per_model_region": paper.start_instances,
    "siloed_iw_instances": paper.siloed_iw_instances, "siloed_niw_instances": paper.siloed_niw_instances,
    "min_instances_per_deployment": paper.min_per_deployment, "max_instances_per_deployment": paper.max_per_deployment,
    "scaling_cooldown_s": paper.cooldown_s, "spot_switch_delay_s": paper.spot_switch_s,
    "model_redeploy_delay_s": paper.model_redeploy_s, "remote_weights_delay_s": paper.remote_weights_s,
    "reclaim_delay_median_s": paper.reclaim_median_s, "reclaim_delay_max_s": paper.reclaim_max_s,
    "niw_deadline_s": paper.niw_deadline_s, "niw_priority_bump_s": paper.niw_priority_bump_s,
    "niw_release_util_one": paper.niw_release_one_below, "niw_release_util_two": paper.niw_release_two_below,
    "iw_region_gate_util": paper.iw_region_gate, "niw_buffer_beta": paper.niw_buffer_beta,
    "lt_ua_scaleup_ratio": paper.lt_ua_up_ratio, "lt_ua_scaledown_ratio": paper.lt_ua_down_ratio,
    "lt_ua_window_s": paper.lt_ua_window_s, "n_options_differing_in_code": int(table["differs"].sum()),
}
table[table["differs"]]

# %%
fig, ax = plt.subplots(figsize=(6.0, 3.0))
per = week.groupby(["region", "tier"], observed=True).size().unstack("tier") / workload_scale / 1e6
per.plot.bar(ax=ax, stacked=True)
ax.set(ylabel="requests per week (M)", title="substitute trace (sageserve_week)")

# %%
out = FigureOutputs("sageserve", "sec71_setup", scale=scale, root=root)
out.save_figure(fig)
out.write_data(table)
out.write_metrics(metrics)
