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
# # OServe — the example deployments of App. C (Fig 4)
#
# Eight GPUs, two request types with λ = (100, 50). A replica's completion time is
# $\sum_j \lambda_j f_{kj} / C_{kj}$ and the deployment's is the max over replicas (App. C).
# We evaluate the three cases with the stated rates C and fractions f
# (`servesim/systems/oserve/data/paper_inputs.yaml`), and solve the min-makespan LP over f for
# each deployment (PuLP + HiGHS).
#
# The paper quotes 20 s, 16.67 s and ≈13.67 s. The stated rates and fractions give **10 s, 10 s
# and 11.8 s** (case 3's first replica: 100/10 + 50·0.18/5 = 11.8 s); the quoted values equal
# twice the small replicas' times (8.33 → 16.67, 6.83 → 13.67). The ordering the example makes —
# a heterogeneous deployment with an optimized assignment beats the uniform one — does hold: the
# LP on the case 2/3 deployment finishes in 9.17 s vs 10 s for case 1.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.systems.oserve import completion_time, min_makespan, paper_inputs

apply_style()
ex = paper_inputs()["appc_example"]
rows = []
for name, case in ex["cases"].items():
    t, per = completion_time(ex["lam"], case["rates"], case["fractions"])
    lp, frac = min_makespan(ex["lam"], case["rates"])
    rows.append({"case": name, "paper_completion_s": case["paper_completion_s"], "completion_s": t, "lp_makespan_s": lp,
                 "per_replica_s": " ".join(f"{v:.4g}" for v in per),
                 "lp_fractions": " ".join(f"{v:.4g}" for v in frac.ravel())})
res = pd.DataFrame(rows)
res

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.0))
x = np.arange(len(res))
ax.bar(x - 0.27, res.paper_completion_s, 0.27, label="paper (quoted)", color="0.6")
ax.bar(x, res.completion_s, 0.27, label="stated rates & fractions", color="tab:blue")
ax.bar(x + 0.27, res.lp_makespan_s, 0.27, label="LP-optimal fractions", color="tab:green")
ax.set_xticks(x, res.case)
ax.set_ylabel("completion time (s)")
ax.set_title("App. C: λ = (100, 50) on 8 GPUs", fontsize=9)
ax.legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours
# | case | paper | ours (stated rates) |
# |---|---|---|
# | 1 | 20 s | `completion_case1_s` |
# | 2 | 16.67 s | `completion_case2_s` |
# | 3 | ≈13.67 s | `completion_case3_s` |
# | LP on case 3's deployment | — (below case 1) | `lp_makespan_case3_s` |

# %%
by = res.set_index("case")
metrics = {
    "completion_case1_s": float(by.completion_s["case1"]),
    "completion_case2_s": float(by.completion_s["case2"]),
    "completion_case3_s": float(by.completion_s["case3"]),
    "lp_makespan_case1_s": float(by.lp_makespan_s["case1"]),
    "lp_makespan_case3_s": float(by.lp_makespan_s["case3"]),
}
out = FigureOutputs("oserve", "fig04_example_deployments", scale=scale, root=root)
out.save_figure(fig)
out.write_data(res)
out.write_metrics(metrics)
pd.Series(metrics)
