"""Simulator vs real engine on the same requests: latency percentiles and their relative error.

The simulator runs one :class:`servesim.sim.Instance` configured like the engine (same
max_num_seqs, max_num_batched_tokens, block size, and the KV blocks the server really
allocated) with the step-time model fitted from the engine's profile. The client-observed
frontend overhead measured by the profile (HTTP, tokenisation, hand-off; see
:mod:`servesim.engine.profile`) is modelled as a delay before the request reaches the engine
(``frontend_overhead=True``, the default), or, given a measured front-end profile
(``frontend=``, :mod:`servesim.engine.frontend_cost`), the front end is the queue of
:mod:`servesim.sim.frontend` (ingestion before the engine, every streamed token after it) in
place of that constant; times are reported from the workload's arrivals.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.engine.records import step_table
from servesim.engine.server import EngineConfig
from servesim.errors import InputError
from servesim.metrics import paired_interval, request_values, summarize
from servesim.perf.base import StepTimeModel

#: a stream whose mean token gap is below this fraction of the engine's fastest decode step (one
#: sequence) reached the client in one read: no engine decodes that fast, so its first-token time
#: is when the client read the stream, not when the engine produced the token
COALESCED_GAP_FRACTION = 0.25
COALESCED = ("drop", "keep")

#: the latency metrics (``servesim.metrics.latency``) and percentiles compared engine vs simulator
INTERVAL_METRICS, INTERVAL_QS = ("ttft", "tpot", "e2el"), (50, 90, 99)
#: the summary keys (``servesim.metrics.summarize``, block "all") compared engine vs simulator; the
#: latency percentiles get a sampling interval (`compare_repeats`: ``rel_err_lo`` / ``rel_err_hi``)
COMPARED = (*(f"p{q}_{m}_s" for m in INTERVAL_METRICS for q in INTERVAL_QS),
            "request_throughput_per_s", "completed")


def simulate(workload: pd.DataFrame, model: StepTimeModel, config: EngineConfig, kv_blocks: int,
             overhead_s: float = 0.0, mode: str = "fast", entry_s=None, on_cluster=None,
             frontend=None) -> pd.DataFrame:
    """The simulator's per-request table for ``workload`` on an instance like the engine's.

    Requests reach the engine at ``entry_s`` (default: their ``arrival_s``; a replay's real send
    times can be given, aligned with the workload's rows) plus ``overhead_s``; latencies are
    reported from the workload's own ``arrival_s``. ``on_cluster(cluster)`` is called before the run.
    ``frontend`` (a :class:`servesim.sim.frontend.FrontEnd`): the requests pass its queue on the
    way in and their tokens on the way out (:func:`servesim.sim.frontend.serve`; its info in the
    table's ``attrs["frontend"]``); it is the front end, so give it with ``overhead_s`` 0.
    """
    from servesim.sim import Cluster

    if frontend is not None and on_cluster is not None:
        raise ValueError("simulate: a front end re-runs the engine side until its queue settles; "
                         "on_cluster would see every pass")
    cfg = config.to_instance(kv_blocks)
    wl = workload.copy()
    orig = dict(zip(wl["request_id"].to_numpy(), wl["arrival_s"].to_numpy()))
    entry = wl["arrival_s"].to_numpy(float) if entry_s is None else np.asarray(entry_s, float)
    wl["arrival_s"] = np.where(np.isnan(entry), wl["arrival_s"].to_numpy(float), entry) + overhead_s
    wl = wl.sort_values(["arrival_s", "request_id"], kind="stable").reset_index(drop=True)
    wl["model"] = cfg.model  # the engine serves every request with its one model

    def run(w: pd.DataFrame) -> pd.DataFrame:
        cluster = Cluster.uniform(1, cfg, model, mode=mode)
        if on_cluster is not None:
            on_cluster(cluster)
        return cluster.run(w).requests

    info = None
    if frontend is None:
        df = run(wl)
    else:
        from servesim.sim.frontend import serve

        df, info = serve(frontend, wl, run)
    # report against the workload's own arrival times (overhead and lateness are latency)
    df["arrival_s"] = df["request_id"].map(orig).astype(float)
    df["ttft_s"] = df["first_token_s"] - df["arrival_s"]
    df["e2e_s"] = df["finish_s"] - df["arrival_s"]
    if info is not None:
        df.attrs["frontend"] = info
    return df


def compare_tables(engine: pd.DataFrame, sim: pd.DataFrame, label: str = "") -> pd.DataFrame:
    """Long table: metric (a key of `COMPARED`), engine, sim, rel_err (= sim/engine - 1) for one
    workload; both sides summarised by `servesim.metrics.summarize` (None -> NaN)."""
    e, s = summarize(engine)["all"], summarize(sim)["all"]
    nan = float("nan")
    rows = []
    for k in COMPARED:
        ev, sv = (nan if e[k] is None else float(e[k])), (nan if s[k] is None else float(s[k]))
        rows.append({"label": label, "metric": k, "engine": ev, "sim": sv,
                     "rel_err": (sv / ev - 1.0) if ev else nan})
    return pd.DataFrame(rows)


def coalesced_streams(engine: pd.DataFrame, min_gap_s: float) -> np.ndarray:
    """Requests of an engine replay whose streamed tokens reached the client in one read: at least
    two output tokens, finished, mean gap between them under ``min_gap_s``."""
    gap = pd.to_numeric(engine["tbt_mean_s"], errors="coerce").to_numpy(float)
    done = (engine["state"] == "finished").to_numpy() if "state" in engine else np.ones(len(engine), bool)
    return done & (engine["output_tokens"].to_numpy() >= 2) & (gap < min_gap_s)


def _readings(coalesced) -> tuple[str, ...]:
    """One reading of coalesced streams, or several (each gets its rows, from one simulation)."""
    r = (coalesced,) if isinstance(coalesced, str) else tuple(coalesced)
    bad = [x for x in r if x not in COALESCED]
    if bad or not r:
        raise ValueError(f"coalesced must be one of {COALESCED} (or several), got {coalesced!r}")
    return r


class _Scaled(StepTimeModel):
    """``inner``'s step times times ``prefill`` for a step with prompt tokens and ``decode`` for one
    without (an engine that ran that much slower than its profile; ``decode`` defaults to ``prefill``)."""

    def __init__(self, inner: StepTimeModel, prefill: float, decode: float | None = None) -> None:
        decode = prefill if decode is None else decode
        for f in (prefill, decode):
            if not (np.isfinite(f) and f > 0):
                raise ValueError(f"step-time factor {f!r}: must be a finite number > 0")
        self.inner, self.prefill, self.decode = inner, float(prefill), float(decode)
        self.name = f"{inner.name} x ({prefill:.4g} prefill, {decode:.4g} decode)"

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        t = self.inner.step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
        return t * np.where(np.asarray(prefill_tokens) > 0, self.prefill, self.decode) \
            if isinstance(prefill_tokens, np.ndarray) else t * (self.prefill if prefill_tokens > 0 else self.decode)


def _replay(d: Path) -> tuple[dict, pd.DataFrame, EngineConfig, int | None, pd.DataFrame]:
    """A replay folder read for simulating it: (summary, the engine's request table, the engine's
    configuration, the KV blocks it really had, the workload to give the simulator)."""
    summary = json.loads((d / "summary.json").read_text())
    engine = pd.read_parquet(d / "requests.parquet")
    config = EngineConfig(**{k: (tuple(v) if k == "extra_args" else v) for k, v in summary["engine"].items()})
    wl = engine[["request_id", "arrival_s", "prompt_tokens", "output_tokens", "model", "region", "tier"]].copy()
    wl["app"], wl["deadline_s"] = "default", np.nan
    return summary, engine, config, summary.get("kv_blocks") or config.kv_blocks, wl


def sent_entry(replay_dir: str | Path, summary: dict, wl: pd.DataFrame) -> np.ndarray:
    """When each request of ``wl`` was put in front of the engine (the reading ``arrivals="sent"``):
    the HTTP client's send time; in an in-process replay the driver's add time, except for a
    request that arrived while a step was running, which enters at its scheduled arrival. The
    driver adds requests only between steps, as the engine's own loop takes them, so that wait is
    the engine's, and the simulator admits at its own step boundaries too: given the add time it
    would wait twice (issue 33: on the quick engine the double wait was a median 2.5 ms of a
    27 ms TTFT P50). Where the engine was idle the driver's lateness (its sleep's overshoot) stays."""
    d = Path(replay_dir)
    sends = pd.read_parquet(d / "sends.parquet").set_index("request_id")["sent_s"]
    sent = wl["request_id"].map(sends).to_numpy(float)
    if summary.get("replay") != "in-process":
        return sent
    steps = d / "steps.parquet"
    if not steps.exists():
        raise InputError(f"{steps}: missing; an in-process replay's send times need its steps "
                         "(the driver adds requests between steps)")
    st = pd.read_parquet(steps, columns=["start_s", "end_s"])
    start, end = st["start_s"].to_numpy(float), st["end_s"].to_numpy(float)
    arrival = wl["arrival_s"].to_numpy(float)
    k = np.searchsorted(start, arrival, side="right") - 1  # the last step begun by the arrival
    mid_step = (k >= 0) & (end[np.maximum(k, 0)] > arrival)
    return np.where(mid_step & np.isfinite(sent), arrival, sent)


def compare_run(replay_dir: str | Path, fit_json: str | Path, *, frontend_overhead: bool = True,
                arrivals: str = "scheduled", label: str = "", coalesced="keep",
                speed: tuple[float, float] = (1.0, 1.0), frontend=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulate the workload of a finished replay with the fitted profile; return
    (comparison table, simulator request table). ``arrivals="sent"`` feeds the simulator the
    times the client really sent each request (``sends.parquet``; in process, `sent_entry`)
    instead of the schedule.
    ``coalesced="drop"`` leaves the requests whose stream reached the client in one read
    (`coalesced_streams`, gap bound `COALESCED_GAP_FRACTION` of the fitted one-sequence decode
    step) out of both sides' statistics; the table's ``coalesced_share`` says how many there were.
    Several readings (``("drop", "keep")``) give one block of rows each, column ``coalesced``,
    from the same simulation. ``speed`` (prefill, decode) scales the simulated step times with and
    without prompt tokens (`regime_speeds` of this replay: the speed-matched reading).
    ``frontend`` (a `FrontEnd` or the path of a measured profile, ``frontend.json``): for an HTTP
    replay, the front end as a queue in place of the profile's constant overhead (an in-process
    replay has no front end: refused)."""
    table, sim, _ = _compare_run(replay_dir, fit_json, frontend_overhead=frontend_overhead, arrivals=arrivals,
                                 label=label, coalesced=coalesced, speed=speed, frontend=frontend)
    return table, sim


def _paired_values(engine: pd.DataFrame, e: dict, m: dict, keep: np.ndarray) -> pd.DataFrame:
    """Per request (index ``request_id``): its scheduled ``arrival_s`` and, for each metric of
    `INTERVAL_METRICS`, ``engine_<m>`` / ``sim_<m>``, the values the two sides' percentiles are taken
    over (``e`` / ``m``: `request_values` of the engine's table and of the simulator's, row-aligned
    with it; NaN: not finished, or left out by ``keep``)."""
    out = pd.DataFrame({"arrival_s": engine["arrival_s"].to_numpy(float)}, index=engine["request_id"].to_numpy())
    for k in INTERVAL_METRICS:
        out[f"engine_{k}"] = np.where(keep, e[k], np.nan)
        out[f"sim_{k}"] = np.where(keep, m[k], np.nan)
    return out


def _compare_run(replay_dir: str | Path, fit_json: str | Path, *, frontend_overhead: bool = True,
                 arrivals: str = "scheduled", label: str = "", coalesced="keep",
                 speed: tuple[float, float] = (1.0, 1.0), frontend=None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """`compare_run`, with each coalesced reading's paired per-request values (`_paired_values`)."""
    from servesim.engine.profile import load_fitted

    readings = _readings(coalesced)
    d = Path(replay_dir)
    summary, engine, config, kv_blocks, wl = _replay(d)
    if kv_blocks is None:
        raise ValueError(f"{d / 'summary.json'}: no kv_blocks recorded; cannot size the simulated KV cache")
    model, overhead = load_fitted(fit_json)
    if tuple(speed) != (1.0, 1.0):
        model = _Scaled(model, *speed)
    if summary.get("replay") == "in-process":  # no HTTP front end before the engine
        overhead = 0.0
    entry = None
    if arrivals == "sent":
        entry = sent_entry(d, summary, wl)
    elif arrivals != "scheduled":
        raise ValueError(f"arrivals must be 'scheduled' or 'sent', got {arrivals!r}")
    if frontend is not None:
        from servesim.sim.frontend import FrontEnd

        if summary.get("replay") == "in-process":
            raise InputError(f"{d}: an in-process replay has no front end to model; --frontend is for HTTP replays")
        frontend = frontend if isinstance(frontend, FrontEnd) else FrontEnd.from_json(frontend)
        overhead = 0.0
    sim = simulate(wl, model, config, kv_blocks, overhead if frontend_overhead else 0.0, entry_s=entry,
                   frontend=frontend)
    sim = sim.set_index("request_id").loc[wl["request_id"]].reset_index()
    burst = coalesced_streams(engine, COALESCED_GAP_FRACTION * float(model.step_time(0, 0, 1, 1)))
    tables, paired = [], {}
    values = request_values(engine), request_values(sim)  # once: every reading masks the same values
    for r in readings:
        keep = ~burst if r == "drop" else np.ones(len(engine), bool)
        tables.append(compare_tables(engine[keep], sim[keep], label).assign(coalesced=r))
        paired[r] = _paired_values(engine, *values, keep)
    table = pd.concat(tables, ignore_index=True)
    table["coalesced_share"] = float(burst.mean()) if len(burst) else 0.0
    return table, sim, paired


def _step_times(replay_dir: str | Path, fit_json: str | Path):
    """(measured, predicted, prefill?) per recorded step of a replay, the prediction by
    ``fit_json``'s model for the same batch; None without ``steps.parquet`` (an HTTP replay)."""
    from servesim.engine.profile import load_fitted
    from servesim.engine.records import step_table
    from servesim.perf import measurements as M

    if not (Path(replay_dir) / "steps.parquet").exists():
        return None
    steps = step_table(replay_dir, clock=step_clock(fit_json))  # timed as the model's steps were
    model = load_fitted(fit_json)[0]
    pred = np.asarray(model.step_time(*(steps[c].to_numpy(float) for c in M.AGGREGATES)), dtype=float)
    return steps.step_s.to_numpy(float), pred, steps.prefill_tokens.to_numpy(float) > 0


def replay_speed(replay_dir: str | Path, fit_json: str | Path) -> float:
    """How slow the engine stepped in one replay: its recorded steps' measured time over the
    profile's prediction for the same batches, summed over the steps (``steps.parquet``: in-process
    replays; NaN without it), so the steps that take the time weigh most (the median of the
    per-step ratios ran ~3 % below it, small steps being the many). Two replays of the same
    workload differ in it when the host ran the engine at a different speed (the same small decode
    steps take 2.66 ms in one and 2.92 in another), which moves every latency of that replay the
    same way."""
    return _speeds(_step_times(replay_dir, fit_json))[0]


def regime_speeds(replay_dir: str | Path, fit_json: str | Path) -> tuple[float, float]:
    """`replay_speed` apart for the steps with prompt tokens and the pure decode steps: (prefill,
    decode), each NaN without such steps. They differ: on the quick engine the decode steps ran
    8-18 % over the profile where the prefill steps ran within about 5 % of it (a decode step reads
    the whole KV and weights for a few tokens, and slows more when the host's memory is shared)."""
    return _speeds(_step_times(replay_dir, fit_json))[1:]


def _speeds(t) -> tuple[float, float, float]:
    """(all steps, prefill steps, decode steps) measured over predicted time of `_step_times`'s
    answer; NaN where there are no such steps (or no step records)."""
    if t is None:
        return float("nan"), float("nan"), float("nan")
    took, pred, pre = t
    return tuple(float(took[k].sum() / pred[k].sum()) if k.any() else float("nan")
                 for k in (np.ones(len(took), bool), pre, ~pre))


def _probe_slices(probes, where: str | Path, weighed: bool = True) -> list[tuple[dict, dict, float]]:
    """(probe run before, probe run after, weight) of each stretch a ``speed_probe`` brackets: one
    (weight 1) around a replay; around a live profile run in slices, one per slice weighted by its
    busy time: ``slices`` (each with its ``before``, ``after`` and ``busy_s``;
    `inprocess.LiveProfile`), or, as written until 7 Dec, ``between`` (the probes between
    consecutive slices) and ``slice_busy_s`` (``weighed=False``: not read, every weight 1). Empty
    without a before and an after run."""
    if not isinstance(probes, dict) or not all(isinstance(probes.get(k), dict) for k in ("before", "after")):
        return []
    if "slices" in probes:
        try:
            return [(s["before"], s["after"], float(s["busy_s"])) for s in probes["slices"]]
        except (KeyError, TypeError) as e:
            raise InputError(f"{where}: speed_probe.slices needs a before and an after probe run and a busy_s "
                             f"for every slice ({e!r})") from None
    runs = [probes["before"], *probes.get("between", []), probes["after"]]
    w = list(probes.get("slice_busy_s") or [1.0]) if weighed else [1.0] * (len(runs) - 1)
    if len(w) != len(runs) - 1:
        raise InputError(f"{where}: speed_probe has {len(runs)} probe runs around {len(w)} slices "
                         "(one more run than slices)")
    return [(a, b, float(x)) for a, b, x in zip(runs, runs[1:], w)]


def _probe_busy(probes, where: str | Path) -> float:
    """The probe's busy time over what it brackets (`_probe_slices`; NaN without a before and an
    after run): each stretch's two probes' mean weighted by its weight (the fit is made on the
    slices' steps alike)."""
    pairs = _probe_slices(probes, where)
    if not pairs:
        return float("nan")
    busy = np.array([[a["busy_s"], b["busy_s"]] for a, b, _ in pairs], float)
    w = np.array([x for _, _, x in pairs], float)
    return float(np.sum(w * busy.mean(axis=1)) / np.sum(w))


def probe_speed(replay_dir: str | Path, fit_json: str | Path) -> float:
    """How slow the host ran the engine around one replay against the profile, measured apart from
    the replay: the speed probe's busy time before and after it (``speed_probe`` of its
    summary.json) over the probe's around the live profile replay the step model was fitted on
    (fit.json; around each of its slices, weighted by their busy time: `_probe_busy`), the same
    burst each time (`servesim.engine.inprocess.SpeedProbe`). NaN where
    either has no probe (a run without ``--probe-requests``, an HTTP replay). Unlike
    `replay_speed` it uses nothing of the replay's own steps: the reading ``probe-matched``."""
    from servesim.engine.profile import read_fit

    path = Path(replay_dir) / "summary.json"
    base = _probe_busy(read_fit(fit_json).get("speed_probe"), fit_json)
    return _probe_busy(json.loads(path.read_text()).get("speed_probe"), path) / base if base > 0 else float("nan")


def host_drift(fit_json: str | Path, replay_dirs) -> dict:
    """How far the host's speed moved over one calibration job, read from its speed probes alone
    (the same fixed burst each time, `inprocess.SpeedProbe`): every probe run around the live
    profile (fit.json) and around each replay (its summary.json), a run shared by two neighbours
    counted once. ``probes`` (their count), ``probe_range_pct`` ((max − min) / median × 100) and
    ``probe_busy_s`` (the busy times in the order found); ``{}`` where the job has no probe. It is
    the host's, not the simulator's: an idle engine ran the probe within 4 % forty times in a row
    (7 Dec), while whole calibration jobs saw it move 23-41 %."""
    from servesim.engine.profile import read_fit

    sources = [(read_fit(fit_json).get("speed_probe"), fit_json)]
    sources += [(json.loads((Path(d) / "summary.json").read_text()).get("speed_probe"), Path(d) / "summary.json")
                for d in replay_dirs]
    runs = [r for probes, where in sources for a, b, _ in _probe_slices(probes, where, weighed=False) for r in (a, b)]
    seen, busy = set(), []
    for r in runs:
        if isinstance(r, dict) and "busy_s" in r:
            key = json.dumps(r, sort_keys=True)
            if key not in seen:
                seen.add(key)
                busy.append(float(r["busy_s"]))
    if not busy:
        return {}
    b = np.asarray(busy)
    return {"probes": len(b), "probe_range_pct": float((b.max() - b.min()) / np.median(b) * 100),
            "probe_busy_s": busy}


def compare_repeats(replay_dirs, fit_json: str | Path, *, frontend_overhead: bool = True,
                    arrivals: str = "scheduled", label: str = "", coalesced="keep",
                    speed_matched: bool = False, probe_matched: bool = False, frontend=None,
                    seed: int = 0) -> pd.DataFrame:
    """Engine vs simulator over repeated replays of one workload, with the engine's own spread.

    Each replay is simulated with its own send times (``compare_run``). Per metric: ``engine`` and
    ``sim`` are medians over the repeats used, ``rel_err = sim / engine - 1``, ``engine_spread``
    is the engine's (max - min) / median over them (``engine_min`` / ``engine_max``: the two ends),
    and ``within_spread`` says whether the error is inside that run-to-run noise. Replays marked ``lag_clean: false`` (the client sent late) are
    left out while a clean one exists; if none is clean all are used and ``lag_clean`` is False.

    What the spread is made of: ``speed_spread`` is the (max - min) / median of the repeats'
    `replay_speed`, and ``engine_spread_speed_adj`` the engine's spread once each repeat's metrics
    latencies are divided by its speed relative to the repeats' median (first order: every latency
    scaled by the step speed; queueing past saturation is not linear in it; throughput is left as
    is). NaN where steps were not recorded. ``sim_spread``: the same spread of the simulator's
    repeats, and ``engine_spread_unexplained`` the (max - min) / median of the repeats' engine / sim
    ratios: the engine's spread the simulated repeats do not reproduce. As profiled the simulated
    repeats differ only by their send times, so it is about the engine's spread; under
    ``speed_matched`` (``probe_matched``) it is what the repeats' measured step speeds (probe
    speeds) leave unexplained, taken through the simulator's queueing rather than to first order.
    The errors are not adjusted: the speed-relative division cancels in the median only roughly.
    ``speed_matched`` (the reading of that name) simulates each replay at its own `regime_speeds`
    instead: the simulator is told how fast the engine stepped during that replay against its
    profile (two numbers, prefill and decode steps, from its recorded steps), so what is left of the
    error is batching, queueing and the step model's shape within a regime, not the host's speed
    (the engine's speed probe moved by up to 40 % over one paper-scale calibration on the 2-core
    host, 7 Dec) nor the profile's drift since it was measured. Replays without steps
    (or a regime without steps) are simulated as is. ``probe_matched`` (the reading ``probe-matched``)
    simulates each replay at its `probe_speed` instead, both regimes alike: the host's speed measured
    around the replay by a fixed burst, nothing of the replay's own (as is where there is no probe).
    ``frontend``: as `compare_run`'s (HTTP replays).

    How far the sample pins the error down: ``rel_err_lo`` / ``rel_err_hi``, the 90 % interval of
    ``rel_err`` for each latency percentile under a paired block bootstrap of the requests
    (`servesim.metrics.interval`, draws seeded by ``seed``), every repeat drawn alike; NaN for the
    counts and throughput. Where the two sides' distributions have a cliff near the percentile
    (a hundred requests, ten of them queued behind one long prompt) it is wide. It measures which
    requests the workload drew, not the host's speed: that is ``engine_spread``.
    """
    if speed_matched and probe_matched:
        raise ValueError("compare_repeats: speed_matched or probe_matched, not both")
    dirs = [Path(d) for d in replay_dirs]
    if not dirs:
        raise ValueError("compare_repeats: no replay folders")
    clean = [d for d in dirs if json.loads((d / "summary.json").read_text()).get("lag_clean", True)]
    used = clean or dirs
    measured = [_speeds(_step_times(d, fit_json)) for d in used]  # (all, prefill, decode) per replay
    speeds = np.array([m[0] for m in measured])

    def matched_speed(d, m):
        if speed_matched:
            return tuple(v if np.isfinite(v) else 1.0 for v in m[1:])
        if probe_matched:
            v = probe_speed(d, fit_json)
            return (v, v) if np.isfinite(v) else (1.0, 1.0)
        return 1.0, 1.0

    matched = [matched_speed(d, m) for d, m in zip(used, measured)]
    runs = [_compare_run(d, fit_json, frontend_overhead=frontend_overhead, arrivals=arrivals, coalesced=coalesced,
                         speed=v, frontend=frontend) for d, v in zip(used, matched)]
    tables = [r[0] for r in runs]
    both = pd.concat([t.assign(_rel_speed=v / np.median(speeds)) for t, v in zip(tables, speeds)], ignore_index=True)
    # latencies scale with the step speed; throughput (set by the arrivals below saturation) is left as is
    both["_adj"] = both["engine"] / np.where(both["metric"].str.contains("throughput"), 1.0, both["_rel_speed"])
    g = both.groupby(["coalesced", "metric"], sort=False)
    eng, sim = g["engine"].median(), g["sim"].median()
    many = len(used) > 1  # one run shows no spread
    out = pd.DataFrame({"label": label, "metric": eng.index.get_level_values("metric"), "engine": eng.to_numpy(),
                        "sim": sim.to_numpy(), "coalesced": eng.index.get_level_values("coalesced")})
    out["rel_err"] = out["sim"] / out["engine"].where(out["engine"] != 0) - 1.0
    out["engine_min"], out["engine_max"] = g["engine"].min().to_numpy(), g["engine"].max().to_numpy()
    out["engine_spread"] = _rel_range(g["engine"]) if many else np.nan
    # how far the simulator's own repeats move (each repeat's send times; under a matched reading
    # its speed too), and what of the engine's spread they do not reproduce: the spread of the
    # repeats' engine / sim ratios
    both["_ratio"] = both["engine"] / both["sim"].where(both["sim"] != 0)
    out["sim_spread"] = _rel_range(g["sim"]) if many else np.nan
    out["engine_spread_unexplained"] = (_rel_range(both.groupby(["coalesced", "metric"], sort=False)["_ratio"])
                                        if many else np.nan)
    out["within_spread"] = out["rel_err"].abs() <= out["engine_spread"]
    out["engine_spread_speed_adj"] = _rel_range(g["_adj"]) if many else np.nan
    out["speed_spread"] = float((speeds.max() - speeds.min()) / np.median(speeds)) if many else np.nan
    out["speed_matched"] = bool(speed_matched)
    out["probe_matched"] = bool(probe_matched)
    out["n_repeats"] = len(used)
    out["n_replays"] = len(dirs)
    out["lag_clean"] = bool(clean)
    out["coalesced_share"] = float(np.mean([t["coalesced_share"].iloc[0] for t in tables]))
    ends = _error_intervals([r[2] for r in runs], seed)
    out["rel_err_lo"], out["rel_err_hi"] = ([ends.get((c, m), (np.nan, np.nan))[i] for c, m in zip(out.coalesced, out.metric)]
                                            for i in (0, 1))
    return out


def _rel_range(grouped) -> np.ndarray:
    """(max - min) / median of each group of a grouped series (NaN where the median is 0): the
    spread of one quantity over a workload's repeats."""
    mid = grouped.median()
    return ((grouped.max() - grouped.min()) / mid.where(mid != 0)).to_numpy()


def _error_intervals(paired: list[dict], seed: int) -> dict:
    """(coalesced reading, summary key) -> the sampling interval of its ``rel_err``
    (`servesim.metrics.interval.paired_interval`) over the repeats' paired per-request values
    (`_paired_values`, one dict of readings per repeat), the requests in the first repeat's
    arrival order; a request missing from a repeat counts as unfinished there."""
    out = {}
    for reading in paired[0]:
        frames = [p[reading] for p in paired]
        order = frames[0].sort_values("arrival_s", kind="stable").index
        for m in INTERVAL_METRICS:
            side = {k: [f[f"{k}_{m}"].reindex(order).to_numpy(float) for f in frames] for k in ("engine", "sim")}
            for q, ends in zip(INTERVAL_QS, paired_interval(side["engine"], side["sim"], INTERVAL_QS, seed=seed)):
                out[(reading, f"p{q}_{m}_s")] = tuple(float(v) for v in ends)
    return out


#: `error_verdict`'s answers
VERDICTS = ("yes", "no", "undecided")


def error_verdict(errors, lows, highs, bound: float = 0.10, spreads=None) -> str:
    """Whether relative errors are within ``bound``, given what could explain a miss: each error's
    sampling interval (`compare_repeats`' ``rel_err_lo`` / ``rel_err_hi``) and the engine's own
    spread across repeats (``engine_spread``; None or NaN: not measured). ``"yes"`` when every
    ``|error| <= bound``; ``"no"`` when some error misses beyond both (its whole interval outside
    ``bound`` and ``|error|`` over the spread); otherwise ``"undecided"``: every miss is inside its
    interval (this many requests cannot tell) or inside the engine's own run-to-run spread (the
    engine cannot be pinned down that closely on this host). A spread never makes a miss a pass. A
    miss without an interval (NaN ends) is beyond it. A NaN error is refused: nothing to judge."""
    e, lo, hi = (np.asarray(v, float) for v in (errors, lows, highs))
    sp = np.full(e.shape, np.nan) if spreads is None else np.asarray(spreads, float)
    if not (e.shape == lo.shape == hi.shape == sp.shape) or not e.size:
        raise ValueError(f"error_verdict: {e.size} errors, {lo.size} lows, {hi.size} highs, {sp.size} spreads")
    if np.isnan(e).any():
        raise ValueError("error_verdict: a NaN error (a metric neither side has)")
    miss = np.abs(e) > bound
    if not miss.any():
        return "yes"
    beyond_sample = (lo > bound) | (hi < -bound) | np.isnan(lo) | np.isnan(hi)
    beyond_spread = ~(np.abs(e) <= sp)  # NaN spread: nothing to explain the miss
    return "no" if (miss & beyond_sample & beyond_spread).any() else "undecided"


def _fit_field(fit_json: str | Path | None, key: str, before: str) -> str:
    """``key`` of a profile's fit.json; ``before`` (what every fit was before the key was recorded)
    for an older fit, and without a fit."""
    if fit_json is None:
        return before
    from servesim.engine.profile import read_fit

    return str(read_fit(fit_json).get(key, before))


def step_form(fit_json: str | Path | None) -> str:
    """The step model's form a profile's fit.json was fitted in (`servesim.perf.fitted.FORMS`;
    ``linear`` for fits written before the form was recorded, and without a fit)."""
    return _fit_field(fit_json, "step_form", "linear")


def step_clock(fit_json: str | Path | None) -> str:
    """How the steps a profile's fit.json was fitted on were timed (`servesim.engine.records.STEP_CLOCKS`;
    ``step`` for fits written before the clock was recorded, and without a fit)."""
    return _fit_field(fit_json, "step_clock", "step")


def step_weighting(fit_json: str | Path | None) -> str:
    """How a profile's fit.json weighed the steps it was fitted on (`servesim.perf.fitted.WEIGHTINGS`;
    ``relative`` for fits written before the weighting was recorded, and without a fit)."""
    return _fit_field(fit_json, "step_weighting", "relative")


def refit_on_steps(load_dirs, seed: int = 0, form: str = "linear", clock: str = "step", weighting: str = "relative"):
    """The step model refitted on the engine's own steps: `servesim.perf.fitted` (of ``form``: the
    profile's, `step_form`; weighing them by ``weighting``: the profile's, `step_weighting`) on a
    random half (stratified by regime) of the load replays' steps (timed by ``clock``: the
    profile's, `step_clock`).
    Returns (model, all steps, the held-out half); `step_time_error` scores it and `steps_fit_json`
    hands it to the simulator, so both read the same half."""
    from servesim.perf import fitted

    loads, train, test = _step_halves(load_dirs, seed, clock)
    return fitted.fit(train, form=form, weighting=weighting), loads, test


def _step_halves(load_dirs, seed: int, clock: str):
    """(all the load replays' steps, the half a refit is fitted on, the held-out half)."""
    from servesim.perf import measurements as M

    loads = pd.concat([step_table(d, clock=clock) for d in load_dirs], ignore_index=True)
    return (loads, *M.split(loads, 0.5, seed))


def step_time_error(load_dirs, shape_dirs=(), fit_json: str | Path | None = None, seed: int = 0) -> pd.DataFrame:
    """Issue 33 (a): step-time models scored on the engine's own batches.

    ``refit`` (`refit_on_steps`) scored on the held-out half of the load steps and on every
    held-out shape's steps; ``refit-median``: the same form on the same half fitted for the median
    step (`servesim.perf.fitted` weighting ``median``), scored alike: the form's own error at the
    median, where ``refit`` (the mean step, as latencies need) also carries the host's skew;
    ``profile``: the profile's fit (``fit_json``: the model the simulator runs) on all the load
    steps and the shapes'. Rows: model, scored_on, regime, n, mape_pct, median_ape_pct,
    median_ratio (the median of measured over predicted)."""
    from servesim.perf import fitted
    from servesim.perf import measurements as M

    clock = step_clock(fit_json)  # every step timed as the profile's were
    loads, train, test = _step_halves(load_dirs, seed, clock)
    form = step_form(fit_json)
    shapes = [(Path(d).name, step_table(d, clock=clock)) for d in shape_dirs]
    scored = []
    for mname, weighting in (("refit", step_weighting(fit_json)), ("refit-median", "median")):
        m = fitted.fit(train, form=form, weighting=weighting)
        scored += [(mname, m, "loads (held-out half)", test), *[(mname, m, n, t) for n, t in shapes]]
    if fit_json is not None:
        from servesim.engine.profile import load_fitted

        profile = load_fitted(fit_json)[0]
        scored += [("profile", profile, "loads (all)", loads), *[("profile", profile, n, t) for n, t in shapes]]
    rows = []
    for mname, m, sname, df in scored:
        ratio = df.step_s.to_numpy(float) / m.step_time(*(df[c].to_numpy(float) for c in M.AGGREGATES))
        ape = np.abs(1.0 / ratio - 1.0) * 100
        reg = df["regime"].to_numpy()
        for r in ("all", *M.REGIMES):
            k = np.ones(len(df), bool) if r == "all" else reg == r
            if k.any():
                rows.append({"model": mname, "scored_on": sname, "regime": r, "n": int(k.sum()),
                             "mape_pct": float(ape[k].mean()), "median_ape_pct": float(np.median(ape[k])),
                             "median_ratio": float(np.median(ratio[k]))})
    return pd.DataFrame(rows)


def step_noise_floor(step_dirs, min_group: int = 10, clock: str = "step") -> float:
    """The engine's own step-to-step noise, in % (NaN when no group is large enough): the median
    relative deviation of pure decode steps from the median of their group, a group being one
    replay's steps of one batch size within one decile of its context sum (``min_group`` steps or
    more). No step-time model of the batch can score a median error far below it on single steps:
    it is the host, not the batch (on the 2-core host 5-11 % per load). ``clock``: how the steps
    are timed (`servesim.engine.records.STEP_CLOCKS`; the profile's, `step_clock`)."""
    devs = []
    for d in step_dirs:
        st = step_table(d, clock=clock)
        dec = st[st.prefill_tokens == 0]
        for _, grp in dec.groupby("decode_seqs"):
            if len(grp) < 3 * min_group:
                continue
            bins = (pd.qcut(grp.decode_ctx, min(10, len(grp) // min_group), duplicates="drop")
                    if grp.decode_ctx.nunique() > 1 else np.zeros(len(grp)))  # one context: one group
            for _, x in grp.groupby(bins, observed=True):
                if len(x) >= min_group:
                    devs.append(np.abs(x.step_s.to_numpy(float) / float(x.step_s.median()) - 1.0))
    return float(np.median(np.concatenate(devs)) * 100) if devs else float("nan")


def _fit_json_with(fit_json: str | Path, out: str | Path, coefficients: dict, **fields) -> Path:
    """A copy of ``fit_json`` (engine, capacity, mix kept) with another step model's
    ``coefficients`` and the given ``fields``, written to ``out``: a reading's fit.json."""
    from servesim.engine.profile import read_fit

    d = read_fit(fit_json, "coefficients")
    d.update(coefficients=dict(coefficients), **fields)
    out = Path(out)
    out.write_text(json.dumps(d, indent=1) + "\n")
    return out


def steps_fit_json(step_dirs, fit_json: str | Path, out: str | Path, seed: int = 0) -> Path:
    """A fit.json for the simulator whose step model is `refit_on_steps`' (the engine's own step
    times) and whose frontend overhead is 0 (an in-process replay has none); the rest (engine,
    capacity, mix) is ``fit_json``'s. The comparison read with it is the reading ``steps``: the
    simulator's scheduling and queueing with the step times the engine really took."""
    step_dirs = list(step_dirs)
    m, tab, _ = refit_on_steps(step_dirs, seed, step_form(fit_json), step_clock(fit_json), step_weighting(fit_json))
    return _fit_json_with(fit_json, out, m.coefficients(), frontend_overhead_s=0.0,
                          step_model_source=f"refit on half of {len(tab)} engine steps of {len(step_dirs)} "
                                            "in-process replays")


def _stored_fit_json(fit_json: str | Path, field: str, value: str, out: str | Path) -> Path | None:
    """A copy of ``fit_json`` whose step model is the profile's other fit stored under
    ``coefficients_by_<kind>`` for ``value``, with ``field`` (``step_<kind>``) set to it; None where
    the profile has no such fit."""
    from servesim.engine.profile import read_fit

    stored = read_fit(fit_json, "coefficients").get(f"coefficients_by_{field.removeprefix('step_')}") or {}
    return _fit_json_with(fit_json, out, stored[value], **{field: value}) if value in stored else None


def form_fit_json(fit_json: str | Path, form: str, out: str | Path) -> Path | None:
    """A copy of ``fit_json`` whose simulator step model is its fit in another ``form``
    (``coefficients_by_form``, `servesim.perf.fitted.FORMS`: the same steps, the same profile), for the
    sim_vs_vllm notebook's reading of that name; None where the profile predates the forms."""
    return _stored_fit_json(fit_json, "step_form", form, out)


def clock_fit_json(fit_json: str | Path, clock: str, out: str | Path) -> Path | None:
    """A copy of ``fit_json`` whose simulator step model is the live steps' fit under another
    ``clock`` (``coefficients_by_clock``, `servesim.engine.records.STEP_CLOCKS`: the same steps, the
    same form), for the sim_vs_vllm notebook's reading ``no-gaps`` (clock ``step``); None where
    the profile predates the clocks or had no live steps."""
    return _stored_fit_json(fit_json, "step_clock", clock, out)


def weighting_fit_json(fit_json: str | Path, weighting: str, out: str | Path) -> Path | None:
    """A copy of ``fit_json`` whose simulator step model is its fit under another ``weighting``
    (``coefficients_by_weighting``, `servesim.perf.fitted.WEIGHTINGS`: the same steps, form and
    clock), for the sim_vs_vllm notebook's reading ``observed-weights`` (``relative``); None where
    the profile predates the weightings."""
    return _stored_fit_json(fit_json, "step_weighting", weighting, out)


class _RecordingStepTime(StepTimeModel):
    """Delegates to ``inner`` and keeps every step's aggregates (scalar calls only: the simulator's
    reference mode, which steps one iteration at a time)."""

    def __init__(self, inner: StepTimeModel) -> None:
        self.inner, self.name, self.steps = inner, f"recording({inner.name})", []

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        if isinstance(prefill_tokens, np.ndarray) or isinstance(decode_seqs, np.ndarray):
            raise TypeError("the recording step model takes one step at a time (simulate with mode='reference')")
        self.steps.append((prefill_tokens, prefill_ctx, decode_seqs, decode_ctx))
        return self.inner.step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)


#: batch statistics compared between the engine's steps and the simulator's
BATCH_STATS = ("steps", "prefill_step_share", "mean_decode_seqs", "mean_prefill_tokens_per_prefill_step",
               "mean_scheduled_tokens")


def _batch_stats(pt: np.ndarray, ds: np.ndarray) -> dict:
    busy = (pt > 0) | (ds > 0)
    pt, ds = pt[busy], ds[busy]
    pre = pt > 0
    return {"steps": float(len(pt)), "prefill_step_share": float(pre.mean()) if len(pt) else np.nan,
            "mean_decode_seqs": float(ds.mean()) if len(ds) else np.nan,
            "mean_prefill_tokens_per_prefill_step": float(pt[pre].mean()) if pre.any() else np.nan,
            "mean_scheduled_tokens": float((pt + ds).mean()) if len(pt) else np.nan}


def batch_agreement(replay_dir: str | Path, fit_json: str | Path) -> pd.DataFrame:
    """Issue 33 (b), in distribution: the batches the engine ran (``steps.parquet``) against those the
    simulator's scheduler forms on the same arrivals, stepping by ``fit_json``'s model (the `steps`
    reading's fit gives both the same step times, so what differs is scheduling). Rows: stat
    (`BATCH_STATS`), engine, sim, rel_diff."""
    from servesim.engine.profile import load_fitted

    d = Path(replay_dir)
    _, _, config, kv_blocks, wl = _replay(d)
    eng_steps = pd.read_parquet(d / "steps.parquet")
    model, _ = load_fitted(fit_json)
    rec = _RecordingStepTime(model)
    simulate(wl, rec, config, kv_blocks, 0.0, mode="reference")
    sim = np.asarray(rec.steps, float).reshape(-1, 4)
    e = _batch_stats(eng_steps.prefill_tokens.to_numpy(float), eng_steps.decode_seqs.to_numpy(float))
    m = _batch_stats(sim[:, 0], sim[:, 2])
    out = pd.DataFrame({"stat": list(BATCH_STATS), "engine": [e[k] for k in BATCH_STATS], "sim": [m[k] for k in BATCH_STATS]})
    out["rel_diff"] = out["sim"] / out["engine"].where(out["engine"] != 0) - 1.0
    return out


class _ForcedSteps(_RecordingStepTime):
    """A `_RecordingStepTime` whose step ``i`` (in call order) ends at ``ends[i]`` on the
    simulator's clock (``now``, set to its kernel's clock before the run), as the engine's did;
    steps past the engine's take the inner model's time. Ends, not durations: a sum of durations
    drifts from the engine's step starts by rounding, and a request entering at a step start must
    not miss it by a bit."""

    def __init__(self, ends: np.ndarray, fallback: StepTimeModel) -> None:
        super().__init__(fallback)
        self.ends, self.now, self.name = np.asarray(ends, float), None, f"forced({fallback.name})"

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        i = len(self.steps)
        t = super().step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
        return float(self.ends[i] - self.now()) if i < len(self.ends) and self.ends[i] > self.now() else float(t)


#: how long before an engine step's start a request enters the step-by-step replay: far above the
#: clock's rounding (a request entering exactly at a boundary could fall either side of it), far
#: below any step
ENTRY_LEAD_S = 1e-6

#: a step is "the same batch" when these aggregates agree (the scheduled prompt tokens and the
#: decoding sequences; with them the context sums agree unless the requests differ)
STEP_KEYS = ("prefill_tokens", "decode_seqs", "prefill_ctx", "decode_ctx")


def step_agreement(replay_dir: str | Path, fit_json: str | Path) -> tuple[pd.DataFrame, dict]:
    """Issue 33 (b), step by step: the simulator's scheduler on the engine's own clock.

    An in-process replay records every engine step (start, end, batch) and when each request joined
    (``sends.parquet``: the driver adds a request between steps). The simulator replays the same
    requests with each one entering just before the start of the first engine step after it joined
    (`ENTRY_LEAD_S`), and with its i-th step forced to end when the engine's i-th did (at the next
    step's start while the engine had work left, else at the step's end), so before every step both
    schedulers see the same waiting requests at the same time for as long as their batches have agreed. Then step i
    of each is compared (`STEP_KEYS`): ``same`` when all agree. After a first difference the two
    states differ and later steps may or may not fall back in step; the share counts them all.

    Returns (per step: step, engine_* / sim_* of `STEP_KEYS`, same, what: "" / "prompt tokens" /
    "decoding sequences" / "contexts"; summary: steps_engine, steps_sim, same_share, first_difference
    (step index or None), the count of each kind of difference, and ttft_s / e2e_s_max_abs_diff_s:
    how far the forced simulation's request latencies are from the engine's, in seconds, which with
    every batch the same leaves the step times as the only source of the simulator's error)."""
    from servesim.engine.profile import load_fitted

    d = Path(replay_dir)
    if not (d / "steps.parquet").exists():
        raise ValueError(f"{d}: no steps.parquet (an in-process replay records its engine steps)")
    _, engine, config, kv_blocks, wl = _replay(d)
    st = pd.read_parquet(d / "steps.parquet").sort_values("step").reset_index(drop=True)
    sent = pd.read_parquet(d / "sends.parquet").set_index("request_id")["sent_s"]
    start, end = st.start_s.to_numpy(float), st.end_s.to_numpy(float)
    sent_s = engine["request_id"].map(sent).to_numpy(float)
    finish = engine["finish_s"].to_numpy(float)
    idx = np.searchsorted(start, sent_s, side="left")  # the first step that began after it joined
    entry = np.where(idx < len(start), np.maximum(start[np.minimum(idx, len(start) - 1)] - ENTRY_LEAD_S, 0.0), sent_s)
    # after step k the engine had work left iff more requests had joined than finished by its end
    # (a request finishes after it joins; an unfinished one, NaN, sorts last and never counts)
    joined = np.searchsorted(np.sort(sent_s), end, side="right")
    finished = np.searchsorted(np.sort(finish), end + 1e-12, side="right")
    nxt = np.append(start[1:], np.inf)
    ends = np.where((joined > finished) & np.isfinite(nxt), nxt, end)
    forced = _ForcedSteps(ends, load_fitted(fit_json)[0])

    def clock(cluster):
        forced.now = lambda: cluster.kernel.now

    sim_req = simulate(wl, forced, config, kv_blocks, 0.0, mode="reference", entry_s=entry, on_cluster=clock)
    sim = pd.DataFrame(np.asarray(forced.steps, float).reshape(-1, 4), columns=["prefill_tokens", "prefill_ctx",
                                                                                "decode_seqs", "decode_ctx"])
    n = min(len(st), len(sim))
    out = pd.DataFrame({"step": np.arange(n)})
    for k in STEP_KEYS:
        out[f"engine_{k}"] = st[k].to_numpy(float)[:n]
        out[f"sim_{k}"] = sim[k].to_numpy(float)[:n]
    eq = {k: out[f"engine_{k}"].to_numpy() == out[f"sim_{k}"].to_numpy() for k in STEP_KEYS}
    out["same"] = np.logical_and.reduce(list(eq.values()))
    out["what"] = np.select([~eq["prefill_tokens"], ~eq["decode_seqs"], ~out["same"].to_numpy()],
                            ["prompt tokens", "decoding sequences", "contexts"], "")
    diff = np.flatnonzero(~out["same"].to_numpy())
    res = {"steps_engine": int(len(st)), "steps_sim": int(len(sim)),
           "same_share": float(out["same"].mean()) if n else float("nan"),
           "first_difference": int(diff[0]) if len(diff) else None,
           **{f"differ_{w.replace(' ', '_')}": int((out["what"] == w).sum())
              for w in ("prompt tokens", "decoding sequences", "contexts")}}
    # with the same batches at the same times the requests' latencies must follow: what is left is
    # the driver's gaps (a request joins between steps; its tokens are read at a step's end)
    both = engine.merge(sim_req, on="request_id", suffixes=("_engine", "_sim"))
    for m in ("ttft_s", "e2e_s"):
        res[f"{m}_max_abs_diff_s"] = float((both[f"{m}_sim"] - both[f"{m}_engine"]).abs().max())
    return out, res
