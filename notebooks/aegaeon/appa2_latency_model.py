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
# # Aegaeon — the latency model of App. A.2 fitted to the artifact's profiles
#
# Aegaeon's scheduler estimates prefill time (Eq. 5), decode step time (Eq. 6) and switch time
# (Eq. 4) with
# $T_{prefill} = C_1(4th^2 + 2thm) + C_2\,3ht_2/b + C_3$ and $T_{decoding} = C_4(4h^2+2hm) + C_5\,3ht$
# ($t$ = tokens in the batch, or for decode the summed context; $t_2 = \sum l_k^2$; $h, m$ = hidden
# and FFN size from the model catalog). The paper reports **R² > 0.9 for all models** and
# **β = 0.625**. We fit the constants by least squares on the artifact's measured iteration
# profiles (`aegaeon/profiles/<model>/H800/i<L>b<B>.json`, 12 timings each, min/max trimmed as the
# artifact does) for the three evaluation models, and score them on a held-out 20 % of profiles.
#
# Two screens, both stated here and applied to every model: decode timings faster than one read of
# the weights from HBM are not decode steps (one such file exists: Yi-1.5-9B `i4096b2`, 0.3 ms), and
# prefill batches above `prefill_token_cap` tokens are dropped because the profiles plateau there
# (Yi-1.5-9B and Llama-2-13B take the same time for 4096 and 8192 tokens: the engine's step held at
# most 4096 tokens). The uncapped fit is reported too.
# Eq. 6 as printed has no batch-size term (its $C_4$ term is a constant); the artifact's regression
# adds $C_6 B$. The claim is checked on Eq. 6 as printed, with the artifact's form beside it.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
gpu = "H800"                                                   # profile folder
models = ["qwen2_5_7b", "yi1_5_9b_chat", "llama2_13b_chat"]    # the evaluation models (§7.1)
test_frac = 0.2            # held-out share of the profiles
prefill_token_cap = 4096   # tokens one profiled prefill step can hold (see above); None keeps all
model_13b = "llama2_13b_chat"   # whose prefill time over ShareGPT inputs claim 12 reads

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.aegaeon_workloads import sharegpt_pairs
from servesim.analysis.latency_model import fit_phase, phase_table, score, screen, switch_time_s
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_hardware, get_model
from servesim.perf.measurements import split
from servesim.perf.sources import aegaeon
from servesim.systems.aegaeon import AegaeonConfig

apply_style()
cfg = AegaeonConfig.paper()
rows, fits, points = [], {}, []
for m in models:
    key = get_model(m).key
    raw = aegaeon(m, gpu)
    scr = screen(raw, key, gpu, prefill_token_cap)
    for reason in sorted(set(scr.dropped) - {""}):
        print(f"{m}: dropped {int((scr.dropped == reason).sum())} profile(s): {reason}")
    variants = {"screened": scr[scr.dropped == ""].drop(columns="dropped"),
                "uncapped": screen(raw, key, gpu, None).query("dropped == ''").drop(columns="dropped")}
    for variant, df in variants.items():
        train, test = split(df, test_frac, seed)
        for phase, batch_term in (("prefill", False), ("decode", False), ("decode", True)):
            form = "eq6+B (artifact)" if batch_term else ("eq5" if phase == "prefill" else "eq6 (printed)")
            f = fit_phase(phase_table(train, phase), key, phase, batch_term)
            rows.append({"model": key, "variant": variant, "phase": phase, "form": form,
                         "n_train": len(phase_table(train, phase)), "n_test": len(phase_table(test, phase)),
                         "r2_test": score(f, phase_table(test, phase)), "r2_all": score(f, phase_table(df, phase)),
                         **f.constants})
            if variant == "screened":
                fits[(key, form)] = f
                tab = phase_table(df, phase)
                points.append(tab.assign(model=key, form=form,
                                         pred_s=f.predict(tab.t.to_numpy(), tab.t2.to_numpy(), tab.batch.to_numpy())))
fitres = pd.DataFrame(rows)
fitres

# %% [markdown]
# ## Held-out R² per model (screened profiles)

# %%
summary = fitres[fitres.variant == "screened"].pivot(index="model", columns="form", values="r2_test")
print(summary.round(4).to_string())
r2_min = {form: float(summary[form].min()) for form in summary.columns}
r2_min_uncapped = float(fitres.query("variant == 'uncapped' and form == 'eq5'").r2_test.min())
print(f"\nmin held-out R^2: prefill {r2_min['eq5']:.4f} (uncapped {r2_min_uncapped:.4f}), "
      f"decode as printed {r2_min['eq6 (printed)']:.4f}, decode with the artifact's B term {r2_min['eq6+B (artifact)']:.4f}")

# %% [markdown]
# ## Claim 12: "a prefill batch usually takes < 1 s"
# Prefill runs at batch size 1 (§4.2), so a request's prefill time is Eq. 5 at $t = l$,
# $t_2 = l^2$. Input lengths: the distinct ShareGPT (input, output) pairs of the artifact's
# workloads (8,294 pairs; the spec's median input is 598 tokens).

# %%
pairs = sharegpt_pairs(1.0, 1.0)
L_all = pairs.input_len.to_numpy(float)
prof13 = phase_table(aegaeon(model_13b, gpu), "prefill")
L_max = float((prof13.t2 / prof13.t).max())   # longest profiled prompt: the fit is not extrapolated past it
L = L_all[L_all <= L_max]
f13 = fits[(get_model(model_13b).key, "eq5")]
pre13 = f13.predict(L, L * L)
prefill_median = float(np.median(pre13))
frac_under_1s = float(np.mean(pre13 < 1.0))
print(f"{len(pairs)} pairs, median input {np.median(L_all):.0f} tokens; {np.mean(L_all > L_max) * 100:.2f} % are longer "
      f"than the longest profiled prompt ({L_max:.0f}) and left out. Llama-2-13B prefill over the rest: median "
      f"{prefill_median * 1e3:.1f} ms, p99 {np.quantile(pre13, 0.99) * 1e3:.0f} ms, under 1 s: {100 * frac_under_1s:.2f} %")

# %% [markdown]
# ## Eq. 4: switch-time estimate
# β comes from the Aegaeon config (the paper's 0.625). Taken literally, β < 1 makes the estimate
# *faster* than PCIe line rate; the artifact's scheduler instead uses size / (BW · 0.15). Both are
# shown for the evaluation models on the H800's PCIe (catalog).

# %%
hw = get_hardware(cfg.gpu)
sw = pd.DataFrame([{"model": get_model(m).key, "weights_gb": get_model(m).param_bytes / 1e9,
                    "switch_s_eq4_beta": switch_time_s(get_model(m).param_bytes, hw.pcie_bw, cfg.switch_beta),
                    "switch_s_ae": get_model(m).param_bytes / (cfg.switch_pcie_bw_ae.get(cfg.gpu, cfg.switch_pcie_bw_ae["default"])
                                                             * cfg.switch_ineff_ae)} for m in models])
sw

# %% [markdown]
# ## The figure: measured vs fitted step times
# Left: prefill (Eq. 5); right: decode, Eq. 6 as printed (crosses) and with the batch term (dots).

# %%
pts = pd.concat(points, ignore_index=True)
fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4))
colors = dict(zip([get_model(m).key for m in models], ["tab:blue", "tab:orange", "tab:green"]))
for key, c in colors.items():
    p = pts[(pts.model == key) & (pts.form == "eq5")]
    axes[0].scatter(p.step_s * 1e3, p.pred_s * 1e3, s=8, color=c, label=key)
    for form, mk in (("eq6 (printed)", "x"), ("eq6+B (artifact)", "o")):
        p = pts[(pts.model == key) & (pts.form == form)]
        axes[1].scatter(p.step_s * 1e3, p.pred_s * 1e3, s=8, marker=mk, color=c, alpha=0.6 if mk == "x" else 1.0)
for ax, title in zip(axes, ("prefill (Eq. 5)", "decode (Eq. 6; x printed, o with B)")):
    lim = [0, max(ax.get_xlim()[1], ax.get_ylim()[1])]
    ax.plot(lim, lim, color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("measured (ms)")
    ax.set_ylabel("fitted (ms)")
    ax.set_title(title, fontsize=9)
axes[0].legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours
# | quantity | paper | ours |
# |---|---|---|
# | min R² prefill (Eq. 5) | > 0.9 | `r2_min_prefill` below (screened; uncapped alongside) |
# | min R² decode (Eq. 6) | > 0.9 | `r2_min_decode` (as printed) and `r2_min_decode_ae` (with B) |
# | β | 0.625 | the config's value, used in Eq. 4 above |
# | prefill of a request | usually < 1 s | median and share under 1 s above |

# %%
metrics = {
    "prefill_s_median_sharegpt_13b": prefill_median,
    "prefill_frac_under_1s_sharegpt_13b": frac_under_1s,
    "r2_min_prefill": r2_min["eq5"],
    "r2_min_prefill_uncapped": r2_min_uncapped,
    "r2_min_decode": r2_min["eq6 (printed)"],
    "r2_min_decode_ae": r2_min["eq6+B (artifact)"],
    "switch_beta": cfg.switch_beta,
}
out = FigureOutputs("aegaeon", "appa2_latency_model", scale=scale, root=root)
out.save_figure(fig)
out.write_data(fitres)
out.write_metrics(metrics)
pd.Series(metrics)
