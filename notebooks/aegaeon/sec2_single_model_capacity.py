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
# # Aegaeon — single-model capacity of one GPU (§1, §2.2)
#
# §1: "single-model serving can reach several RPS per GPU", more than **10×** the **< 0.1 RPS per
# GPU** of concurrent serving in production (§2.2). We compute the capacity of one H800 serving
# one model from the artifact's measured profiles, without a simulation: the App. A.2 model fitted
# as in `appa2_latency_model` (prefill Eq. 5; decode with the artifact's batch term) and the
# artifact's ShareGPT lengths feed a mean-value model of continuous batching
# (`servesim.analysis.capacity`): prefill one request at a time with priority, decode all running
# requests one token per step, Little's law for the running count. The capacity is the largest
# arrival rate whose mean token gap meets the 100 ms TBT target with at most the largest profiled
# batch (200) running. It bounds throughput; TTFT tails under queueing need a simulation, so the
# claim's number comes from the discrete-event simulation further down: one GPU serving one model
# (`servesim.systems.aegaeon`, the ServerlessLLM worker with a single resident model: vLLM-like
# iteration batching with prefill priority, at most 200 running, no timeout), per-model Poisson
# arrivals with the artifact's ShareGPT lengths, and the largest rate whose SLO attainment (the
# artifact's `compute_slo` rule, TTFT 10 s / TBT 100 ms) is at least 90 %, found by bisection.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
gpu = "H800"
models = ["qwen2_5_7b", "yi1_5_9b_chat", "llama2_13b_chat"]
claim_model = "qwen2_5_7b"     # the model the claim's metric reads (the artifact's most common one)
production_rps_per_gpu = 0.1   # §2.2 "< 0.1 RPS per GPU" (the paper's number: the baseline of the headroom)
des_duration_s = None          # simulated arrival window per point; None: 60 s (quick) / 120 s (full)
des_iters = None               # bisection steps; None: 5 (quick) / 7 (full)
des_all_models = None          # simulate every model (True) or only claim_model; None: full scale only

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from servesim.analysis.aegaeon_workloads import sharegpt_pairs
from servesim.analysis.capacity import capacity, steady_state
from servesim.analysis.latency_model import fit_phase, phase_table
from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.catalog import get_model
from servesim.perf.sources import aegaeon
from servesim.systems.aegaeon import AegaeonConfig

apply_style()
cfg = AegaeonConfig.paper()
pairs = sharegpt_pairs(1.0, 1.0)
rows, curves = [], []
for m in models:
    key = get_model(m).key
    raw = df = aegaeon(m, gpu)        # the valid profiles (artifact's rule), as in appa2_latency_model
    pre = fit_phase(phase_table(df, "prefill"), key, "prefill")
    dec = fit_phase(phase_table(df, "decode"), key, "decode", batch_term=True)
    L_max = float((phase_table(raw, "prefill").t2 / phase_table(raw, "prefill").t).max())
    use = pairs[pairs.input_len <= L_max]
    L, O = use.input_len.to_numpy(float), use.output_len.to_numpy(float)
    P = float(np.mean(pre.predict(L, L * L)))
    ctx = float(np.sum(O * (L + O / 2)) / np.sum(O))      # time-averaged context of a running request
    a = float(dec.predict(0.0, None, 0.0)[0])
    b = float(dec.predict(ctx, None, 1.0)[0]) - a
    max_batch = float(phase_table(raw, "decode").batch.max())
    cap = capacity(P, float(O.mean()), a, b, cfg.slo_tbt_s, max_batch)
    rows.append({"model": key, "pairs_used": len(use), "prefill_mean_s": P, "output_mean": float(O.mean()), "ctx_mean": ctx,
                 "step_a_s": a, "step_b_s": b, "max_batch": max_batch, "capacity_rps": cap.lam, "running": cap.running,
                 "gap_s": cap.gap_s, "prefill_share": cap.prefill_share,
                 "binding": "batch" if cap.running >= max_batch * (1 - 1e-6) else "tbt"})
    for lam in np.linspace(0.05, cap.lam * 1.3, 60):
        s = steady_state(lam, P, float(O.mean()), a, b)
        curves.append({"model": key, "lam": lam, "gap_s": np.nan if s is None else s.gap_s,
                       "running": np.nan if s is None else s.running})
res = pd.DataFrame(rows)
res

# %%
cur = pd.DataFrame(curves)
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.2))  # left: mean-value model; right: simulation
for (key, g), c in zip(cur.groupby("model", sort=False), ["tab:blue", "tab:orange", "tab:green"]):
    ax.plot(g.lam, g.gap_s * 1e3, color=c, label=key)
    r = res.set_index("model").loc[key]
    ax.plot([r.capacity_rps], [r.gap_s * 1e3], "o", color=c)
ax.axhline(cfg.slo_tbt_s * 1e3, color="0.4", ls="--", lw=0.8, label="TBT target")
ax.set_xlabel("arrival rate (requests/s, one model on one H800)")
ax.set_ylabel("mean token gap (ms)")
ax.set_ylim(0, 2 * cfg.slo_tbt_s * 1e3)
ax.set_title("dots: capacity (TBT met, batch ≤ largest profiled)", fontsize=8)
ax.legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## Paper vs ours
# | quantity | paper | ours |
# |---|---|---|
# | single-model RPS per GPU | "several" | `single_model_rps_per_gpu` (Qwen2.5-7B) below |
# | headroom over concurrent serving | > 10× of < 0.1 RPS/GPU | `headroom_vs_0p1_rps` = ours / 0.1 |

# %% [markdown]
# ## Single-model simulation
# One H800 serving one model (the ServerlessLLM worker of `servesim.systems.aegaeon.sllm` with a
# single resident model, so there are no swaps): all queued prompts are prefilled in one step with
# priority over decoding, at most 200 requests run (the largest profiled batch), step times are the
# App. A.2 regressions fitted on the H800 profiles. Arrivals: one Poisson stream, the artifact's
# ShareGPT lengths. The capacity is the largest rate with attainment >= 90 % (bisection between a
# rate that passes and one that fails; the mean-value capacity sets the bracket).

# %%
import math

from servesim.systems.aegaeon import Settings, simulate
from servesim.workload.gen_aegaeon import market

full = scale == "full"
des_duration_s = des_duration_s or (120.0 if full else 60.0)
des_iters = des_iters or (7 if full else 5)
des_all_models = full if des_all_models is None else des_all_models
line = 0.9


def des_attainment(key: str, lam: float) -> dict:
    s = Settings(gpu=gpu.lower(), sllm_workers=1, checkpoints=(key,), sllm_timeout_s=math.inf, sllm_max_batch=200)
    wl = market(1, lam, des_duration_s, seed)
    r = simulate("sllm", wl, s).requests
    return {"model": key, "lam": lam, "requests": len(wl), "attain_ae": float(r.attain_ae.mean()),
            "attain_token": float(r.attain_token.mean()),
            "ttft_p90_s": float((r.first_token_s - r.arrival_s).quantile(0.9))}


des_rows, des_cap = [], {}
for m in (models if des_all_models else [claim_model]):
    key = get_model(m).key
    lo, hi = 0.5, 2.0 * float(res.set_index("model").loc[key].capacity_rps)
    pts = [des_attainment(key, lo), des_attainment(key, hi)]
    for _ in range(3):  # widen the bracket until the upper rate fails
        if pts[-1]["attain_ae"] < line:
            break
        lo, hi = hi, 2 * hi
        pts.append(des_attainment(key, hi))
    if pts[0]["attain_ae"] < line:
        raise RuntimeError(f"{key}: attainment {pts[0]['attain_ae']:.3f} < {line} already at {lo} req/s")
    for _ in range(des_iters):
        mid = 0.5 * (lo + hi)
        p = des_attainment(key, mid)
        pts.append(p)
        lo, hi = (mid, hi) if p["attain_ae"] >= line else (lo, mid)
    des_cap[key] = lo
    des_rows += pts
des = pd.DataFrame(des_rows).sort_values(["model", "lam"]).reset_index(drop=True)
des

# %%
for key, g in des.groupby("model", sort=False):
    ln, = ax2.plot(g.lam, 100 * g.attain_ae, "o-", ms=3, label=f"{key} (attain_ae)")
    ax2.plot(g.lam, 100 * g.attain_token, "x:", ms=3, color=ln.get_color(), label=f"{key} (per token)")
    ax2.axvline(des_cap[key], color="0.6", lw=0.8)
ax2.axhline(100 * line, color="0.4", ls="--", lw=0.8)
ax2.set_xlabel("arrival rate (requests/s, one model on one H800)")
ax2.set_ylabel("SLO attainment (%)")
ax2.set_title("simulation: SLO attainment; grey lines: capacity", fontsize=8)
ax2.legend(fontsize=7)
fig.tight_layout()
fig

# %%
r = res.set_index("model").loc[get_model(claim_model).key]
cap_des = des_cap[get_model(claim_model).key]
metrics = {
    "single_model_rps_per_gpu": float(cap_des),
    "headroom_vs_0p1_rps": float(cap_des / production_rps_per_gpu),
    "single_model_rps_per_gpu_mean_value": float(r.capacity_rps),
}
print(res[["model", "capacity_rps", "running", "gap_s", "binding"]].round(3).to_string(index=False))
print({k: round(v, 3) for k, v in des_cap.items()})
out = FigureOutputs("aegaeon", "sec2_single_model_capacity", scale=scale, root=root)
res["des_capacity_rps"] = res.model.map(des_cap)  # NaN where not simulated (quick scale: claim_model only)
out.save_figure(fig)
out.write_data(res)
out.write_metrics(metrics)
pd.Series(metrics)
