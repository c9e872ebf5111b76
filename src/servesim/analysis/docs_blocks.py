"""Generated blocks of the docs: measured numbers a page shows, rendered from the results that hold
them, so no page types one by hand (issue 27).

A block sits between ``<!-- NAME:begin ... -->`` and ``<!-- NAME:end -->`` in a page; `update`
rewrites every block it has a renderer for (``servesim docs``), through `replace_block`, which the
README's generated tables use too. Blocks:

- ``perf-engine-mape`` (docs/architecture.md): the step-time backends against the engines' own
  measured steps, from the calibration's ``perf_models`` metrics (``gpu_bench_mape_pct[...]``);
- ``perf-heldout`` (docs/architecture.md): every backend's held-out median MAPE and R² over the
  public measurement sets (``median_mape_pct_<backend>``, ``median_r2_<backend>``);
- ``perf-transfer`` (docs/architecture.md): a calibrated roofline moved to another GPU, per reading
  and GPU pair (``transfer_gpu_pair_median_mape_pct[...]``, ``transfer_gpu_median_mape_pct[...]``);
- ``engine-fidelity`` (docs/architecture.md): the simulator against the real engine per load, with
  the engine's own spread, from the calibration's ``sim_vs_vllm`` metrics;
- ``engine-fidelity-published`` (docs/architecture.md): the same table from the published snapshot
  (``results-full/calibration``: paper scale's engine, three replays per load), its commit and
  machine from the part's stamp;
- ``perf-engine-costs`` (docs/architecture.md): the engine costs (`perf.engine_overhead`) fitted on
  two Aegaeon H100 models and moved to the third, per held-out model (``engine_cost[...]``);
- ``gpu-bench-hardware`` (docs/architecture.md): the committed GPU measurements themselves
  (``src/servesim/perf/data/gpu_bench/``): H200 against H100 step times where both measured the
  same steps, and the H100's copy bandwidths and GEMM rate against its datasheet.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

#: backend key of perf_models' metrics -> column title
MAPE_COLUMNS = {"gpu-bench": "bare profile",
                "gpu-bench+engine": "+ engine costs fitted on the other models' H100 steps",
                "gpu-bench-fit": "profile-fitted roofline (`gpu-bench-fit`)"}
_KEY = re.compile(r"gpu_bench_mape_pct\[(?P<backend>[^|]+)\|(?P<engine>[^:]+):(?P<model>[^:]+):(?P<gpu>[^:]+):tp(?P<tp>\d+)\]")
_GPU = {"h100-80gb": "H100", "h800": "H800", "a10": "A10"}


def perf_engine_mape(metrics_file: Path) -> str:
    """The MAPE table (one row per measured set, one column per backend)."""
    m = json.loads(Path(metrics_file).read_text())
    rows: dict[tuple, dict[str, float]] = {}
    for k, v in m.items():
        g = _KEY.fullmatch(k)
        if g and g["backend"] in MAPE_COLUMNS:
            rows.setdefault((g["engine"], g["model"], g["gpu"], int(g["tp"])), {})[g["backend"]] = float(v)
    if not rows:
        raise ValueError(f"{metrics_file}: no gpu_bench_mape_pct[...] keys")
    cols = [c for c in MAPE_COLUMNS if any(c in r for r in rows.values())]
    out = ["| measured set (engine) | " + " | ".join(MAPE_COLUMNS[c] for c in cols) + " |",
           "|---" * (len(cols) + 1) + "|"]
    for (engine, model, gpu, tp), r in sorted(rows.items(), key=lambda t: (t[0][0], t[0][2], t[0][1], t[0][3])):
        name = f"{engine.capitalize()} {model}, {_GPU.get(gpu, gpu)}" + (f", TP {tp}" if tp > 1 else "")
        out.append(f"| {name} | " + " | ".join(f"{r[c]:.1f} %" if c in r else "" for c in cols) + " |")
    return "\n".join(out)


#: perf_models' backend names -> how the page calls them
HELDOUT_BACKENDS = {"table": "`table` (the set's own profile interpolated; held-out points)",
                    "roofline_calibrated": "`roofline-calibrated` (held-out 20 %)",
                    "fitted": "`fitted` (held-out 20 %)",
                    "roofline_prior": "`roofline-prior` (datasheet only; all rows)",
                    "vidur": "`vidur` (operator profiles; all rows)"}
#: transfer readings -> column title
TRANSFER_READINGS = {"zero-shot": "`zero-shot` (default)", "zero-shot-pooled-source": "`zero-shot-pooled-source`",
                     "host-from-other-models": "`host-from-other-models` (not zero-shot)"}
_PAIR = re.compile(r"transfer_gpu_pair_median_mape_pct\[(?P<reading>[^|]+)\|(?P<src>[^>]+)->(?P<dst>[^\]]+)\]")


_COST = re.compile(r"engine_cost\[(?P<param>[^|]+)\|(?P<model>[^\]]+)\]")


def perf_engine_costs(metrics_file: Path) -> str:
    """One row per held-out model: the engine costs fitted on the other Aegaeon H100 models."""
    params: dict[str, dict[str, float]] = {}
    for k, v in _metrics(metrics_file).items():
        m = _COST.fullmatch(k)
        if m:
            params.setdefault(m["model"], {})[m["param"]] = v
    if not params:
        raise ValueError(f"{metrics_file}: no engine_cost[...] metrics")
    rows = ["| held-out model (fitted on the other two) | prefill kernel factor | decode kernel factor | "
            "per step | per sequence |", "|---|---|---|---|---|"]
    for model, p in sorted(params.items()):
        rows.append(f"| {model} | {p.get('k_prefill', float('nan')):.2f} | {p.get('k_decode', float('nan')):.2f} | "
                    f"{p.get('overhead_ms', float('nan')):.2f} ms | {p.get('seq_overhead_us', float('nan')):.0f} µs |")
    return "\n".join(rows)


def _metrics(metrics_file: Path) -> dict:
    return json.loads(Path(metrics_file).read_text())


def perf_heldout(metrics_file: Path) -> str:
    """One row per step-time backend: median MAPE and R² over the public sets (held out where the
    backend is fitted on the set)."""
    m = _metrics(metrics_file)
    rows = [(name, m[f"median_mape_pct_{b}"], m.get(f"median_r2_{b}")) for b, name in HELDOUT_BACKENDS.items()
            if f"median_mape_pct_{b}" in m]
    if not rows:
        raise ValueError(f"{metrics_file}: no median_mape_pct_<backend> keys")
    n = m.get("n_datasets")
    sets = f"{int(n)} public measurement sets" if n is not None else "the public measurement sets"
    out = [f"| backend (median over {sets}) | MAPE | R² |", "|---|---|---|"]
    out += [f"| {name} | {mape:.1f} % | " + (f"{r2:.3f}" if r2 is not None else "") + " |"
            for name, mape, r2 in sorted(rows, key=lambda r: r[1])]
    return "\n".join(out)


def perf_transfer(metrics_file: Path) -> str:
    """The transfer table: one row per (source -> target) GPU pair, one column per reading, and the
    median over all pairs and models."""
    m = _metrics(metrics_file)
    pairs: dict[tuple[str, str], dict[str, float]] = {}
    for k, v in m.items():
        g = _PAIR.fullmatch(k)
        if g and g["reading"] in TRANSFER_READINGS:
            pairs.setdefault((g["src"], g["dst"]), {})[g["reading"]] = float(v)
    if not pairs:
        raise ValueError(f"{metrics_file}: no transfer_gpu_pair_median_mape_pct[...] keys")
    cols = [r for r in TRANSFER_READINGS if any(r in p for p in pairs.values())]
    out = ["| source → target | " + " | ".join(TRANSFER_READINGS[c] for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    # the same-silicon pairs first, then towards the A10, then from it (the error grows down the table)
    order = lambda p: ("a10" in p, p[0] == "a10", p)  # noqa: E731
    for src, dst in sorted(pairs, key=order):
        r = pairs[(src, dst)]
        out.append(f"| {_GPU.get(src, src)} → {_GPU.get(dst, dst)} | "
                   + " | ".join(f"{r[c]:.1f} %" if c in r else "" for c in cols) + " |")
    alls = [m.get(f"transfer_gpu_median_mape_pct[{c}]") for c in cols]
    if any(a is not None for a in alls):
        out.append("| all pairs × models | " + " | ".join(f"{a:.1f} %" if a is not None else "" for a in alls) + " |")
    return "\n".join(out)


#: sim_vs_vllm metric stem -> row title
FIDELITY_ROWS = {"ttft_p50": "TTFT P50", "ttft_p90": "TTFT P90", "e2e_p50": "E2E P50", "e2e_p90": "E2E P90",
                 "tbt_p50": "TBT P50", "throughput_req_s": "throughput"}
_LOAD = re.compile(r"ttft_p50_rel_err_load(?P<x>[0-9.]+)")


def _pct(v, signed=True) -> str:
    return "" if v is None else (f"{100 * v:+.1f} %" if signed else f"{100 * v:.1f} %")


#: the judged metrics below saturation (the sim_vs_vllm notebook's target), and how many misses a block names
_JUDGED = ("ttft_p50", "ttft_p90", "e2e_p50", "e2e_p90", "tbt_p50")
_MISSES_SHOWN = 3


def _sampling_verdict(m: dict, loads) -> str:
    """The verdict with each miss read against its sampling interval and the engine's spread
    (``verdict_10pct_below_saturation``; nothing for metrics written before it), the misses listed."""
    v = m.get("verdict_10pct_below_saturation")
    if v is None:
        return ""
    misses = sorted(((x, k) for x in loads if float(x) < 1.0 for k in _JUDGED
                     if m.get(f"{k}_rel_err_load{x}") is not None and abs(m[f"{k}_rel_err_load{x}"]) > 0.10),
                    key=lambda c: -abs(m[f"{c[1]}_rel_err_load{c[0]}"]))
    shown = []
    for x, k in misses[:_MISSES_SHOWN]:
        lo, hi, spread = (m.get(f"{k}_{f}_load{x}") for f in ("rel_err_lo", "rel_err_hi", "engine_spread"))
        shown.append(f"{FIDELITY_ROWS.get(k, k)} at load {x} {_pct(m[f'{k}_rel_err_load{x}'])}"
                     + (f", interval {_pct(lo)} to {_pct(hi)}" if lo is not None and hi is not None else "")
                     + (f", spread {_pct(spread, False)}" if spread is not None and spread == spread else ""))
    more = f"; {len(misses) - len(shown)} more" if len(misses) > len(shown) else ""
    return ("within 10 % below saturation, each miss read against its 90 % sampling interval (a paired block "
            f"bootstrap of the requests, `servesim.metrics.interval`) and the engine's spread: **{v}**"
            + (f" ({len(misses)} {'miss' if len(misses) == 1 else 'misses'}, the largest: {'; '.join(shown)}{more})"
               if misses else ""))


def engine_fidelity(metrics_file: Path) -> str:
    """Simulator error per metric (rows) and load (columns), the engine's spread across its repeats
    in brackets, then the run's capacity error, replays and verdict."""
    from servesim.engine.profile import LIVE_SLICINGS

    m = _metrics(metrics_file)
    loads = sorted({g["x"] for k in m if (g := _LOAD.fullmatch(k))}, key=float)
    if not loads:
        raise ValueError(f"{metrics_file}: no ttft_p50_rel_err_load<x> keys")
    out = ["| simulator − engine (engine spread) | " + " | ".join(f"load {x}" for x in loads) + " |",
           "|---" * (len(loads) + 1) + "|"]
    for stem, title in FIDELITY_ROWS.items():
        cells = []
        for x in loads:
            err, spread = m.get(f"{stem}_rel_err_load{x}"), m.get(f"{stem}_engine_spread_load{x}")
            cells.append(_pct(err) + (f" ({_pct(spread, signed=False)})" if spread is not None else ""))
        if any(cells):
            out.append(f"| {title} | " + " | ".join(cells) + " |")
    verdict = m.get("meets_10pct_or_spread_below_saturation")
    spread = m.get("max_engine_spread_p50_p90_ttft_e2e_below_saturation")
    spread_txt = (f"against an engine spread up to {_pct(spread, False)}; " if spread is not None
                  else "(one replay per load: no engine spread at this scale); ")
    out += ["", f"Saturation capacity {_pct(m.get('capacity_rel_err'))}; {m.get('replays')} replays "
            f"({m.get('replay_mode')}, at least {m.get('replay_repeats_min')} per load), {m.get('lagged_replays')} lagged; "
            f"the worst P50/P90 TTFT and E2E error below saturation {_pct(m.get('max_abs_rel_err_p50_p90_ttft_e2e_below_saturation'), False)} "
            + spread_txt
            + f"step-time fit, held-out MAPE {m.get('step_fit_heldout_mape_pct', float('nan')):.1f} %"
            + (f" (steps of one shape scatter by a median {m['step_time_noise_floor_median_pct']:.1f} % on their own)"
               if m.get("step_time_noise_floor_median_pct") is not None else "") + "; "
            + (_sampling_verdict(m, loads) + "; the older reading, where a spread over 10 % passes a miss: "
               if m.get("verdict_10pct_below_saturation") is not None else "")
            + "within 10 % or the engine's spread below saturation: "
            + {True: "**yes**", False: "**no**", None: "undecided (a load without a lag-clean replay)"}.get(verdict, str(verdict))
            + "."]
    names = (("speed_matched", "speed-matched (each replay simulated at its own measured prefill and decode speeds)"),
             ("probe_matched", "probe-matched (each replay simulated at the host speed a fixed probe measured just "
                               "before and after it)"),
             ("steps", "steps (the step model refitted on the engine's own steps)"))
    readings = [(name, m.get(f"{key}_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation")) for key, name in names]
    shares = {k[len("sched_same_share_"):]: v for k, v in m.items() if k.startswith("sched_same_share_") and v is not None}
    if shares:
        out.append(f"Scheduling, step by step (the simulator's scheduler on the engine's own clock, the first replay "
                   f"of each of {len(shares)} loads and shapes): the same batch as the engine at "
                   f"{_pct(min(shares.values()), False)} of steps at the lowest.")
    if any(v is not None for _, v in readings):
        out.append("The same worst error under the readings that take the host's speed out: "
                   + "; ".join(f"{n} {_pct(v, False)}" for n, v in readings if v is not None) + ".")
    linear = m.get("linear_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation")
    if m.get("step_form") and linear is not None:
        out.append(f"The step model's form is {m['step_form']} (`servesim.perf.fitted.FORMS`); fitted in the linear form "
                   f"on the same profile steps (the reading `linear`) that worst error is {_pct(linear, False)}.")
    no_gaps = m.get("no_gaps_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation")
    if m.get("step_clock") and no_gaps is not None:
        out.append(f"The live steps are timed by the clock {m['step_clock']} (`servesim.engine.records.STEP_CLOCKS`: "
                   f"each step with the gap before it); fitted on the steps' own wall times instead (the reading "
                   f"`no-gaps`) that worst error is {_pct(no_gaps, False)}.")
    observed = m.get("observed_weights_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation")
    if m.get("step_weighting") and observed is not None:
        how = {"relative-to-fit": ": each step's error over the fit's prediction, so the fit is the batch's mean "
                                  "step time", "absolute": ": each step's error in seconds"}.get(m["step_weighting"], "")
        out.append(f"The step model weighs its steps {m['step_weighting']} (`servesim.perf.fitted.WEIGHTINGS`{how}); "
                   f"weighed over each step's measured time instead (the reading `observed-weights`, the fit until "
                   f"7 Dec) that worst error is {_pct(observed, False)}.")
    held = "loads (held-out half)"
    mean_ape, median_ape = (m.get(f"step_time_{k}_median_ape_pct[{held}]") for k in ("refit", "refit-median"))
    ratio = m.get(f"step_time_refit_median_ratio[{held}]")
    if mean_ape is not None and median_ape is not None and ratio is not None:
        out.append(f"On the engine's own held-out steps (a refit on the other half of the load replays' steps) the step "
                   f"model's median error is {mean_ape:.1f} % fitted for the mean step, as the simulator's is, and "
                   f"{median_ape:.1f} % in the same form fitted for the median step (the form's own error; weighting "
                   f"`median`): the median step ran {_pct(abs(ratio - 1.0), False)} {'below' if ratio < 1 else 'above'} "
                   f"the mean fit" + (", the host's slow steps scattering further than its fast ones." if ratio < 1 else "."))
    speeds = [v for k, v in m.items() if k.startswith("speed_spread_") and v is not None and v == v]
    if speeds:
        out.append(f"The engine's own speed (its steps' measured over predicted time) differed between repeats of one "
                   f"workload by up to {_pct(max(speeds), False)} (`speed_spread_<case>`)"
                   + (f"; each replay's speed was {m['replay_speed_mean_abs_dev_pct']:.1f} % from the profile's on average, "
                      f"and the speed probe around it tracked it within {m['probe_tracking_mean_abs_pct']:.1f} %"
                      if m.get("probe_tracking_mean_abs_pct") is not None else "") + ".")
    left = [(n, m.get(f"{k}_max_engine_spread_unexplained_p50_p90_ttft_e2e_below_saturation"))
            for k, n in (("speed_matched", "their measured step speeds"), ("probe_matched", "their probes' speeds"))]
    if spread is not None and any(v is not None and v == v for _, v in left):
        out.append(f"Of the engine's spread below saturation (up to {_pct(spread, False)}), the simulator's repeats at "
                   + " and at ".join(f"{n} leave up to {_pct(v, False)}" for n, v in left if v is not None and v == v)
                   + " (`engine_spread_unexplained`: the spread of the repeats' engine / sim ratios).")
    p50 = m.get("max_engine_spread_p50_ttft_tpot_e2e_below_saturation")
    p50_left = m.get("speed_matched_max_engine_spread_unexplained_p50_ttft_tpot_e2e_below_saturation")
    if p50 is not None and p50 == p50:
        out.append(f"On P50 TTFT, TBT and E2E alone (issue 33's bound: 5 %) the engine's spread below saturation is up to "
                   f"{_pct(p50, False)}" + (f", {_pct(p50_left, False)} left at the repeats' measured step speeds"
                                            if p50_left is not None and p50_left == p50_left else "") + ".")
    if m.get("host_probe_range_pct") is not None:
        out.append(f"The host over the job: its speed probe (one fixed burst, {m.get('host_probe_runs')} runs) moved "
                   f"{m['host_probe_range_pct']:.1f} % (max − min over median); the replays ran "
                   f"{m.get('replay_speed_min', float('nan')):.2f}-{m.get('replay_speed_max', float('nan')):.2f}× the "
                   f"fit's step time (mean {m.get('replay_speed_mean', float('nan')):.2f}), the live profile's slices "
                   f"placed {m.get('live_placement', 'first')} (`SweepPlan.live_placement`), each "
                   f"{LIVE_SLICINGS[m.get('live_slicing', 'consecutive')]} (`SweepPlan.live_slicing`).")
    shape_errs = [(n, m.get(f"{k}shapes_max_abs_rel_err_p50_p90_ttft_e2e_tbt"))
                  for k, n in (("", "as profiled"), ("speed_matched_", "speed-matched"), ("probe_matched_", "probe-matched"),
                               ("steps_", "steps"), ("linear_", "linear form"), ("no_gaps_", "no-gaps"),
                               ("observed_weights_", "observed-weights"))]
    if shape_errs[0][1] is not None:
        out.append("Held-out shapes (bursty, long prompts, long outputs, a ramp through saturation), the worst P50/P90 "
                   "TTFT and E2E and P50 TBT error: " + "; ".join(f"{n} {_pct(v, False)}" for n, v in shape_errs
                                                                  if v is not None) + ".")
        names = [k[len("shape_load_sim["):-1] for k in m if k.startswith("shape_load_sim[")]
        loaded = [(n, m.get(f"shape_load[{n}]"), m.get(f"shape_load_sim[{n}]")) for n in names]
        if any(v is not None or w is not None for _, v, w in loaded):
            out.append(f"The shapes' loads (arrival rate over the capacity of their own lengths, long shapes on the basis "
                       f"`{m.get('shape_load_basis') or 'tokens'}`; measured on the engine, or the fitted model's where not): "
                       + "; ".join(f"{n} {v:.2f}" if v is not None else f"{n} {w:.2f} (model)"
                                   for n, v, w in loaded if v is not None or w is not None) + ".")
    worst = max(((x, k) for x in loads if float(x) < 1.0 for k in ("ttft_p50", "ttft_p90", "e2e_p50", "e2e_p90")
                 if m.get(f"{k}_rel_err_load{x}") is not None), key=lambda c: abs(m[f"{c[1]}_rel_err_load{c[0]}"]),
                default=None)
    first = m.get(f"step_bias_first_order_{worst[1]}_rel_err_load{worst[0]}") if worst else None
    if first is not None:
        x, k = worst
        out.append(f"That worst error ({FIDELITY_ROWS.get(k, k)} at load {x}, {_pct(m[f'{k}_rel_err_load{x}'])}) is, to "
                   f"first order, the step model's error on that replay's busy time "
                   f"({_pct(m.get(f'step_time_profile_bias_pct_load{x}', float('nan')) / 100)}) times the metric's "
                   f"sensitivity to step time ({m.get(f'sensitivity_{k}_load{x}', float('nan')):.1f}): "
                   f"{_pct(first)}.")
    return "\n".join(out)


def _size(b: int) -> str:
    """A byte count as KiB, MiB or GiB, whichever reads shortest."""
    return f"{b / 2**10:g} KiB" if b < 2**20 else f"{b / 2**20:g} MiB" if b < 2**30 else f"{b / 2**30:g} GiB"


def _ratio_cell(r) -> str:
    return f"{np.median(r):.2f}× ({np.min(r):.2f}–{np.max(r):.2f})" if len(r) else "–"


def gpu_bench_hardware(bench_dir: Path) -> str:
    """Two tables from the committed GPU measurements under ``bench_dir`` (``<hardware>/*.csv``):
    for every table both the H200 and the H100 measured, the H200's step time over the H100's on
    the steps both measured (median and range, prefill and decode steps apart), with the datasheet
    HBM ratio beside it; then the H100's ``bandwidth.csv`` (GB/s per transfer and size; 256 separate
    block copies per block size; one GEMM's TFLOP/s against the datasheet's)."""
    import pandas as pd

    from ..catalog import get_hardware

    keys = ["prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx"]
    h100, h200 = get_hardware("h100-80gb"), get_hardware("h200")
    rows = ["| table | steps both measured | H200 ÷ H100, prefill steps: median (range) | decode steps | "
            "datasheet HBM ratio, inverted |", "|---|---|---|---|---|"]
    for f in sorted((bench_dir / "h200").glob("*.csv")):
        other = bench_dir / "h100-80gb" / f.name
        if not other.exists():
            continue
        j = pd.read_csv(f).merge(pd.read_csv(other), on=keys, suffixes=("_h200", "_h100"))
        r = (j["step_s_h200"] / j["step_s_h100"]).to_numpy(float)
        pre = j["prefill_tokens"].to_numpy() > 0
        rows.append(f"| {f.stem} | {len(j)} | {_ratio_cell(r[pre])} | {_ratio_cell(r[~pre])} | "
                    f"{h100.mem_bw / h200.mem_bw:.2f}× |")
    bw = pd.read_csv(bench_dir / "h100-80gb" / "bandwidth.csv")
    single = bw[bw["copies"] == 1]
    sizes = sorted(single.loc[~single["kind"].str.startswith("gemm"), "bytes"].unique())
    out = ["", "| H100 copy (GB/s) | " + " | ".join(_size(b) for b in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    for kind, g in single[~single["kind"].str.startswith("gemm")].groupby("kind", sort=False):
        by = dict(zip(g["bytes"], g["bytes_per_s"]))
        out.append(f"| {kind} | " + " | ".join(f"{by[b] / 1e9:,.0f}" if b in by else "–" for b in sizes) + " |")
    blocks = bw[bw["copies"] > 1]
    if len(blocks):
        bsizes = sorted((blocks["bytes"] // blocks["copies"]).unique())
        out += ["", f"| H100, {int(blocks['copies'].iloc[0])} block copies (GB/s), block of | "
                + " | ".join(_size(b) for b in bsizes) + " |",
                "|---" * (len(bsizes) + 1) + "|"]
        for kind, g in blocks.groupby("kind", sort=False):
            by = dict(zip(g["bytes"] // g["copies"], g["bytes_per_s"]))
            out.append(f"| {kind} | " + " | ".join(f"{by[b] / 1e9:,.0f}" if b in by else "–" for b in bsizes) + " |")
    for r in bw[bw["kind"].str.startswith("gemm")].itertuples():
        out.append(f"\nOne {r.kind.split('-')[-1]}³ GEMM in {r.kind.split('-')[1]}: {r.bytes_per_s / 1e12:,.0f} TFLOP/s, "
                   f"{100 * r.bytes_per_s / h100.flops:.0f} % of the datasheet's {h100.flops / 1e12:,.0f}.")
    return "\n".join(rows + out)


def replace_block(text: str, begin: str, end: str, block: str) -> str | None:
    """``text`` with everything from ``begin`` through ``end`` replaced by ``block`` (which carries
    the markers itself); None when either marker is missing. Every generated block of a page (the
    README's claims and readings tables, docs/*.md) is written through it."""
    if begin not in text or end not in text.split(begin, 1)[1]:
        return None
    head, rest = text.split(begin, 1)
    return head + block + rest.split(end, 1)[1]


#: the committed GPU measurements (a block rendered from them needs no results)
COMMITTED_BENCH = Path("src/servesim/perf/data/gpu_bench")


#: block name -> (the file it is rendered from, renderer)
def _blocks(root: Path, scale: str) -> dict:
    metrics = root / "results" / scale / "calibration" / "perf_models" / "metrics.json"
    engine = root / "results" / scale / "calibration" / "sim_vs_vllm" / "metrics.json"
    bench = root / COMMITTED_BENCH
    published = root / "results-full" / "calibration" / "sim_vs_vllm" / "metrics.json"
    return {"engine-fidelity": (engine, lambda: engine_fidelity(engine)),
            "engine-fidelity-published": (published, lambda: engine_fidelity(published)),
            "perf-engine-mape": (metrics, lambda: perf_engine_mape(metrics)),
            "perf-engine-costs": (metrics, lambda: perf_engine_costs(metrics)),
            "perf-heldout": (metrics, lambda: perf_heldout(metrics)),
            "perf-transfer": (metrics, lambda: perf_transfer(metrics)),
            "gpu-bench-hardware": (bench / "h100-80gb" / "bandwidth.csv", lambda: gpu_bench_hardware(bench))}


#: blocks measured on the machine that ran them (a real engine): another machine's rerun differs,
#: so their note names the run's commit and machine, and only their form is checked for currency
MEASURED_HERE = frozenset({"engine-fidelity"})


def _provenance(source: Path, results_scale: Path) -> str:
    """`` on <date the source was written> on a <n>-core <machine>`` (the machine from the scale's
    provenance.json: the one the workflow ran on), or what of it is known. The scale's recorded
    commit is not used: a job re-run since then ran later code."""
    import datetime

    when = datetime.datetime.fromtimestamp(source.stat().st_mtime, datetime.timezone.utc).date().isoformat()
    try:
        mach = json.loads((results_scale / "provenance.json").read_text()).get("machine") or {}
    except (OSError, ValueError):
        mach = {}
    return f" on {when}" + (f" on a {mach['cpus']}-core {mach.get('machine', '')} machine" if mach.get("cpus") else "")


def _origin_note(source: Path, root: Path) -> str:
    """Where a block comes from and what to edit instead: a notebook's results, or (a source under
    COMMITTED_BENCH) the committed measurements themselves."""
    rel = source.relative_to(root)
    if rel.parts[0] == "results-full":  # the published snapshot: its part's stamp says where it was made
        st = json.loads((root / rel.parts[0] / rel.parts[1] / "STAMP.json").read_text())
        remade = (st.get("remade") or {}).get(rel.parts[2])
        made = remade or st
        mach = st.get("machine") or {}
        # a figure re-drawn later (`servesim snapshot --figure`) reads the runs the part was published from
        runs = f" from the runs made at {st['commit'][:10]} on {st['published_utc'][:10]}" if remade else ""
        return (f"Generated by `servesim docs` from the published `{rel}` (the calibration's `{source.parent.name}` "
                f"notebook at paper scale, made at {made['commit'][:10]} on {made['published_utc'][:10]}{runs}"
                + (f" on a {mach['cpus']}-core {mach.get('machine', '')} machine" if mach.get("cpus") else "")
                + "); edit that, not this table.")
    if rel.is_relative_to(COMMITTED_BENCH):
        return (f"Generated by `servesim docs` from the committed measurements in `{COMMITTED_BENCH}/` "
                "(each folder's `provenance.json` says where and how); edit those, not this table.")
    return (f"Generated by `servesim docs` from `{rel}` (the calibration's `{source.parent.name}` notebook); "
            "edit that, not this table.")


def update(page: str | Path, root: str | Path, scale: str = "quick") -> list[str]:
    """Rewrite the blocks of ``page`` whose source exists; the names of those rewritten."""
    page, root = Path(page), Path(root)
    text = old_text = page.read_text()
    done = []
    for name, (source, render) in _blocks(root, scale).items():
        m = re.search(rf"<!-- {re.escape(name)}:begin[^>]*-->", text)  # its begin marker, as the page words it
        if m is None or not source.exists():
            continue
        begin = m.group(0)
        note = _origin_note(source, root)
        if name in MEASURED_HERE:
            note += (f" Measured{_provenance(source, root / 'results' / scale)}; a rerun elsewhere measures "
                     "that machine instead.")
        end = f"<!-- {name}:end -->"
        new = replace_block(text, begin, end, f"{begin}\n\n{note}\n\n{render()}\n\n{end}")
        if new is not None:
            text = new
            done.append(name)
    if text != old_text:
        page.write_text(text)
    return done
