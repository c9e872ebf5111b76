"""PreServe Figs 4, 9, 10: one router on 4 LLaMA-2 instances over a QPS sweep (§5.4 RQ3).

    python -m servesim.systems.preserve.routing_sweep --model 7b --router preserve \\
        --qps 8.1 9.3 10.5 --seeds 5 --duration-s 600 [--predictions DIR|CSV] -o out/

writes ``out/points.csv`` (one row per QPS x seed: Fig 9's TTFT / normalised-latency / SLO
statistics, the run's measured router decision time), ``out/summary.json`` (settings, readings,
the isolated normalised latency of the request mix, measured overheads) and, with ``--sample-s``,
``out/timeseries.csv`` (per-instance KV usage and queued prompt tokens of the first seed: Fig 4).

``--predictions``: a ``length_predictions.csv`` of :mod:`.table2` (or the folder / a file beside
it; ``collected``: beside the table2 run's summary.json given as the positional argument, which
is how the workflow's ``collects`` passes it): requests are drawn from its test split and carry
its PreServe predictions; ``oracle`` (default): ShareGPT first-turn pairs whose prediction is the
true length. ``--time-predictor N``
times the length predictor's encoder (MiniLM-L6, batch 1, one thread, up to 512 tokens) on N
ShareGPT prompts (PreServe runs only): Fig 10's measured load-prediction latency. ``--dispatch-overhead``: the delay
before PreServe routes a request, counted in its TTFT/E2E: ``paper`` (45.6 ms, §5.5),
``measured`` (the --time-predictor mean) or ``none``. ``--mu-kv``: what the MU router reads,
``scraped`` (default: utilisation and KV usage every ``--mu-scrape-s`` = 1 s) or ``oracle`` (the
engine's exact values at every decision); recorded under ``settings`` in summary.json.
``--lengths``: what PreServe's router is told of each request's output length, ``predicted`` (default:
the predictions' column) or ``true`` (the request's true length: the same requests and arrivals with a
perfect length predictor, the reading that separates Eq. 1's form from its predictor's error).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError
from . import serving as sv
from .routing import MU_KV_SOURCES

OVERHEADS = ("paper", "measured", "none")
LENGTHS = ("predicted", "true")


def predictions_path(arg: str) -> Path:
    """The length_predictions.csv named by ``arg`` (the file, its folder, or a file beside it)."""
    p = Path(arg)
    cand = p if p.name == "length_predictions.csv" else (p / "length_predictions.csv" if p.is_dir()
                                                          else p.parent / "length_predictions.csv")
    if not cand.exists():
        raise InputError(f"--predictions {arg}: no length_predictions.csv there (run servesim.systems.preserve.table2)")
    return cand


def time_predictor(n: int, seed: int, max_len: int = 512) -> np.ndarray:
    """Wall ms of the length predictor's encoder forward pass per request (batch 1) on ``n``
    ShareGPT first-turn prompts (one warm-up call not counted)."""
    import torch

    from ...workload.sharegpt import load_sharegpt
    from .length_predictor import LengthPredictor, LengthSettings

    torch.set_num_threads(1)
    texts = load_sharegpt(mode="first", max_conversations=max(4 * n, 50), with_text=True)["prompt"].astype(str)
    rng = np.random.default_rng(seed)
    texts = list(texts.iloc[rng.permutation(len(texts))[: n + 1]])
    lp = LengthPredictor(LengthSettings(mode="frozen", max_len=max_len, seed=seed))
    lp.encode_cls(texts[:1])
    out = []
    for t in texts[1:]:
        t0 = time.perf_counter()
        lp.encode_cls([t])
        out.append((time.perf_counter() - t0) * 1e3)
    return np.asarray(out)


def check_options(a: argparse.Namespace) -> sv.ServingSettings:
    if any(not (q > 0 and np.isfinite(q)) for q in a.qps):
        raise InputError(f"--qps: need finite rates > 0, got {a.qps}")
    if not (a.duration_s > 0 and np.isfinite(a.duration_s)):
        raise InputError(f"--duration-s: need a finite number > 0, got {a.duration_s}")
    if a.seeds < 1:
        raise InputError(f"--seeds {a.seeds}: need >= 1")
    if a.sample_s is not None and not a.sample_s > 0:
        raise InputError(f"--sample-s {a.sample_s}: need > 0")
    if a.time_predictor < 0:
        raise InputError(f"--time-predictor {a.time_predictor}: need >= 0")
    if a.dispatch_overhead == "measured" and a.router == "preserve" and a.time_predictor < 1:
        raise InputError("--dispatch-overhead measured needs --time-predictor N (N >= 1) to measure it")
    if a.predictions == "collected":
        if len(a.collected) != 1:
            raise InputError(f"--predictions collected: need one table2 summary.json argument, got {len(a.collected)}")
        a.predictions = str(a.collected[0])
    elif a.collected:
        raise InputError(f"{a.collected[0]}: positional inputs are only read with --predictions collected")
    if a.predictions != "oracle":
        predictions_path(a.predictions)
    s = sv.ServingSettings()
    if a.mu_kv is not None:
        s = replace(s, mu_kv_source=a.mu_kv)
    if a.mu_scrape_s is not None:
        if not (a.mu_scrape_s > 0 and np.isfinite(a.mu_scrape_s)):
            raise InputError(f"--mu-scrape-s {a.mu_scrape_s}: need a finite number > 0")
        s = replace(s, mu_scrape_s=a.mu_scrape_s)
    if a.gpu_mem_gb is not None:
        if not a.gpu_mem_gb > 0:
            raise InputError(f"--gpu-mem-gb {a.gpu_mem_gb}: need > 0")
        s = replace(s, gpu_mem_gb=a.gpu_mem_gb)
    try:
        sv.kv_capacity_tokens(a.model, s)
    except ValueError as e:
        raise InputError(f"--gpu-mem-gb: {e}") from None
    return s


def sweep(a: argparse.Namespace, s: sv.ServingSettings) -> tuple[pd.DataFrame, dict, pd.DataFrame | None]:
    if a.predictions == "oracle":
        pool, kind = sv.request_pool(max_conversations=a.max_conversations, max_model_len=s.max_model_len)
        source = "sharegpt first-turn pairs (oracle predictions)"
    else:
        from .table2 import read_predictions

        path = predictions_path(a.predictions)
        pool, kind = sv.request_pool(read_predictions(path, a.label_set), max_model_len=s.max_model_len)
        source = f"{path.name} label_set={a.label_set} (cached PreServe predictions, test split)"
    if a.lengths == "true":  # same pool and draws: only what the router is told changes
        pool = pool.assign(pred=pool["output_tokens"])
        source += "; the router told the true lengths"
    # only PreServe predicts lengths: the baselines' runs skip the timing (one matrix option for all)
    timed = a.time_predictor if a.router == "preserve" else 0
    pred_ms = time_predictor(timed, a.seed) if timed else np.array([])
    overhead_ms = {"paper": sv.PAPER_OVERHEAD_MS, "none": 0.0,
                   "measured": float(pred_ms.mean()) if pred_ms.size else float("nan")}[a.dispatch_overhead]
    rows, series, select_ms = [], [], []
    for q in a.qps:
        for k in range(a.seeds):
            seed = a.seed + k
            wl, pred = sv.poisson_workload(pool, q, a.duration_s, seed, a.model)
            df, st, ts = sv.simulate(a.model, a.router, wl, pred, s, overhead_ms / 1e3,
                                     a.sample_s if (a.sample_s and k == 0) else None)
            p = sv.point_stats(df, s)
            sel = st["router_select_ms"]
            if sel is not None:
                select_ms.append(sel)
            rows.append({"model": a.model, "router": a.router, "qps": q, "seed": seed, **p,
                         "overhead_ms": st["overhead_s"] * 1e3,
                         "router_select_ms_mean": float(sel.mean()) if sel is not None and sel.size else float("nan"),
                         "wall_s": st["wall_s"]})
            if ts is not None:
                series.append(ts.assign(qps=q, seed=seed))
            print(f"{a.model} {a.router} {q:g} qps seed {seed}: TTFT {p['ttft_mean_s']:.3f} s, P99 norm "
                  f"{p['norm_p99_s']:.3f} s, SLO {p['slo_attainment_pct']:.1f} % ({st['wall_s']:.1f} s)", flush=True)
    pts = pd.DataFrame(rows)
    sel_all = np.concatenate(select_ms) if select_ms else np.array([])
    summ = {
        "model": a.model, "router": a.router, "qps": a.qps, "seeds": a.seeds, "seed": a.seed,
        "duration_s": a.duration_s, "n_instances": s.n_instances, "predictions": kind, "request_source": source,
        "request_pool_size": int(len(pool)), "lengths": a.lengths, "dispatch_overhead": a.dispatch_overhead,
        "dispatch_overhead_ms": overhead_ms if a.router == "preserve" else 0.0,
        "kv_capacity_tokens": sv.kv_capacity_tokens(a.model, s),
        "isolated_norm_latency_s": sv.isolated_norm_latency(a.model, pool, s, seed=a.seed),
        "predictor_ms_mean": float(pred_ms.mean()) if pred_ms.size else None,
        "predictor_ms_p99": float(np.percentile(pred_ms, 99)) if pred_ms.size else None,
        "predictor_timed_requests": int(pred_ms.size),
        "router_select_ms_mean": float(sel_all.mean()) if sel_all.size else None,
        "router_select_ms_p99": float(np.percentile(sel_all, 99)) if sel_all.size else None,
        "router_timed_requests": int(sel_all.size),
        "settings": s.as_dict(), "sim_wall_s": float(pts.wall_s.sum()),
    }
    return pts, summ, (pd.concat(series, ignore_index=True) if series else None)


def run(a: argparse.Namespace) -> int:
    from ...output_dir import staged_output_dir

    s = check_options(a)
    with staged_output_dir(a.out, command=f"preserve routing_sweep --model {a.model} --router {a.router}",
                           force=a.force) as tmp:
        pts, summ, ts = sweep(a, s)
        pts.to_csv(tmp / "points.csv", index=False, float_format="%.6g")
        if ts is not None:
            ts.to_csv(tmp / "timeseries.csv", index=False, float_format="%.6g")
        (tmp / "summary.json").write_text(json.dumps(summ, indent=2, default=float) + "\n")
    print(f"{a.model} {a.router}: {len(pts)} runs in {summ['sim_wall_s']:.1f} s -> {Path(a.out)}")
    return 0


def main(argv=None) -> int:
    from ...cli_errors import add_output_args, run_command

    ap = argparse.ArgumentParser(prog="python -m servesim.systems.preserve.routing_sweep", description=__doc__.split("\n")[0])
    ap.add_argument("collected", nargs="*", help="table2 run's summary.json (with --predictions collected)")
    ap.add_argument("--model", required=True, choices=sorted(sv.MODELS))
    ap.add_argument("--router", required=True, choices=sorted(sv.ROUTERS))
    ap.add_argument("--qps", type=float, nargs="+", required=True)
    ap.add_argument("--duration-s", type=float, default=600.0, help="Poisson arrivals over this long (§5.4: 10 min)")
    ap.add_argument("--seeds", type=int, default=1, help="runs per QPS point, seeds seed..seed+N-1 (§5.4: 5)")
    ap.add_argument("--predictions", default="oracle",
                    help="'oracle', 'collected', or table2's length_predictions.csv (the file or its folder)")
    ap.add_argument("--label-set", default="first", choices=("first", "all"))
    ap.add_argument("--lengths", default="predicted", choices=LENGTHS,
                    help="what the router is told of output lengths: the predictions or the true lengths")
    ap.add_argument("--max-conversations", type=int, default=None, help="ShareGPT conversations read (oracle pool)")
    ap.add_argument("--dispatch-overhead", default="paper", choices=OVERHEADS)
    ap.add_argument("--time-predictor", type=int, default=0, metavar="N", help="time the length predictor on N prompts")
    ap.add_argument("--gpu-mem-gb", type=float, default=None, help="GPU memory (default the catalog's 48; the paper says 40)")
    ap.add_argument("--mu-kv", default=None, choices=MU_KV_SOURCES,
                    help="what MU reads: scraped (default; every --mu-scrape-s) or oracle (exact, live)")
    ap.add_argument("--mu-scrape-s", type=float, default=None, help="MU's read interval (default 1 s; a multiple of 0.1 s)")
    ap.add_argument("--sample-s", type=float, default=None, help="write timeseries.csv sampled this often (Fig 4)")
    add_output_args(ap)
    return run_command(run, ap.parse_args(argv), "preserve routing_sweep")


if __name__ == "__main__":
    sys.exit(main())
