"""Run a scenario end to end: build the fleet, simulate, collect tables.

    from servesim.fleet import load_scenario, run_scenario
    res = run_scenario(load_scenario("examples/scenarios/one_region.yaml"))
    res.requests            # one row per request (servesim.sim.request_log.REQUEST_COLUMNS)
    res.timeseries          # per (time, model, region): instances by state, queues, KV use
    res.summary             # dict: servesim.metrics.summarize's layout + the fleet's counters
    res.write("out/")       # requests.parquet, timeseries.parquet, instance_hours.parquet,
                            # lifecycle.parquet, summary.json
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..metrics import summarize
from ..policies.registry import CONTROLLERS, GLOBAL_ROUTERS
from ..sim.routers import ROUTERS
from .core import EndpointConfig, Fleet, LeadTimes, shared_strings
from .limits import check_period, check_sampling
from .scenario import Scenario, build_workload, check_workload_names


@dataclass
class Result:
    """Outputs of one run; DataFrames notebooks use directly."""

    scenario: Scenario
    seed: int
    requests: pd.DataFrame
    timeseries: pd.DataFrame
    instance_hours: pd.DataFrame
    lifecycle: pd.DataFrame
    summary: dict[str, Any]

    def write(self, outdir: str | Path) -> Path:
        """Write the tables as Parquet and the summary as JSON under `outdir`."""
        from servesim.errors import writing

        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        for name in ("requests", "timeseries", "instance_hours", "lifecycle"):
            with writing(out / f"{name}.parquet"):  # a full disk's error names the file
                getattr(self, name).to_parquet(out / f"{name}.parquet", index=False)
        with writing(out / "summary.json"):
            (out / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        return out


#: engine timing columns (seconds from the workload start; NaN where not applicable)
TIMING = ("scheduled_s", "first_token_s", "finish_s", "ttft_s", "e2e_s", "tbt_mean_s", "tbt_max_s", "tbt_p99_s")


def request_table(fleet: Fleet, timing: pd.DataFrame | Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Per-request results in REQUEST_COLUMNS order, plus ``app`` and ``deadline_s``.

    ``state``/``reason``/``instance`` are the fleet's (it also ends requests that never reach an
    engine: no endpoint, or still queued when the run stopped). Timings come from `timing`
    (the sim's timing columns and ``preemptions``, row-aligned with the workload: a frame or a
    mapping of arrays) or else from the engines' end records (`fleet.records`). ``partial``: the run stopped while the request was in an
    engine or queued at an endpoint (not for requests that had not arrived yet).
    """
    n = fleet.n
    w = fleet.workload
    cols: dict[str, Any] = {
        "request_id": w["request_id"].to_numpy(np.int64, copy=True),
        "model": shared_strings(w["model"]),
        "region": shared_strings(w["region"]),
        "tier": shared_strings(w["tier"]),
        "instance": fleet.instance_of.astype(object),
        "arrival_s": fleet.arrival.copy(),
        "prompt_tokens": fleet.prompt.copy(),
        "output_tokens": fleet.output.copy(),
        "state": fleet.state.astype(object),
        "reason": fleet.reason.astype(object),
    }
    if timing is not None:
        rows = len(timing) if isinstance(timing, pd.DataFrame) else len(timing["finish_s"])
        if rows != n:
            raise ValueError(f"timing frame has {rows} rows for {n} requests")
        # a mapping hands its arrays over (the sim's log, dropped after the run); a frame's are copied
        take = np.array if isinstance(timing, pd.DataFrame) else np.asarray
        for c in TIMING:
            cols[c] = take(timing[c], dtype=np.float64)
        cols["preemptions"] = take(timing["preemptions"], dtype=np.int64)
    else:
        timing_cols = {c: np.full(n, np.nan) for c in TIMING}
        pre = np.zeros(n, np.int64)
        for i, rec in fleet.records.items():
            for c in TIMING:
                v = rec.get(c)
                if v is not None:
                    timing_cols[c][i] = v
            pre[i] = rec.get("preemptions", 0)
        cols.update(timing_cols)
        cols["preemptions"] = pre
    cols["partial"] = (fleet.state == "unfinished") & (np.arange(n) < fleet._next_arrival)
    cols["app"] = shared_strings(w["app"])
    cols["deadline_s"] = w["deadline_s"].to_numpy(np.float64, copy=True)
    df = pd.DataFrame(cols, copy=False)  # the arrays are this table's own: no second copy at the peak
    del cols
    for c in ("model", "region", "tier", "instance", "state", "reason", "app"):
        df[c] = df[c].astype("string")
    return df


def summarise(sc: Scenario, seed: int, req: pd.DataFrame, hours: pd.DataFrame, end_s: float,
              fleet: Fleet, timeseries: pd.DataFrame | None = None) -> dict[str, Any]:
    """Run summary: `servesim.metrics.summarize` (per tier, deadlines, instance-hours) and the
    fleet's own counters; deterministic (no wall-clock numbers), JSON-ready."""
    return {
        "scenario": sc.name,
        "seed": seed,
        "end_s": end_s,
        "partial": bool(req["partial"].any()),
        **summarize(req, hours=hours, timeseries=timeseries, end_s=end_s),
        "scale_denied": int(fleet.scale_denied),
        "requeued_on_drain": int(fleet.requeued),
        **({"timed_out": int(fleet.timed_out)} if sc.enforce_deadlines else {}),
        **({"conversions": int(fleet.conversions)} if fleet.conversions else {}),
    }


def build_fleet(sc: Scenario, kernel: Any, workload: pd.DataFrame, engine_factory: Callable,
                seed: int) -> Fleet:
    """The `Fleet` a scenario describes, with seeded routers (one RNG per endpoint)."""
    ss = np.random.SeedSequence([seed, 2])
    router_rngs = {(e.model, e.region): np.random.default_rng(s)
                   for e, s in zip(sc.endpoints, ss.spawn(len(sc.endpoints)))}
    router_cfgs = {(e.model, e.region): (e.router or sc.router, f"endpoints.{i}.router" if e.router else "router")
                   for i, e in enumerate(sc.endpoints)}

    def router_factory(model: str, region: str):
        cfg, where = router_cfgs[(model, region)]
        return ROUTERS.create(cfg.name, cfg.options(), where=where, context={"rng": router_rngs[(model, region)]})

    eps = []
    for e in sc.endpoints:
        lead = sc.models[e.model].lead
        eps.append(EndpointConfig(e.model, e.region, e.instances, e.min_instances, e.max_instances,
                                  LeadTimes(lead.request_s, lead.provision_s, lead.load_s, lead.reclaim_s,
                                                            lead.convert_s)))
    g = sc.global_router
    grouter = GLOBAL_ROUTERS.create(g.name, g.options(), where="global_router")
    return Fleet(kernel, workload, eps, engine_factory, router_factory, global_router=grouter,
                 latency_s={k: dict(v) for k, v in sc.latency_s.items()},
                 region_capacity={r.name: r.capacity for r in sc.regions if r.capacity is not None},
                 pool={r.name: dict(r.pool) for r in sc.regions if r.pool},
                 scale_in_to=sc.scale_in_to, requeue_on_drain=sc.requeue_on_drain,
                 window_s=sc.output.window_s, enforce_deadlines=tuple(sc.enforce_deadlines),
                 pool_conversions=sc.pool_conversions)


def run_scenario(sc: Scenario, *, seed: int | None = None, progress: bool = False,
                 workload: pd.DataFrame | None = None, actors: list | None = None,
                 global_router: Any = None, engines: Callable | None = None) -> Result:
    """Simulate `sc` (optionally with another seed or a given request table).

    actors: extra periodic control actors (objects with ``period_s`` and ``act(view) ->
      [Scale | Drain | Move]``), run after the scenario's autoscaler at equal times.
    global_router: an object with ``route(ridx, fleet) -> (model, region) | None`` replacing
      the scenario's ``global_router``.
    engines: ``engines(scenario, workload, seed)`` builds the engine side: an object with
      ``kernel``, ``factory`` (an `EngineFactory`) and ``attach(fleet)``; default: `servesim.sim`.

    If the run fails or is interrupted part-way (an actor raises, Ctrl-C), the exception goes on
    carrying ``partial_result``: the `Result` up to that moment, marked ``partial`` with
    ``stopped_by``; `write_partial` saves it.

    With ``sc.frontend`` every instance's API server is a queue in front of it
    (`servesim.sim.frontend.serve`): the fleet is simulated again with the requests' entry times
    until the queues settle; the request table is the client's view (latencies from the
    arrivals), the time series, instance hours and lifecycle are the last pass's, and
    ``summary["frontend"]`` says how many passes it took and whether it settled.
    """
    if engines is None:
        from .engine_sim import (
            SimEngines as engines,  # servesim.sim behind the Engine protocol
        )

    seed = sc.seed if seed is None else int(seed)
    wl_seed = np.random.SeedSequence([seed, 1])
    if workload is None:  # the scenario's own workload: a row nothing in it can serve is an error
        workload = build_workload(sc, np.random.default_rng(wl_seed))
        check_workload_names(sc, workload)
    if sc.frontend is None:
        return _run_once(sc, seed, workload, progress, actors, global_router, engines)[0]
    if actors or global_router is not None:
        raise InputError(f"{sc.source or sc.name}: frontend: the fleet is simulated once per fixed-point pass, "
                         "so extra actors or a global router object (which keep state) cannot be given with it")
    from ..sim.frontend import serve

    fe = sc.frontend.build(sc.base_dir)
    last: dict = {}

    def engine_side(wl: pd.DataFrame) -> pd.DataFrame:
        last["run"] = _run_once(sc, seed, wl, progress, None, None, engines)
        return last["run"][0].requests

    table, info = serve(fe, workload, engine_side, max_passes=sc.frontend.max_passes)
    res, fleet, end_s = last["run"]
    table = table[list(res.requests.columns)].astype(res.requests.dtypes.to_dict())
    summary = summarise(sc, seed, table, res.instance_hours, end_s, fleet, res.timeseries)
    summary["frontend"] = info
    return Result(sc, seed, table, res.timeseries, res.instance_hours, res.lifecycle, summary)


def _run_once(sc: Scenario, seed: int, workload: pd.DataFrame, progress: bool, actors, global_router,
              engines: Callable) -> tuple[Result, Fleet, float]:
    """One simulation of ``workload``: (its Result, the fleet, the end time)."""
    last_arrival = float(workload["arrival_s"].iloc[-1]) if len(workload) else 0.0
    horizon = sc.duration_s if sc.duration_s is not None else last_arrival + sc.output.drain_limit_s
    src = sc.source or sc.name
    what = "" if sc.duration_s is not None else \
        f" (the last arrival at {last_arrival:g} s + output.drain_limit_s={sc.output.drain_limit_s:g})"
    check_sampling(sc.output.sample_s, horizon, src, what)  # before any sampling: bounded memory
    ctl = []
    if sc.autoscaler is not None:  # any registered controller, by name (servesim.policies.CONTROLLERS)
        a = sc.autoscaler
        ctl.append(CONTROLLERS.create(a.name, a.options(), where="autoscaler"))
        check_period(float(ctl[0].period_s), horizon, "autoscaler.period_s", src, what)
    for actor in actors or ():
        check_period(float(actor.period_s), horizon, f"{type(actor).__name__}.period_s", src, what)
    engines = engines(sc, workload, seed)
    fleet = build_fleet(sc, engines.kernel, workload, engines.factory, seed)
    if global_router is not None:
        fleet.global_router = global_router
    engines.attach(fleet)
    for actor in [*ctl, *(actors or ())]:
        fleet.add_actor(actor)
    samples: list[dict] = []
    fleet.add_sampler(sc.output.sample_s, samples)
    fleet.start()
    try:
        _run_kernel(engines.kernel, fleet, horizon, progress, span=sc.duration_s or max(last_arrival, 1.0))
    except BaseException as exc:  # an actor's bug, a solver failure, Ctrl-C: keep what was simulated
        _attach_partial(exc, lambda: _collect(sc, seed, workload, engines, fleet, samples,
                                              float(engines.kernel.now)))
        raise
    end_s = float(fleet.done_s) if fleet.done else float(horizon)
    return _collect(sc, seed, workload, engines, fleet, samples, end_s), fleet, end_s


def _attach_partial(exc: BaseException, collect: Callable[[], Result]) -> None:
    """Give ``exc`` a ``partial_result``: the run's tables up to the failure (``end_s`` is the
    clock when it stopped), its summary marked ``partial`` with ``stopped_by``, the error. Best
    effort: if the fleet is too broken to close its books, the original error goes on alone."""
    try:
        res = collect()
    except Exception:  # noqa: BLE001 - the original error is the one to report
        return
    res.summary.update(partial=True, stopped_by=f"{type(exc).__name__}: {exc}")
    try:
        exc.partial_result = res  # type: ignore[attr-defined]
    except AttributeError:  # an exception type without a __dict__
        pass


def _collect(sc: Scenario, seed: int, workload: pd.DataFrame, engines: Any, fleet: Fleet, samples: list,
             end_s: float) -> Result:
    """Close the run's books at ``end_s`` and build its `Result`."""
    if not samples or samples[-1]["time_s"] < end_s:
        samples.extend(fleet.sample(end_s))
    fleet.finalize(end_s)
    requests = request_table(fleet, engines.timing() if hasattr(engines, "timing") else None)
    ts = pd.DataFrame(samples)
    hours = fleet.ledger.hours_table()
    summary = summarise(sc, seed, requests, hours, end_s, fleet, ts)
    return Result(sc, seed, requests, ts, hours, fleet.ledger.log_table(), summary)


def write_partial(exc: BaseException, outdir: str | Path) -> Path | None:
    """Write a failed run's ``partial_result`` (if it has one) under ``outdir/partial``: the
    tables up to the failure, ``summary.json`` with ``partial``, ``stopped_by`` and ``end_s``.
    A sub-folder, so a workflow that removes a failed job's outputs keeps it."""
    res = getattr(exc, "partial_result", None)
    if res is None:
        return None
    return res.write(Path(outdir) / "partial")


@contextlib.contextmanager
def keeping_partial(outdir: str | Path, what: str):
    """Around a command-line run: if it fails, `write_partial` under ``outdir``, say where on
    stderr (``what`` names the run), and let the error go on."""
    try:
        yield
    except BaseException as exc:
        kept = write_partial(exc, outdir)
        if kept is not None:
            print(f"{what} stopped ({type(exc).__name__}); what it simulated is in {kept}/", file=sys.stderr)
        raise


def _run_kernel(kernel: Any, fleet: Fleet, horizon: float, progress: bool, span: float) -> None:
    """Advance the clock to `horizon` or until every request has ended; with `progress`, in
    ~200 chunks of the simulated `span` so a tqdm bar can follow (same events, same order)."""
    if not progress:
        kernel.run(until=horizon)
        return
    from tqdm import tqdm

    chunk = max(span / 200.0, 1e-3)
    with tqdm(total=fleet.n, unit="req", desc="simulate", mininterval=0.5) as bar:
        t = kernel.now
        while not fleet.done and t < horizon and kernel.pending():
            t = min(t + chunk, horizon)
            kernel.run(until=t)
            bar.update(fleet.ended - bar.n)
            bar.set_postfix_str(f"t={t:,.0f}s", refresh=False)
