"""Command line for one SageServe strategy run (the workflow runs one job per strategy).

    python -m servesim.systems.sageserve.runs --strategy lt_ua --preset quick --volume-scale 1 --days 2 \
        --models llama-2-70b --regions eastus --window-h 36 40 -o results/quick/sageserve/runs/lt_ua

The workflow's runs (their windows and options per scale) are declared in ``workflow/runs/sageserve.yaml``.

Writes the fleet Result tables (Parquet), ``summary.json`` (instance-hours, IW latency
percentiles, the config reading) and ``actor_log.csv`` (forecasts, ILP solves, targets).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from ...fleet.run import write_partial
from .config import FORECAST_MODES, SageServeConfig
from .instance_models import instance_model_source
from .strategies import RUN_STRATEGIES, run_strategy, summarise

MODELS_4 = ["llama-2-70b", "bloom-176b", "llama-3.1-8b", "llama-3.2-3b"]
REGIONS_3 = ["westus", "centralus", "eastus"]


def add_window_args(ap: argparse.ArgumentParser) -> None:
    """The window a run simulates: ``--days`` of the synthetic O365 week generated at
    ``--volume-scale``, the ``--models`` x ``--regions`` streams of it, and the hours
    ``--window-h FROM TO`` of it that are served (hours before FROM are the forecaster's history).
    The workflow's windows are named in ``workflow/runs/sageserve.yaml``; ``--preset`` records the name."""
    ap.add_argument("--preset", default="custom", help="the window's name (recorded in summary.json)")
    ap.add_argument("--volume-scale", type=float, default=1.0, help="volume of the generated week (1 = Nov'24)")
    ap.add_argument("--days", type=int, default=7, help="days of the week generated")
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--regions", nargs="+", required=True)
    ap.add_argument("--window-h", nargs=2, type=float, required=True, metavar=("FROM_H", "TO_H"),
                    help="the served hours of the generated week")
    ap.add_argument("--bursts", action="store_true", help="8x load in the first minute of each hour (journal Fig 16a)")


def window_of(a: argparse.Namespace) -> dict:
    """The window as recorded in summary.json (``preset_<key>``)."""
    w = {"scale": a.volume_scale, "days": a.days, "models": list(a.models), "regions": list(a.regions),
         "from_h": a.window_h[0], "to_h": a.window_h[1]}
    if a.bursts:
        w["bursts"] = True
    return w


def window_workload(w: dict, seed: int = 0, burst_factor: float = 8.0, **generator_kw):
    """The request table window ``w`` simulates (arrivals before ``to_h``; the run serves those from
    ``from_h`` on) and ``t0_s``; ``generator_kw`` go to `sageserve_week` (e.g. ``iw_niw_ratio``, ``fifth_model``)."""
    from servesim.workload import sageserve_week

    wk = sageserve_week(scale=w["scale"], seed=seed, days=w["days"], bursts=w.get("bursts", False),
                        burst_factor=burst_factor, **generator_kw)
    sel = wk[wk["model"].isin(w["models"]) & wk["region"].isin(w["regions"]) & (wk["arrival_s"] < w["to_h"] * 3600)]
    return sel.reset_index(drop=True), w["from_h"] * 3600


def _cap(v: str):
    """--max-instances: an integer, or 'auto' (theta.contended_instances)."""
    if v == "auto":
        return v
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r}: an integer >= 1 or 'auto'") from None


def _add_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--strategy", required=True, choices=RUN_STRATEGIES)
    add_window_args(ap)
    ap.add_argument("--reading", default="paper", choices=["paper", "code"], help="SageServeConfig preset")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--burst-factor", type=float, default=8.0, help="load multiple in burst minutes (paper 8, code 9)")
    ap.add_argument("--theta-headroom", type=float, default=None, help="override SageServeConfig.theta_headroom")
    ap.add_argument("--theta-source", default=None, choices=["measured", "code", "sla"],
                    help="override SageServeConfig.theta_source (sla: theta benchmarked at the IW-F TTFT SLA)")
    ap.add_argument("--tier-policy", default=None, choices=["none", "fcfs", "edf", "pf", "dpa"],
                    help="instance queue order by tier (journal Fig 15); default: the config's (none)")
    ap.add_argument("--engine", default=None, choices=["orca", "vllm-v1"],
                    help="instance scheduler (default: the config's, orca as in the paper's simulator)")
    ap.add_argument("--niw-on-arrival", action="store_true",
                    help="route NIW on arrival instead of holding it in the NIW queue manager")
    ap.add_argument("--max-instances", type=_cap, default=None,
                    help="cap on instances per endpoint, also the start count (default 20); 'auto': the fewest "
                         "whose theta covers the window's busiest 15 minutes (theta.contended_instances, Fig 15)")
    ap.add_argument("--iwn-sla-s", type=float, default=None,
                    help="IW-N TTFT SLA in seconds: rewrites IW-N deadlines (default: the workload's)")
    ap.add_argument("--dpa-tau-n", type=float, default=None, help="override SageServeConfig.dpa_tau_n_s")
    ap.add_argument("--dpa-tau-p", type=float, default=None, help="override SageServeConfig.dpa_tau_p_s")
    # journal App. A, Fig 14 and the authors' repository sweeps
    ap.add_argument("--hardware", default=None, choices=["default", "a100-80gb", "h100-80gb"],
                    help="instance step-time source (SageServeConfig.hardware; App. A)")
    ap.add_argument("--iw-niw-ratio", type=float, default=None,
                    help="IW:NIW request ratio of the generated week (default 3, i.e. 3:1; App. A: 9 and 1)")
    ap.add_argument("--fifth-model", default=None, choices=["llama-4-scout"],
                    help="add a fifth model's traffic (a copy of Model A's streams) and serve it (Fig 14)")
    ap.add_argument("--lt-ua-threshold", type=float, default=None,
                    help="LT-UA scale-up ratio of observed to forecast demand (SageServeConfig.lt_ua_up_ratio)")
    ap.add_argument("--scaling-interval", type=float, default=None,
                    help="seconds between reactive scaler checks (SageServeConfig.reactive_interval_s)")
    ap.add_argument("--niw-chunk-tokens", type=int, default=None,
                    help="NIW chunk size in prompt tokens (SageServeConfig.niw_chunk_tokens; 0: whole prompts)")
    ap.add_argument("--lt-ua-window-s", type=float, default=None,
                    help="LT-UA acts in the last this many seconds of the hour (SageServeConfig.lt_ua_window_s; "
                         "0: always, the authors' code)")
    ap.add_argument("--reactive-count-starting", action="store_true",
                    help="Reactive's KV utilisation counts starting instances as empty memory "
                         "(SageServeConfig.reactive_count_starting)")
    ap.add_argument("--forecast-mode", default=None, choices=FORECAST_MODES,
                    help="the LT strategies' hourly forecast (SageServeConfig.forecast_mode; oracle: the coming "
                         "hour's true demand, a diagnostic reading)")
    ap.add_argument("-o", "--out", required=True, help="output folder (written in full or not at all)")
    ap.add_argument("--force", action="store_true",
                    help="replace a non-empty output folder that holds no servesim results marker")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """``servesim sageserve-run``: one SageServe strategy run (see this module's doc)."""
    p = subparsers.add_parser("sageserve-run", help="run one SageServe strategy on the fleet simulator",
                              description=__doc__.splitlines()[0])
    _add_args(p)
    p.set_defaults(func=run)
    return p


def main(argv=None) -> int:
    from servesim.cli_errors import add_debug_flag, run_command

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _add_args(ap)
    add_debug_flag(ap)
    return run_command(run, ap.parse_args(argv), "sageserve run")


#: options that must be finite and > 0 when given (argparse dest)
POSITIVE_OPTIONS = ("burst_factor", "theta_headroom", "iwn_sla_s", "dpa_tau_n", "dpa_tau_p", "iw_niw_ratio",
                    "lt_ua_threshold", "scaling_interval", "volume_scale")


def check_options(a: argparse.Namespace) -> None:
    """Reject options that would run a meaningless experiment, before any work (InputError)."""
    import math

    from servesim.errors import InputError
    from servesim.output_dir import check_output_dir

    for d in POSITIVE_OPTIONS:
        v = getattr(a, d, None)
        if v is not None and not (math.isfinite(v) and v > 0):
            raise InputError(f"--{d.replace('_', '-')} {v}: must be a finite number > 0")
    for d in ("niw_chunk_tokens", "lt_ua_window_s"):  # 0 switches the feature off
        v = getattr(a, d, None)
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise InputError(f"--{d.replace('_', '-')} {v}: must be a finite number >= 0 (0: off)")
    if getattr(a, "lt_ua_window_s", None) and a.lt_ua_window_s > 3600:
        raise InputError(f"--lt-ua-window-s {a.lt_ua_window_s:g}: must be at most the hour (3600 s)")
    if a.max_instances is not None and a.max_instances != "auto" and a.max_instances < 1:
        raise InputError(f"--max-instances {a.max_instances}: must be >= 1 (0 serves nothing)")
    known_models = MODELS_4 + ([a.fifth_model] if a.fifth_model else [])
    for opt, given, known in (("--models", a.models, known_models), ("--regions", a.regions, REGIONS_3)):
        if given is None:
            continue
        unknown = [x for x in given if x not in known]
        if unknown:
            raise InputError(f"{opt}: unknown {unknown}; known: {known}")
        if len(set(given)) != len(given):
            raise InputError(f"{opt}: {given} lists one twice")
    from servesim.workload.schema import MAX_DAYS

    if not 1 <= a.days <= MAX_DAYS:
        raise InputError(f"--days {a.days}: generate at least 1 day and at most {MAX_DAYS}")
    if getattr(a, "seed", None) is not None and a.seed < 0:
        raise InputError(f"--seed {a.seed}: must be an integer >= 0")
    if a.window_h is not None:
        lo, hi = a.window_h
        days = a.days
        if not (0 <= lo < hi <= 24 * days):
            raise InputError(f"--window-h {lo:g} {hi:g}: need 0 <= FROM_H < TO_H <= {24 * days} "
                             f"(the {days}-day generated trace, --days)")
        from servesim.fleet.limits import MAX_CONTROL_TICKS

        si = getattr(a, "scaling_interval", None)
        if si is not None and (hi - lo) * 3600 / si > MAX_CONTROL_TICKS:
            raise InputError(f"--scaling-interval {si:g}: {(hi - lo) * 3600 / si:.3g} scaler checks over the "
                             f"window (at most {MAX_CONTROL_TICKS:,}); use a longer interval")
    if getattr(a, "volume_scale", None) is not None:
        from servesim.workload import check_generate
        from servesim.workload.schema import WorkloadError

        try:  # the generated week's size, before it is generated
            check_generate("sageserve_week", a.volume_scale, 0, {"days": a.days})
        except WorkloadError as exc:
            raise InputError(f"--volume-scale {a.volume_scale:g}: {exc}") from None
    check_output_dir(a.out, force=a.force)


#: command-line option (argparse dest) -> the SageServeConfig field it overrides
CONFIG_FLAGS = {"hardware": "hardware", "lt_ua_threshold": "lt_ua_up_ratio", "scaling_interval": "reactive_interval_s",
                "theta_headroom": "theta_headroom", "tier_policy": "tier_policy", "engine": "engine_policy",
                "dpa_tau_n": "dpa_tau_n_s", "dpa_tau_p": "dpa_tau_p_s", "forecast_mode": "forecast_mode",
                "theta_source": "theta_source"}


def run(a: argparse.Namespace) -> int:
    """One strategy run into ``a.out``: options checked first; the folder is written through a
    staging folder renamed into place on success (a failed run's ``partial/`` is marked failed)."""
    from servesim.output_dir import staged_output_dir

    check_options(a)
    with staged_output_dir(a.out, command=f"sageserve run --strategy {a.strategy}", force=a.force) as tmp:
        return _run_into(a, tmp)


def _run_into(a: argparse.Namespace, out: Path) -> int:
    p = window_of(a)
    if a.fifth_model is not None and a.fifth_model not in p["models"]:  # its traffic is served too
        p["models"].append(a.fifth_model)
    for k in ("max_instances", "iwn_sla_s"):  # recorded with the window, as the contended fleet's settings
        if getattr(a, k) is not None:
            p[k] = getattr(a, k)
    cfg = SageServeConfig.paper() if a.reading == "paper" else SageServeConfig.code()
    cfg = cfg.with_(**{f: getattr(a, d) for d, f in CONFIG_FLAGS.items() if getattr(a, d) is not None})
    if a.niw_on_arrival:
        cfg = cfg.with_(niw_queue=False)
    for d, f in (("niw_chunk_tokens", "niw_chunk_tokens"), ("lt_ua_window_s", "lt_ua_window_s")):
        v = getattr(a, d)
        if v is not None:  # 0: off (None in the config)
            cfg = cfg.with_(**{f: v or None})
    if a.reactive_count_starting:
        cfg = cfg.with_(reactive_count_starting=True)
    iwn_sla = a.iwn_sla_s
    gen = {k: v for k, v in (("iw_niw_ratio", a.iw_niw_ratio), ("fifth_model", a.fifth_model)) if v is not None}
    sel, t0_s = window_workload(p, a.seed, a.burst_factor, **gen)
    cap, cap_rule = a.max_instances, ("given" if a.max_instances is not None else None)
    if cap == "auto" and len(sel):
        from .theta import contended_instances, theta_for

        models = sorted(sel["model"].astype(str).unique())
        cap, cap_rule = contended_instances(sel, t0_s, theta_for(cfg, models, sel, seed=a.seed)), "contended"
        p["max_instances"] = cap
    if cap is not None:  # a fixed ceiling: start at it so the contended hours are not a ramp-up
        cfg = cfg.with_(start_instances=cap, min_per_endpoint=min(cfg.min_per_endpoint, cap))
    if iwn_sla is not None:
        iwn = (sel["tier"] == "IW-N").to_numpy()
        sel.loc[iwn, "deadline_s"] = sel.loc[iwn, "arrival_s"] + float(iwn_sla)
    if len(sel) == 0 or not (sel["arrival_s"] >= t0_s).any():
        from servesim.errors import InputError

        raise InputError(f"window {a.preset} ({p}): no requests to serve in it")
    t = time.perf_counter()
    try:
        res, actor = run_strategy(a.strategy, sel, t0_s=t0_s, config=cfg, seed=a.seed,
                                  **({"max_instances": cap} if cap is not None else {}))
    except BaseException as exc:
        write_partial(exc, out)  # what it simulated: <out>/partial/, marked failed
        raise
    wall = time.perf_counter() - t
    res.write(out)
    s = summarise(res, a.strategy)
    s.update(preset=a.preset, reading=a.reading, theta_headroom=cfg.theta_headroom, theta_source=cfg.theta_source,
             theta_reading=cfg.theta_reading(), tier_policy=cfg.tier_policy, engine_policy=cfg.engine_policy,
             niw_queue=cfg.niw_queue, niw_release_rule=cfg.niw_release_rule, seed=a.seed,
             max_instances=cap, max_instances_rule=cap_rule, iwn_sla_s=iwn_sla, dpa_tau_n_s=cfg.dpa_tau_n_s, dpa_tau_p_s=cfg.dpa_tau_p_s, wall_s=wall, **{f"preset_{k}": v for k, v in p.items()})
    s.update(hardware=cfg.hardware, iw_niw_ratio=3.0 if a.iw_niw_ratio is None else a.iw_niw_ratio,
             fifth_model=a.fifth_model, lt_ua_up_ratio=cfg.lt_ua_up_ratio, lt_ua_observed=cfg.lt_ua_observed,
             reactive_interval_s=cfg.reactive_interval_s, lt_ua_window_s=cfg.lt_ua_window_s,
             niw_chunk_tokens=cfg.niw_chunk_tokens, reactive_count_starting=cfg.reactive_count_starting,
             forecast_mode=cfg.forecast_mode,
             gpu_hours=8.0 * s["instance_hours"]["billed"],
             instance_models={m: instance_model_source(m, cfg.hardware) for m in p["models"]})
    if actor:
        s["theta_tokens_per_min"] = getattr(actor, "theta", None)
        # hourly forecasts whose ARIMA order could not be fitted (see servesim.forecast.arima)
        s["forecast_fallbacks"] = sum(1 for e in getattr(actor, "log", ()) if e.get("fallback"))
    (out / "summary.json").write_text(json.dumps(s, indent=1, sort_keys=True, default=str) + "\n")
    pd.DataFrame(actor.log if actor else []).to_csv(out / "actor_log.csv", index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
