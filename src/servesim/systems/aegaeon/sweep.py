"""One system over a load sweep (Aegaeon Figs 11-13): SLO attainment per point and the goodput.

    python -m servesim.systems.aegaeon.sweep --system aegaeon --rate 0.1 --models 16 20 24 ... -o out/
    python -m servesim.systems.aegaeon.sweep --system sllm --models 40 --rate 0.05 0.1 ... -o out/

Exactly one of ``--models`` / ``--rate`` may list several values: that one is the sweep's x axis
(the number of models at a per-model rate, or the per-model rate at a number of models).

Workloads (``--workloads``): ``ae`` (default) replays the artifact's own workload file for each
point, ``aegaeon/workloads/synth-{models}-{rate}-{in}-{out}.csv`` (ShareGPT pairs, tokenised by the
authors, per-model Poisson arrivals), so every system sees identical requests, as the spec asks;
``generated`` draws the same construction afresh (``servesim.workload.gen_aegaeon.market``: the
artifact's arrival rule and length pool) with ``--repeats`` seeds per point, for a band over the
short, transient-dominated workloads. ``--duration-s`` is the sweep's workload length; an artifact
file much shorter than it (the artifact's ``synth-40-0.1-1.0-1.0.csv`` is a 60-s file where the
0.1 req/s sweeps are 120 s) is replaced by a drawn one (``--short-file generate``; ``keep``,
``error``), marked in points.csv's ``workload_kind``. ``--in-scale`` / ``--out-scale`` 2.0 select ShareGPT-ix2 / -ox2
(Fig 12); ``--slo-scale`` scales both SLOs (Fig 13); ``--ttft-s`` / ``--tbt-s`` set them first
(Fig 17: the A10 and 72B setups vary one of the two).

``--detail`` (Figs 14-16) also writes, over every point, ``requests.csv`` (one row per request: its
times, attainment and the six-way breakdown of ``servesim.metrics.time_breakdown``),
``switches.csv`` (every model load: instance, checkpoint, latency, full load time, prefetch) and
``host_cache.csv`` (each node's unified CPU KV cache per block shape at its allocation peak).

Writes ``points.csv`` (one row per point and repeat: attainment in both readings, failures,
switches, TTFT) and ``summary.json`` (the settings, the sweep and its goodput in both readings of
``servesim.metrics.slo.goodput_x`` at the 90 % line, on the mean attainment per point).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError
from ...metrics.slo import GOODPUT_READINGS, goodput_x
from .run import settings_from
from .settings import Settings
from .simulate import SYSTEMS, simulate, summary
from .slo import GOODPUT_LINE

WORKLOADS = ("ae", "generated")
SHORT_FILE = ("generate", "keep", "error")
#: the scalar fields of a run summary kept per point
POINT_FIELDS = ("n_requests", "n_failed", "tokens", "attainment_pct", "attainment_token_pct",
                "attainment_pct_skip_failed", "ttft_p50_s", "ttft_p90_s", "n_switches", "switch_latency_mean_s",
                "switch_prefetched_frac", "kv_transfer_s_mean", "sim_end_s")


def ae_workload_key(models: int, rate: float, in_scale: float, out_scale: float) -> str:
    """The artifact's file name for a point (its own spelling: ``synth-40-0.05-1.0-1.0.csv``)."""
    return f"aegaeon/workloads/synth-{models}-{rate:g}-{in_scale:.1f}-{out_scale:.1f}.csv"


def ae_workload_path(models: int, rate: float, in_scale: float, out_scale: float):
    """The artifact's file for a point; a missing one is an InputError naming the point and the file."""
    from ...data import DataError, locate

    try:
        return locate(ae_workload_key(models, rate, in_scale, out_scale))
    except DataError as e:
        raise InputError(f"--workloads ae: no artifact workload for {models} models at rate {rate:g} "
                         f"(in x{in_scale:g}, out x{out_scale:g}): {e}") from None


def artifact_duration_s(rate: float) -> float:
    """The artifact's workload length for a rate: 120 s at 0.1 req/s per model and below (its
    baseline CSVs), else 60 s (spec aegaeon §2, Arrivals)."""
    return 120.0 if rate <= 0.1 + 1e-12 else 60.0


def workload(source: str, models: int, rate: float, in_scale: float, out_scale: float, seed: int,
             duration_s: float | None = None, short_file: str = "generate") -> tuple[pd.DataFrame, str, str]:
    """The requests of one point, where they came from and their kind (``artifact``, ``generated``
    or ``generated-for-short-file``). ``duration_s``: the sweep's workload
    length (default: the artifact's rule). An artifact file that spans less than 3/4 of it does not
    carry this point's load (the artifact ships one 60-s ``synth-40-0.1`` file, Fig 11c's, where the
    0.1 req/s sweeps need 120 s); ``short_file`` says what to do: ``generate`` the point with the
    artifact's arrival rule and length pool over ``duration_s`` (default), ``keep`` the file as
    shipped, or ``error``."""
    from ...workload.gen_aegaeon import market

    duration = duration_s or artifact_duration_s(rate)
    if source == "ae":
        from ...workload import load_aegaeon

        key = ae_workload_key(models, rate, in_scale, out_scale)
        wl = load_aegaeon(ae_workload_path(models, rate, in_scale, out_scale))
        span = float(wl.arrival_s.max()) if len(wl) else 0.0
        if span >= 0.75 * duration or short_file == "keep":
            return wl, key, "artifact"
        if short_file == "error":
            raise InputError(f"{key}: spans {span:.0f} s, not the sweep's {duration:g} s (--short-file)")
        why = f"; {key} spans {span:.0f} s"
    else:
        why = ""
    wl = market(models, rate, duration, seed, input_scale=in_scale, output_scale=out_scale)
    src = f"market(models={models}, rate={rate:g}, duration={duration:g}, seed={seed}){why}"
    return wl, src, "generated-for-short-file" if why else "generated"


def check_options(a: argparse.Namespace) -> Settings:
    """Every option and input checked before any work; returns the run's settings."""
    if len(a.models) > 1 and len(a.rate) > 1:
        raise InputError("--models and --rate: only one of them may list several values (the sweep's x axis)")
    if any(m < 1 for m in a.models):
        raise InputError(f"--models: need counts >= 1, got {a.models}")
    if any(not (r > 0 and np.isfinite(r)) for r in a.rate):
        raise InputError(f"--rate: need finite rates > 0, got {a.rate}")
    for opt in ("in_scale", "out_scale", "slo_scale"):
        v = getattr(a, opt)
        if not (v > 0 and np.isfinite(v)):
            raise InputError(f"--{opt.replace('_', '-')}: need a finite number > 0, got {v}")
    if a.duration_s is not None and not (a.duration_s > 0 and np.isfinite(a.duration_s)):
        raise InputError(f"--duration-s: need a finite number > 0, got {a.duration_s}")
    if a.repeats < 1 or (a.workloads == "ae" and a.repeats != 1):
        raise InputError(f"--repeats {a.repeats}: need >= 1, and 1 with --workloads ae (one file per point)")
    for opt in ("ttft_s", "tbt_s"):
        v = getattr(a, opt)
        if v is not None and not (v > 0 and np.isfinite(v)):
            raise InputError(f"--{opt.replace('_', '-')}: need a finite number of seconds > 0, got {v}")
    slo = [f"{k}={v!r}" for k, v in (("ttft_s", a.ttft_s), ("tbt_s", a.tbt_s)) if v is not None]
    try:  # settings_from reports a bad --set as SystemExit (run.py's contract), Settings a bad value as ValueError
        s = settings_from(a.gpu, [*a.set, *slo], a.slo_scale)
    except (SystemExit, ValueError) as e:
        raise InputError(str(e)) from None
    # the data files last: a bad option is reported as itself, also where the data are not fetched
    if a.workloads == "ae":
        for m in a.models:
            for r in a.rate:
                ae_workload_path(m, r, a.in_scale, a.out_scale)
    return s


#: the per-request columns ``--detail`` keeps (token times are summarised by the breakdown)
REQUEST_FIELDS = ("request_id", "model", "checkpoint", "node", "arrival_s", "prompt_tokens", "output_tokens",
                  "tokens_out", "failed", "first_token_s", "finish_s", "attain_ae", "attain_token", "kv_transfer_s",
                  "kv_wait_s", "prefill_switch_s", "switch_wait_s")


def detail_tables(res, key: dict) -> dict[str, pd.DataFrame]:
    """One point's requests (with the Fig 14 breakdown), switch log and host-cache report, each
    row prefixed with ``key`` (system, models, rate, repeat)."""
    from ...metrics.time_breakdown import request_breakdown

    t = res.requests
    req = t[list(REQUEST_FIELDS)].join(request_breakdown(t))
    cache = [{"node": n, "shape": shape, **{k: v[k] for k in ("allocated_bytes", "utilized_bytes", "fragmented_bytes")}}
             for n, rep in enumerate(res.stats.get("host_cache") or []) for shape, v in rep.items() if shape != "all"]
    cache = pd.DataFrame(cache, columns=["node", "shape", "allocated_bytes", "utilized_bytes", "fragmented_bytes"])
    return {name: df.assign(**key)[[*key, *df.columns]]
            for name, df in (("requests", req), ("switches", res.switches), ("host_cache", cache))}


def sweep(a: argparse.Namespace, s: Settings, detail: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Run every point under settings ``s``; returns the points table and the summary. ``detail``
    (a dict) receives the ``--detail`` tables, concatenated over the points."""
    x_name = "rate" if len(a.rate) > 1 else "models"
    rows = []
    parts: dict[str, list[pd.DataFrame]] = {}
    for m in a.models:
        for r in a.rate:
            for k in range(a.repeats):
                wl, src, kind = workload(a.workloads, m, r, a.in_scale, a.out_scale, a.seed + k, a.duration_s, a.short_file)
                t0 = time.perf_counter()
                res = simulate(a.system, wl, s, source=src)
                wall = time.perf_counter() - t0
                summ = summary(res, a.system, s)
                if detail is not None:
                    for name, df in detail_tables(res, {"system": a.system, "models": m, "rate": r, "repeat": k}).items():
                        parts.setdefault(name, []).append(df)
                rows.append({"system": a.system, "models": m, "rate": r, "repeat": k, "workload": src, "workload_kind": kind,
                             **{f: summ[f] for f in POINT_FIELDS}, "wall_s": wall})
                print(f"{a.system} {m} models x {r:g} rps (repeat {k}): attainment {summ['attainment_pct']:.1f}% "
                      f"({summ['n_failed']} failed) {wall:.2f} s", flush=True)
    pts = pd.DataFrame(rows)
    if detail is not None:
        detail.update({name: pd.concat(dfs, ignore_index=True) for name, dfs in parts.items()})
    mean = pts.groupby(x_name, sort=True)["attainment_pct"].mean()
    out = {
        "system": a.system, "x": x_name, "models": a.models, "rate": a.rate, "in_scale": a.in_scale,
        "out_scale": a.out_scale, "slo_scale": a.slo_scale, "ttft_s": s.ttft_s, "tbt_s": s.tbt_s,
        "workloads": a.workloads, "duration_s": a.duration_s or "artifact rule", "short_file": a.short_file,
        "n_points_generated_for_short_file": int((pts.workload_kind == "generated-for-short-file").sum()),
        "repeats": a.repeats, "seed": a.seed, "line": GOODPUT_LINE,
        "metric": "attain_ae (the artifact's compute_slo; failed requests count 0), mean over requests, "
                  "then over repeats",
        "goodput": {rd: goodput_x(mean.index, mean.to_numpy() / 100.0, GOODPUT_LINE, rd) for rd in GOODPUT_READINGS},
        "n_points": int(len(mean)), "sim_wall_s": float(pts.wall_s.sum()), "settings": s.as_dict(),
    }
    return pts, out


def run(a: argparse.Namespace) -> int:
    from ...output_dir import staged_output_dir

    s = check_options(a)
    with staged_output_dir(a.out, command=f"aegaeon sweep --system {a.system}", force=a.force) as tmp:
        detail = {} if a.detail else None
        pts, summ = sweep(a, s, detail)
        pts.to_csv(tmp / "points.csv", index=False)
        for name, df in (detail or {}).items():
            df.to_csv(tmp / f"{name}.csv", index=False)
        (tmp / "summary.json").write_text(json.dumps(summ, indent=2, default=float) + "\n")
    print(f"{a.system}: goodput {summ['goodput']} ({summ['x']}) -> {Path(a.out)}")
    return 0


def main(argv=None) -> int:
    from ...cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.aegaeon.sweep", description=__doc__.split("\n")[0])
    ap.add_argument("--system", required=True, choices=SYSTEMS)
    ap.add_argument("--models", type=int, nargs="+", required=True, help="number(s) of models")
    ap.add_argument("--rate", type=float, nargs="+", required=True, help="per-model request rate(s), req/s")
    ap.add_argument("--in-scale", type=float, default=1.0, help="input-length scale (2.0: ShareGPT-ix2)")
    ap.add_argument("--out-scale", type=float, default=1.0, help="output-length scale (2.0: ShareGPT-ox2)")
    ap.add_argument("--slo-scale", type=float, default=1.0, help="scale both TTFT (10 s) and TBT (0.1 s)")
    ap.add_argument("--ttft-s", type=float, default=None, help="the TTFT target before --slo-scale (default 10 s)")
    ap.add_argument("--tbt-s", type=float, default=None, help="the TBT target before --slo-scale (default 0.1 s)")
    ap.add_argument("--workloads", default="ae", choices=WORKLOADS)
    ap.add_argument("--repeats", type=int, default=1, help="seeds per point (--workloads generated)")
    ap.add_argument("--duration-s", type=float, default=None,
                    help="the sweep's workload length (default: the artifact's, 120 s at <= 0.1 req/s, else 60 s)")
    ap.add_argument("--short-file", default="generate", choices=SHORT_FILE,
                    help="an artifact file shorter than the sweep: generate the point (default), keep it, or error")
    ap.add_argument("--detail", action="store_true",
                    help="also write requests.csv, switches.csv and host_cache.csv (Figs 14-16)")
    ap.add_argument("--gpu", default="h800")
    ap.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                    help="any Settings field (repeatable; several pairs may follow one --set)")
    add_output_args(ap)
    return run_command(run, ap.parse_args(argv), "aegaeon sweep")


if __name__ == "__main__":
    sys.exit(main())
