"""Sensitivity of SageServe's headline saving (LT-I/LT-U/LT-UA vs Unified Reactive, J §7.2.1).

One run = one (reading, theta headroom, strategy) on a window (the options of `runs.add_window_args`;
the workflow's grid per scale is in ``workflow/runs/sageserve.yaml``):

    python -m servesim.systems.sageserve.sensitivity run --reading paper --headroom 0.7 --strategy lt_ua \
        --preset quick --days 2 --models llama-2-70b --regions eastus --window-h 36 40 \
        -o results/quick/sageserve/sensitivity/paper/h0.70/lt_ua

A *reading* is a named set of `SageServeConfig` overrides (`READINGS`): the paper's text, the
authors' code, and the paper with one code choice swapped in (start state, in-sample forecast,
no provisioning delays). Reactive does not depend on theta, so it runs once per reading
(``--headroom`` omitted). Writes ``summary.json`` (servesim.metrics layout: instance-hours, IW TTFT/E2E percentiles,
theta, saturation throughput, mean instances per region), ``hourly.csv`` (per hour of the
window: mean billed instances, the ILP target, the forecast rho, KV utilisation, P95 TTFT), the
fleet's ``timeseries.parquet`` and its transition log ``lifecycle.parquet`` (from which
:func:`collect` reads the authors' instance-hours, ``servesim.metrics.billed_authors_hours``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .config import SageServeConfig
from ...metrics import billed_authors_hours, billed_count, billed_events
from .strategies import run_strategy, summarise

SENS_STRATEGIES = ("reactive", "lt_i", "lt_u", "lt_ua")
LT_STRATEGIES = ("lt_i", "lt_u", "lt_ua")


@dataclass(frozen=True)
class Reading:
    """A named configuration: a base preset plus overrides (``lt_only`` apply to LT runs only)."""

    base: str  # "paper" | "code"
    overrides: dict = field(default_factory=dict)
    lt_only: dict = field(default_factory=dict)
    doc: str = ""

    def config(self, strategy: str, headroom: float | None = None) -> SageServeConfig:
        kw = dict(self.overrides)
        if strategy in LT_STRATEGIES:
            kw.update(self.lt_only)
        if headroom is not None:
            kw["theta_headroom"] = float(headroom)
        return SageServeConfig.paper(**kw) if self.base == "paper" else SageServeConfig.code(**kw)

    @property
    def fixed_theta(self) -> bool:
        """True when theta is the code's constant (the headroom has no effect)."""
        return self.config("lt_i").theta_source == "code"


#: start_instances: the code starts Reactive at 20 and LT runs at 8 per (model, region) (spec §1.7)
READINGS: dict[str, Reading] = {
    "paper": Reading("paper", doc="the journal's text (SageServeConfig.paper())"),
    "code": Reading("code", overrides={"start_instances": 20}, lt_only={"start_instances": 8},
                    doc="the authors' code: 0.5/0.25 thresholds, LT starts at 8, immediate ILP downs, "
                        "in-sample ARIMA, no delays in the simulator, theta = 225 500 tok/min"),
    "code_measured": Reading("code", overrides={"start_instances": 20, "theta_source": "measured"},
                             lt_only={"start_instances": 8},
                             doc="the code reading with theta = headroom x the measured saturation throughput"),
    "paper_start8": Reading("paper", lt_only={"start_instances": 8}, doc="paper; LT runs start at 8 instances"),
    "paper_insample": Reading("paper", overrides={"forecast_mode": "insample"},
                              doc="paper; in-sample one-step ARIMA (the code's forecast)"),
    "paper_nodelay": Reading("paper", overrides={"delays_in_sim": False},
                             doc="paper; instances usable at once (the code's simulator)"),
    "paper_period1": Reading("paper", overrides={"reactive_interval_s": 1.0},
                             doc="paper; Reactive samples utilisation every 1 s (the paper: on every arrival)"),
    "paper_5030": Reading("paper", overrides={"reactive_scale_out": 0.5, "reactive_scale_in": 0.25,
                                              "lt_u_scale_out": 0.5, "lt_u_scale_in": 0.25},
                          doc="paper; the code's 0.5/0.25 utilisation thresholds (Reactive and LT-U/UA)"),
}


def hourly_table(res, actor, t0_s: float) -> pd.DataFrame:
    """Per (region, hour of the window): billed instances, ILP target and forecast, KV util, IW TTFT."""
    ts = res.timeseries.copy()
    ts["billed"] = billed_count(ts)
    ts["hour"] = ((ts["time_s"] + t0_s) // 3600).astype(int)
    g = ts.groupby(["region", "hour"]).agg(instances=("billed", "mean"), kv_util=("kv_util", "mean"),
                                           prompt_tokens_per_min=("prompt_tokens_in", "mean")).reset_index()
    req = res.requests
    iw = req[(req["tier"] != "NIW") & (req["state"] == "finished")].copy()
    iw["hour"] = ((iw["arrival_s"] + t0_s) // 3600).astype(int)
    tt = iw.groupby(["region", "hour"])["ttft_s"].quantile(0.95).rename("ttft_p95").reset_index()
    g = g.merge(tt, on=["region", "hour"], how="left")
    if actor is not None and getattr(actor, "log", None):
        log = pd.DataFrame(actor.log)
        tg = log[log["kind"] == "target"].copy() if "kind" in log else pd.DataFrame()
        if len(tg):
            tg["hour"] = (tg["minute"] // 60).astype(int)
            tg = tg.groupby(["region", "hour"]).agg(ilp_target=("target", "first"), rho=("rho", "first"),
                                                    buffer=("buffer", "first")).reset_index()
            g = g.merge(tg, on=["region", "hour"], how="left")
    return g


def run_one(reading: str, strategy: str, window: dict, out: str | Path, headroom: float | None = None,
            seed: int = 0, tables: bool = False, preset_name: str = "custom") -> dict:
    """Simulate one (reading, headroom, strategy) on ``window`` (`runs.window_of`: scale, days, models,
    regions, from_h, to_h) and write its outputs to ``out`` (``tables``: also the per-request table);
    ``preset_name`` names the window in summary.json."""
    from servesim.workload import sageserve_week

    from .theta import measure_theta

    if reading not in READINGS:
        raise ValueError(f"reading must be one of {sorted(READINGS)}, got {reading!r}")
    if strategy not in SENS_STRATEGIES:
        raise ValueError(f"strategy must be one of {SENS_STRATEGIES}, got {strategy!r}")
    if headroom is not None and not 0.0 < headroom <= 1.5:
        raise ValueError(f"headroom must be in (0, 1.5], got {headroom}")
    rd = READINGS[reading]
    cfg = rd.config(strategy, headroom if strategy in LT_STRATEGIES else None)
    p = window
    wk = sageserve_week(scale=p["scale"], seed=seed, days=p["days"], bursts=p.get("bursts", False))
    sel = wk[wk["model"].isin(p["models"]) & wk["region"].isin(p["regions"])]
    sel = sel[sel["arrival_s"] < p["to_h"] * 3600].reset_index(drop=True)
    t0 = p["from_h"] * 3600
    t = time.perf_counter()
    res, actor = run_strategy(strategy, sel, t0_s=t0, config=cfg, seed=seed)
    wall = time.perf_counter() - t
    s = summarise(res, strategy)
    hours = (res.timeseries["time_s"].max() + res.scenario.output.sample_s) / 3600.0
    regions = len(p["regions"])
    models = len(p["models"])
    # saturation throughput of one instance (what theta_headroom multiplies)
    sat = {m: measure_theta(m, sel, seed=seed, engine_policy=cfg.engine_policy) for m in p["models"]}
    theta = getattr(actor, "theta", None) if actor is not None else None
    s.update(reading=reading, preset=preset_name, seed=seed, wall_s=wall,
             headroom=(cfg.theta_headroom if strategy in LT_STRATEGIES and not rd.fixed_theta else None),
             theta_tokens_per_min=theta, saturation_tokens_per_min=sat,
             theta_equiv_headroom=({m: theta[m] / sat[m] for m in theta} if theta else None),
             window_hours=hours, mean_instances_per_endpoint=s["instance_hours"]["billed"] / (hours * regions * models),
             config=cfg.to_dict())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    hourly_table(res, actor, t0).to_csv(out / "hourly.csv", index=False)
    res.timeseries.to_parquet(out / "timeseries.parquet", index=False)
    res.lifecycle.to_parquet(out / "lifecycle.parquet", index=False)
    if tables:
        res.requests.to_parquet(out / "requests.parquet", index=False)
    (out / "summary.json").write_text(json.dumps(s, indent=1, sort_keys=True, default=str) + "\n")
    return s


def _authors_hours(run: Path) -> float:
    """The authors' instance-hours of a run folder (servesim.metrics.IH_READINGS): its billed
    instances totalled over the window's regions at each 2-s tick, rebuilt from its transition log
    (at the timeseries' 10-s samples where an older run has no log), each 15-min bin's maximum,
    summed / 4. NaN without a timeseries."""
    if not (run / "timeseries.parquet").exists():
        return np.nan
    ts = pd.read_parquet(run / "timeseries.parquet")
    ev = billed_events(pd.read_parquet(run / "lifecycle.parquet")) if (run / "lifecycle.parquet").exists() else None
    return billed_authors_hours(ts, ev)


def _row(summary_path: Path) -> dict:
    d = json.loads(Path(summary_path).read_text())
    iw = d["groups"]["iw"]
    teq = d.get("theta_equiv_headroom")
    return {"reading": d["reading"], "strategy": d["strategy"], "headroom": d.get("headroom"),
            "theta_equiv_headroom": next(iter(teq.values())) if teq else np.nan, "preset": d["preset"],
            # the authors' instance-hours (the paper's own, through its plotting scripts); beside it
            # each endpoint's 15-min bin maxima summed (the summary's binned block) and the exact integral
            "instance_hours": _authors_hours(Path(summary_path).parent),
            "instance_hours_sum_of_region_maxima": d["instance_hours"].get("binned_max", {}).get("billed", np.nan),
            "instance_hours_exact": d["instance_hours"]["billed"], "ttft_p50": iw["p50_ttft_s"],
            "ttft_p95": iw["p95_ttft_s"], "e2e_p95": iw["p95_e2el_s"],
            "mean_instances_per_endpoint": d["mean_instances_per_endpoint"],
            "iw_unfinished": iw["requests"] - iw["completed"], "window_hours": d["window_hours"], "wall_s": d["wall_s"]}


def collect(summaries: list[str | Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, hourly): one row per run's ``summary.json``, and its ``hourly.csv`` rows tagged with
    the run's reading / strategy / headroom."""
    if not summaries:
        raise ValueError("collect: no summary.json given")
    rows, hourly = [], []
    for f in map(Path, summaries):
        if not f.exists():
            raise FileNotFoundError(f"collect: {f} does not exist")
        r = _row(f)
        rows.append(r)
        h = pd.read_csv(f.parent / "hourly.csv")
        hourly.append(h.assign(reading=r["reading"], strategy=r["strategy"], headroom=r["headroom"]))
    return pd.DataFrame(rows), pd.concat(hourly, ignore_index=True)


def savings_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Each LT run joined with its reading's Reactive run: saving % and TTFT ratio."""
    rx = runs[runs["strategy"] == "reactive"].set_index("reading")
    lt = runs[runs["strategy"] != "reactive"].copy()
    missing = sorted(set(lt["reading"]) - set(rx.index))
    if missing:
        raise KeyError(f"no Reactive run for reading(s) {missing}")
    lt["reactive_instance_hours"] = lt["reading"].map(rx["instance_hours"])
    lt["reactive_ttft_p95"] = lt["reading"].map(rx["ttft_p95"])
    lt["savings_pct"] = 100.0 * (1.0 - lt["instance_hours"] / lt["reactive_instance_hours"])
    for k in ("sum_of_region_maxima", "exact"):  # the other readings of instance-hours, when given
        if f"instance_hours_{k}" in lt:
            lt[f"savings_pct_{k}"] = 100.0 * (1.0 - lt[f"instance_hours_{k}"]
                                              / lt["reading"].map(rx[f"instance_hours_{k}"]))
    lt["ttft_p95_ratio"] = lt["ttft_p95"] / lt["reactive_ttft_p95"]
    lt["x_headroom"] = lt["headroom"].where(lt["headroom"].notna(), lt["theta_equiv_headroom"])
    return lt.sort_values(["reading", "strategy", "x_headroom"]).reset_index(drop=True)


def own_theta(g: pd.DataFrame) -> pd.Series | None:
    """The run of one (reading, strategy) curve at the reading's own θ: its fixed θ where it has one
    (the code's absolute θ), else headroom 1.0 (the paper's definition); None if the grid lacks it."""
    own = g[g["headroom"].isna()] if g["headroom"].isna().any() else g[np.isclose(g["x_headroom"], 1.0)]
    return own.iloc[0] if len(own) else None


#: the journal's saving range (J §7.2.1: 19.65-24.21 %; the abstract's "up to 25 %", 18 % its low end)
PAPER_RANGE_PCT = (18.0, 25.0)


def readings_table(sav: pd.DataFrame) -> pd.DataFrame:
    """Per reading and LT strategy, at the reading's own θ: the saving over the same reading's
    Reactive on each instance-hour aggregation, the IW P95 TTFT ratio, and whether the saving on
    the authors' aggregation lands in the paper's range with tail TTFT no worse than Reactive's."""
    rows = []
    for (r, st), g in sav.groupby(["reading", "strategy"], sort=False):
        own = own_theta(g)
        if own is None:
            continue
        ok = bool(PAPER_RANGE_PCT[0] <= own["savings_pct"] <= PAPER_RANGE_PCT[1] and own["ttft_p95_ratio"] <= 1.0)
        rows.append({"reading": r, "strategy": st, "theta": "fixed" if pd.isna(own["headroom"]) else f"{own['x_headroom']:.2f}",
                     "saving_authors_pct": own["savings_pct"],
                     "saving_sum_of_region_maxima_pct": own.get("savings_pct_sum_of_region_maxima", np.nan),
                     "saving_exact_pct": own.get("savings_pct_exact", np.nan),
                     "ttft_p95_ratio": own["ttft_p95_ratio"], "paper_range_and_ttft_ok": ok})
    return pd.DataFrame(rows)


def headroom_at_saving(curve: pd.DataFrame, target_pct: float) -> float:
    """Smallest headroom at which the saving (linear between grid points) reaches ``target_pct``;
    the first grid point when that one already does (an upper bound); NaN if no point reaches it."""
    c = curve.dropna(subset=["x_headroom", "savings_pct"]).sort_values("x_headroom")
    x, y = c["x_headroom"].to_numpy(float), c["savings_pct"].to_numpy(float)
    for i in range(len(x)):
        if y[i] >= target_pct:
            if i == 0:
                return float(x[0])
            return float(x[i - 1] + (target_pct - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))
    return float("nan")


def _args(ap: argparse.ArgumentParser) -> None:
    from .runs import add_window_args

    ap.add_argument("--reading", required=True, choices=sorted(READINGS))
    ap.add_argument("--strategy", required=True, choices=SENS_STRATEGIES)
    ap.add_argument("--headroom", type=float, default=None,
                    help="theta headroom (fraction of the measured saturation throughput); default: the reading's")
    add_window_args(ap)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tables", action="store_true", help="also write requests.parquet")
    ap.add_argument("-o", "--out", required=True)


def _run(a) -> int:
    if a.cmd == "collect":
        runs, hourly = collect(a.summaries)
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        runs.to_csv(out, index=False)
        hourly.to_csv(out.with_name(out.stem + "_hourly.csv"), index=False)
        return 0
    from .runs import window_of

    s = run_one(a.reading, a.strategy, window_of(a), a.out, headroom=a.headroom, seed=a.seed, tables=a.tables,
                preset_name=a.preset)
    print(json.dumps({**{k: s[k] for k in ("reading", "strategy", "headroom", "wall_s")},
                      "instance_hours": s["instance_hours"]["billed"], "p95_ttft_s": s["groups"]["iw"]["p95_ttft_s"]}))
    return 0


def main(argv=None) -> int:
    from servesim.cli_errors import add_debug_flag, run_command

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    _args(sub.add_parser("run", help="one (reading, headroom, strategy) run"))
    c = sub.add_parser("collect", help="gather runs into runs.csv and hourly.csv")
    c.add_argument("summaries", nargs="+", help="summary.json files of the runs")
    c.add_argument("-o", "--out", required=True, help="runs table (CSV); hourly table goes next to it")
    add_debug_flag(ap)
    return run_command(_run, ap.parse_args(argv), "sageserve sensitivity")

if __name__ == "__main__":
    raise SystemExit(main())
