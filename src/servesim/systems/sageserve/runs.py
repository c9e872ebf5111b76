"""Command line for one SageServe strategy run (the workflow runs one job per strategy).

    python -m servesim.systems.sageserve.runs --strategy lt_ua --preset quick -o results/quick/sageserve/runs/lt_ua

Writes the fleet Result tables (Parquet), ``summary.json`` (instance-hours, IW latency
percentiles, the config reading) and ``actor_log.csv`` (forecasts, ILP solves, targets).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from .config import SageServeConfig
from .strategies import RUN_STRATEGIES, run_strategy, summarise

#: what each scale simulates: the synthetic O365 week's peak day (day 1, a Tuesday)
PRESETS = {
    # a few hours of one region: Llama-2 in East US, 12:00-16:00 of the peak day
    "quick": {"scale": 1.0, "days": 2, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 36.0, "to_h": 40.0},
    # journal Fig 11: Llama-2 over the three regions, the whole peak day
    "full": {"scale": 1.0, "days": 2, "models": ["llama-2-70b"], "regions": ["westus", "centralus", "eastus"],
             "from_h": 24.0, "to_h": 48.0},
    # the whole peak day of one region (Llama-2, East US): the day's trough is where scalers differ most
    "day_east": {"scale": 1.0, "days": 2, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 24.0,
                 "to_h": 48.0},
    # journal Fig 16b: the week, Llama-2 (quick: East US, Thu 12:00 - Sun 00:00 at 1/5 volume, so
    # weekdays and the weekend start are both in the window within a couple of minutes of CPU)
    "week_quick": {"scale": 0.2, "days": 7, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 84.0,
                   "to_h": 144.0},
    "week_full": {"scale": 1.0, "days": 7, "models": ["llama-2-70b"], "regions": ["westus", "centralus", "eastus"],
                  "from_h": 1.0, "to_h": 168.0},
    "week_tiny": {"scale": 0.05, "days": 7, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 114.0,
                  "to_h": 122.0},
    "tiny": {"scale": 0.1, "days": 2, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 36.0, "to_h": 37.0},
    # journal Fig 16a: two hourly bursts over 120 min (Llama-2, East US as in the conference)
    "burst_quick": {"scale": 1.0, "days": 2, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 35.0,
                    "to_h": 38.0, "bursts": True},
    "burst_full": {"scale": 1.0, "days": 2, "models": ["llama-2-70b"], "regions": ["westus", "centralus", "eastus"],
                   "from_h": 35.0, "to_h": 38.0, "bursts": True},
    "burst_tiny": {"scale": 0.1, "days": 2, "models": ["llama-2-70b"], "regions": ["eastus"], "from_h": 35.0,
                   "to_h": 36.5, "bursts": True},
}


def _add_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--strategy", required=True, choices=RUN_STRATEGIES)
    ap.add_argument("--preset", default="quick", choices=sorted(PRESETS))
    ap.add_argument("--reading", default="paper", choices=["paper", "code"], help="SageServeConfig preset")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--burst-factor", type=float, default=8.0, help="load multiple in burst minutes (paper 8, code 9)")
    ap.add_argument("--theta-headroom", type=float, default=None, help="override SageServeConfig.theta_headroom")
    ap.add_argument("--tier-policy", default=None, choices=["none", "fcfs", "edf", "pf", "dpa"],
                    help="instance queue order by tier (journal Fig 15); default: the config's (none)")
    ap.add_argument("--engine", default=None, choices=["orca", "vllm-v1"],
                    help="instance scheduler (default: the config's, orca as in the paper's simulator)")
    ap.add_argument("--niw-on-arrival", action="store_true",
                    help="route NIW on arrival instead of holding it in the NIW queue manager")
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
    ap.add_argument("--models", nargs="+", default=None, help="override the preset's models")
    ap.add_argument("--regions", nargs="+", default=None, help="override the preset's regions")
    ap.add_argument("--window-h", nargs=2, type=float, default=None, metavar=("FROM_H", "TO_H"),
                    help="override the preset's window (hours of the generated week)")
    ap.add_argument("--volume-scale", type=float, default=None, help="override the preset's volume scale")
    ap.add_argument("-o", "--out", required=True)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """``servesim sageserve-run``: one SageServe strategy run (see this module's doc)."""
    p = subparsers.add_parser("sageserve-run", help="run one SageServe strategy on the fleet simulator",
                              description=__doc__.splitlines()[0])
    _add_args(p)
    p.set_defaults(func=run)
    return p


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _add_args(ap)
    run(ap.parse_args(argv))


def run(a: argparse.Namespace) -> int:
    from servesim.workload import sageserve_week

    p = dict(PRESETS[a.preset])
    overrides = {"models": a.models, "regions": a.regions, "scale": a.volume_scale}
    if a.window_h is not None:
        overrides.update(from_h=a.window_h[0], to_h=a.window_h[1])
    p.update({k: v for k, v in overrides.items() if v is not None})
    if a.fifth_model is not None and a.models is None:
        p["models"] = list(p["models"]) + [a.fifth_model]
    cfg = SageServeConfig.paper() if a.reading == "paper" else SageServeConfig.code()
    if a.hardware is not None:
        cfg = cfg.with_(hardware=a.hardware)
    if a.lt_ua_threshold is not None:
        cfg = cfg.with_(lt_ua_up_ratio=a.lt_ua_threshold)
    if a.scaling_interval is not None:
        cfg = cfg.with_(reactive_interval_s=a.scaling_interval)
    if a.theta_headroom is not None:
        cfg = cfg.with_(theta_headroom=a.theta_headroom)
    if a.tier_policy is not None:
        cfg = cfg.with_(tier_policy=a.tier_policy)
    if a.engine is not None:
        cfg = cfg.with_(engine_policy=a.engine)
    if a.niw_on_arrival:
        cfg = cfg.with_(niw_queue=False)
    wk = sageserve_week(scale=p["scale"], seed=a.seed, days=p["days"], bursts=p.get("bursts", False),
                        burst_factor=a.burst_factor, iw_niw_ratio=a.iw_niw_ratio, fifth_model=a.fifth_model)
    sel = wk[wk["model"].isin(p["models"]) & wk["region"].isin(p["regions"])]
    sel = sel[sel["arrival_s"] < p["to_h"] * 3600].reset_index(drop=True)
    t = time.perf_counter()
    res, actor = run_strategy(a.strategy, sel, t0_s=p["from_h"] * 3600, config=cfg, seed=a.seed)
    wall = time.perf_counter() - t
    out = Path(a.out)
    res.write(out)
    s = summarise(res, a.strategy)
    s.update(preset=a.preset, reading=a.reading, theta_headroom=cfg.theta_headroom, tier_policy=cfg.tier_policy, engine_policy=cfg.engine_policy,
             niw_queue=cfg.niw_queue, niw_release_rule=cfg.niw_release_rule, seed=a.seed, wall_s=wall, **{f"preset_{k}": v for k, v in p.items()})
    s.update(hardware=cfg.hardware, iw_niw_ratio=3.0 if a.iw_niw_ratio is None else a.iw_niw_ratio,
             fifth_model=a.fifth_model, lt_ua_up_ratio=cfg.lt_ua_up_ratio, lt_ua_observed=cfg.lt_ua_observed,
             reactive_interval_s=cfg.reactive_interval_s, gpu_hours=8.0 * s["instance_hours"])
    if actor:
        s["theta_tokens_per_min"] = getattr(actor, "theta", None)
    (out / "summary.json").write_text(json.dumps(s, indent=1, sort_keys=True, default=str) + "\n")
    pd.DataFrame(actor.log if actor else []).to_csv(out / "actor_log.csv", index=False)
    return 0


if __name__ == "__main__":
    main()
