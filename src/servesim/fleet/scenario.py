"""Typed, validated scenario files for `servesim simulate`.

A scenario names the workload (a request-table file or a generator), the fleet (regions,
network latency, models with their engine and step-time settings, endpoints), the routers and
the autoscaler. Every section forbids unknown keys; durations are seconds, given as a number
or a string with a unit (``"250ms"``, ``"90s"``, ``"2min"``, ``"1h"``). Errors are raised as
`ScenarioError` with one line per problem naming the key path, e.g.
``endpoints.1.instances: Input should be greater than or equal to 0``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from ..workload.schema import WorkloadError, make, validate

_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0, "hr": 3600.0, "d": 86400.0}
_DUR = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_duration(v: Any) -> Any:
    """Number -> seconds as is; "<number><unit>" -> seconds; anything else is left to fail."""
    if isinstance(v, str):
        m = _DUR.match(v)
        if not m:
            raise ValueError(f"not a duration: {v!r} (use a number of seconds or e.g. '90s', '2min', '1h')")
        num, unit = float(m.group(1)), (m.group(2) or "s").lower()
        if unit not in _UNITS:
            raise ValueError(f"unknown time unit {unit!r} in {v!r}; use one of {sorted(_UNITS)}")
        return num * _UNITS[unit]
    if isinstance(v, bool):
        raise ValueError("a duration cannot be a boolean")  # noqa: TRY004 (pydantic reports ValueError)
    return v


Seconds = Annotated[float, BeforeValidator(parse_duration), Field(ge=0)]
PosSeconds = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]


class ScenarioError(ValueError):
    """Invalid scenario; the message has one line per problem, each naming its key path."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- workload
class TokenDist(Strict):
    """Token counts: lognormal with this mean and coefficient of variation (cv=0: constant),
    rounded and clipped to [min, max]."""

    mean: float = Field(gt=0)
    cv: float = Field(0.0, ge=0)
    min: int = Field(1, ge=0)
    max: int = Field(1_000_000, ge=1)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.cv == 0:
            x = np.full(n, self.mean)
        else:
            s2 = np.log1p(self.cv**2)
            x = rng.lognormal(np.log(self.mean) - s2 / 2, np.sqrt(s2), n)
        return np.clip(np.rint(x), self.min, self.max).astype(np.int64)


class Stream(Strict):
    """One Poisson request stream (optionally with a rate that changes at given times)."""

    model: str
    region: str
    tier: Literal["IW-F", "IW-N", "NIW"] = "IW-F"
    app: str = "default"
    rate_rps: float = Field(gt=0)
    #: optional piecewise-constant rate: [[start_s, rate_rps], ...] overriding rate_rps from start_s
    steps: list[tuple[Seconds, Annotated[float, Field(ge=0)]]] = []
    prompt_tokens: TokenDist
    output_tokens: TokenDist
    #: deadline offset: the workload's absolute ``deadline_s`` = arrival + this (the TTFT
    #: deadline for IW tiers, the completion deadline for NIW); None: no deadline
    deadline_after_s: PosSeconds | None = None


class GeneratedWorkload(Strict):
    generator: Literal["poisson"]
    duration_s: PosSeconds
    streams: list[Stream] = Field(min_length=1)


class FileWorkload(Strict):
    """A request table (Parquet or CSV) in `servesim.workload.schema` form; a relative path is
    taken from the scenario file's folder."""

    file: str
    limit: int | None = Field(None, ge=1)  # first N requests only


class NamedGenerator(Strict):
    """One of `servesim.workload.GENERATORS` (the papers' calibrated workloads), called as
    ``generate(generator, scale, seed, **options)``; ``until_s`` keeps only arrivals before it
    (e.g. the first day of a generated week)."""

    generator: str
    scale: float = Field(1.0, gt=0)
    options: dict[str, Any] = {}
    until_s: PosSeconds | None = None
    limit: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _known(self):
        from ..workload import GENERATORS

        if self.generator not in GENERATORS:
            raise ValueError(f"unknown generator {self.generator!r}; known: ['poisson'] + {sorted(GENERATORS)}")
        return self


def _workload_kind(v: Any) -> str:
    if isinstance(v, dict):
        if "file" in v:
            return "file"
        return "poisson" if v.get("generator") == "poisson" else "named"
    return {FileWorkload: "file", GeneratedWorkload: "poisson"}.get(type(v), "named")


#: a file (key ``file``), the built-in Poisson generator (``generator: poisson``) or a named
#: workload generator; tagged so errors name one branch
Workload = Annotated[
    Annotated[FileWorkload, Tag("file")] | Annotated[GeneratedWorkload, Tag("poisson")]
    | Annotated[NamedGenerator, Tag("named")],
    Discriminator(_workload_kind),
]


# ---------------------------------------------------------------- fleet
class StepTimeCfg(Strict):
    """Engine iteration time model. ``backend: linear`` = `servesim.perf.LinearStepTime`."""

    backend: Literal["linear"] = "linear"
    c0: float = Field(5e-3, ge=0)
    c_pt: float = Field(1e-4, ge=0)
    c_pc: float = Field(0.0, ge=0)
    c_ds: float = Field(2e-5, ge=0)
    c_dc: float = Field(1e-8, ge=0)

    def build(self):
        from ..perf import LinearStepTime

        return LinearStepTime(c0=self.c0, c_pt=self.c_pt, c_pc=self.c_pc, c_ds=self.c_ds, c_dc=self.c_dc)


class BackendCfg(BaseModel):
    """Any other `servesim.perf` backend: ``backend: <name>`` plus that backend's options
    (roofline, fitted, table, splitwise, aegaeon, vidur, file; see `servesim.perf.registry`).
    Options are checked by `servesim.perf.build` when the scenario is validated."""

    model_config = ConfigDict(extra="allow", frozen=True)

    backend: str

    def spec(self) -> dict[str, Any]:
        return {"backend": self.backend, **(self.model_extra or {})}


def _step_kind(v: Any) -> str:
    if isinstance(v, dict):
        return "linear" if v.get("backend", "linear") == "linear" else "other"
    return "linear" if isinstance(v, StepTimeCfg) else "other"


#: the typed linear model, or any registered perf backend by name
StepTime = Annotated[Annotated[StepTimeCfg, Tag("linear")] | Annotated[BackendCfg, Tag("other")],
                     Discriminator(_step_kind)]


class EngineCfg(Strict):
    """One replica's scheduler (`servesim.sim.schedulers` policy), limits (vLLM names) and KV
    capacity (rounded down to whole blocks)."""

    policy: str = "vllm-v1"
    kv_capacity_tokens: int = Field(gt=0)
    block_size: int = Field(16, ge=1)
    max_num_seqs: int = Field(256, ge=1)
    max_num_batched_tokens: int | None = Field(8192, ge=1)  # None: no token cap (orca only)
    max_model_len: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _sim_accepts(self):
        from ..sim import InstanceConfig

        try:
            InstanceConfig(num_blocks=max(1, self.kv_capacity_tokens // self.block_size), block_size=self.block_size,
                           max_num_seqs=self.max_num_seqs, max_num_batched_tokens=self.max_num_batched_tokens,
                           max_model_len=self.max_model_len, policy=self.policy)
        except ValueError as exc:
            raise ValueError(str(exc).replace("InstanceConfig.", "")) from None
        return self


class LeadCfg(Strict):
    request_s: Seconds = 0.0
    provision_s: Seconds = 60.0
    load_s: Seconds = 120.0
    reclaim_s: Seconds = 60.0
    #: switching an instance from another model to this one (weights local); None: load_s
    convert_s: Seconds | None = None


class ModelCfg(Strict):
    """One model's replica: engine limits, step-time model, lead times. ``catalog`` is the
    `servesim.catalog` model key the step-time backend uses (default: the model's name);
    ``hardware``/``tp``/``pp`` the replica's shape (needed by roofline/table backends)."""

    engine: EngineCfg
    step_time: StepTime = StepTimeCfg()
    lead: LeadCfg = LeadCfg()
    catalog: str | None = None
    hardware: str | None = None
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)

    def build_step_time(self, name: str):
        """The `servesim.perf.StepTimeModel` for model `name` (cached per config)."""
        if isinstance(self.step_time, StepTimeCfg):
            return self.step_time.build()
        from ..perf import build

        key = (name, repr(sorted(self.step_time.spec().items())), self.catalog, self.hardware, self.tp, self.pp)
        if key not in _STEP_CACHE:
            _STEP_CACHE[key] = build(self.step_time.spec(), model=self.catalog or name, hardware=self.hardware,
                                     tp=self.tp, pp=self.pp)
        return _STEP_CACHE[key]


#: built backends (tables and profiles are read once per process)
_STEP_CACHE: dict[tuple, Any] = {}


class RouterCfg(Strict):
    name: str = "jsq-tokens"


class EndpointCfg(Strict):
    model: str
    region: str
    instances: int = Field(1, ge=0)
    min_instances: int = Field(0, ge=0)
    max_instances: int | None = Field(None, ge=0)
    router: RouterCfg | None = None  # default: the scenario's router


class RegionCfg(Strict):
    name: str
    capacity: int | None = Field(None, ge=0)  # instances held (billed + pooled); None = unlimited
    pool: dict[str, Annotated[int, Field(ge=0)]] = {}  # model -> pooled instances at time 0


class GlobalRouterCfg(Strict):
    name: Literal["local", "preference"] = "local"
    preferences: dict[str, list[str]] = {}
    threshold: float = Field(0.7, ge=0, le=1)
    refresh_s: Seconds = 0.0  # 0: live KV readings per request; > 0: reuse a reading this long


class ReactiveCfg(Strict):
    name: Literal["reactive"]
    period_s: PosSeconds = 5.0
    up: float = Field(0.7, ge=0)
    down: float = Field(0.3, ge=0)
    cooldown_s: Seconds = 15.0
    step: int = Field(1, ge=1)
    metric: Literal["kv", "outstanding"] = "kv"
    target_outstanding: float = Field(16.0, gt=0)
    count_starting: bool = True

    @model_validator(mode="after")
    def _thresholds(self):
        if self.down >= self.up:
            raise ValueError(f"down ({self.down}) must be below up ({self.up})")
        return self


class OutputCfg(Strict):
    sample_s: PosSeconds = 10.0
    window_s: PosSeconds = 60.0  # look-back for arrival rates that actors see
    #: without duration_s, stop this long after the last arrival even if requests remain
    drain_limit_s: PosSeconds = 86400.0


class Scenario(Strict):
    """A whole simulation: see the module docstring and `examples/scenarios/`."""

    name: str
    seed: int = 0
    duration_s: PosSeconds | None = None  # stop here; None = when every request has ended
    workload: Workload
    regions: list[RegionCfg] = Field(min_length=1)
    latency_s: dict[str, dict[str, Seconds]] = {}
    models: dict[str, ModelCfg] = Field(min_length=1)
    endpoints: list[EndpointCfg] = Field(min_length=1)
    router: RouterCfg = RouterCfg()
    global_router: GlobalRouterCfg = GlobalRouterCfg()
    autoscaler: ReactiveCfg | None = None
    scale_in_to: Literal["release", "pool"] = "release"
    #: a draining instance hands its not-yet-admitted requests back for re-routing
    requeue_on_drain: bool = True
    #: tiers whose requests end ``timeout`` (with a reason) when their ``deadline_s`` passes
    #: while they still wait: deferred, at/to their endpoint, or queued in an engine and never
    #: admitted to a batch (started requests run on). Empty (default): deadlines are reported only.
    enforce_deadlines: list[Literal["IW-F", "IW-N", "NIW"]] = []
    #: a scale-up may convert a pooled instance of another model (state ``converting``)
    pool_conversions: bool = True
    #: servesim.sim Instance mode: "fast" (decode runs in one event) or "reference" (per iteration)
    mode: Literal["fast", "reference"] = "fast"
    output: OutputCfg = OutputCfg()
    #: folder that relative workload paths resolve against (set by `load_scenario`)
    base_dir: str = "."

    @model_validator(mode="after")
    def _cross_refs(self):
        from ..sim.routers import ROUTERS

        regions = [r.name for r in self.regions]
        errs = []
        if len(set(regions)) != len(regions):
            errs.append(f"regions: duplicate region names {regions}")
        seen = set()
        for i, ep in enumerate(self.endpoints):
            if ep.model not in self.models:
                errs.append(f"endpoints.{i}.model: unknown model {ep.model!r}; known: {sorted(self.models)}")
            if ep.region not in regions:
                errs.append(f"endpoints.{i}.region: unknown region {ep.region!r}; known: {regions}")
            if (ep.model, ep.region) in seen:
                errs.append(f"endpoints.{i}: endpoint ({ep.model}, {ep.region}) given twice")
            seen.add((ep.model, ep.region))
            if ep.max_instances is not None and ep.max_instances < max(ep.min_instances, ep.instances):
                errs.append(f"endpoints.{i}.max_instances: {ep.max_instances} is below instances/min_instances")
            if ep.router is not None and ep.router.name not in ROUTERS:
                errs.append(f"endpoints.{i}.router.name: unknown router {ep.router.name!r}; known: {sorted(ROUTERS)}")
        if self.router.name not in ROUTERS:
            errs.append(f"router.name: unknown router {self.router.name!r}; known: {sorted(ROUTERS)}")
        for name, m in self.models.items():
            try:
                m.build_step_time(name)
            except (ValueError, KeyError, OSError) as exc:
                errs.append(f"models.{name}.step_time: {exc}")
        for i, r in enumerate(self.regions):
            for m in r.pool:
                if m not in self.models:
                    errs.append(f"regions.{i}.pool.{m}: unknown model {m!r}")
        for src, row in self.latency_s.items():
            if src not in regions:
                errs.append(f"latency_s.{src}: unknown region {src!r}; known: {regions}")
            for dst in row:
                if dst not in regions:
                    errs.append(f"latency_s.{src}.{dst}: unknown region {dst!r}; known: {regions}")
        def has_latency(a: str, b: str) -> bool:
            return b in self.latency_s.get(a, {}) or a in self.latency_s.get(b, {})

        for src, prefs in self.global_router.preferences.items():
            for dst in [src] + list(prefs):
                if dst not in regions:
                    errs.append(f"global_router.preferences.{src}: unknown region {dst!r}")
                elif dst != src and not has_latency(src, dst):
                    errs.append(f"latency_s: no latency between {src!r} and {dst!r} "
                                f"(needed by global_router.preferences.{src})")
        for i, r in enumerate(self.regions):
            if r.capacity is not None:
                held = sum(e.instances for e in self.endpoints if e.region == r.name) + sum(r.pool.values())
                if held > r.capacity:
                    errs.append(f"regions.{i}.capacity: {r.capacity} is below the {held} instances "
                                f"the endpoints and pool of {r.name!r} start with")
        if isinstance(self.workload, GeneratedWorkload):
            for i, s in enumerate(self.workload.streams):
                if s.model not in self.models:
                    errs.append(f"workload.streams.{i}.model: unknown model {s.model!r}; known: {sorted(self.models)}")
                if s.region not in regions:
                    errs.append(f"workload.streams.{i}.region: unknown region {s.region!r}; known: {regions}")
        if errs:
            raise ValueError("\n".join(errs))
        return self


def _format(exc: ValidationError, source: str) -> str:
    lines = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key (not allowed here)"
        # the workload union's tag (file / generator) is not a key: drop it from the path
        loc = re.sub(r"^workload\.(file|poisson|named)\b", "workload", loc)
        loc = re.sub(r"\.step_time\.(linear|other)\b", ".step_time", loc)
        for part in msg.split("\n"):
            lines.append(f"{source}: {loc}: {part}" if loc else f"{source}: {part}")
    return "\n".join(lines)


def parse_scenario(data: dict, source: str = "<scenario>", base_dir: str | Path = ".") -> Scenario:
    """Validate a scenario given as a dict (e.g. parsed YAML)."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a mapping of keys, got {type(data).__name__}")
    data = {**data, "base_dir": str(base_dir)}
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_format(exc, source)) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file."""
    path = Path(path)
    from servesim._strict_yaml import StrictYAMLError, load_strict

    try:
        data = load_strict(path.read_text(), source=str(path))  # duplicate keys are errors too
    except StrictYAMLError as exc:
        raise ScenarioError(str(exc)) from None
    return parse_scenario(data, str(path), path.parent)


# ---------------------------------------------------------------- workload materialisation
def build_workload(sc: Scenario, rng: np.random.Generator) -> pd.DataFrame:
    """The scenario's request table (validated against the workload schema)."""
    w = sc.workload
    if isinstance(w, FileWorkload):
        p = Path(w.file)
        if not p.is_absolute():
            p = Path(sc.base_dir) / p
        if not p.exists():
            raise ScenarioError(f"workload.file: {p} does not exist")
        df = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
        if w.limit is not None:
            df = df.iloc[: w.limit]
        try:
            return validate(df, str(p))
        except WorkloadError as exc:
            raise ScenarioError(f"workload.file: {exc}") from None
    if isinstance(w, NamedGenerator):
        from ..workload import generate

        try:
            df = generate(w.generator, scale=w.scale, seed=int(rng.integers(2**31)), **w.options)
        except TypeError as exc:
            raise ScenarioError(f"workload.options: {exc}") from None
        if w.until_s is not None:
            df = df[df["arrival_s"] < w.until_s]
        if w.limit is not None:
            df = df.iloc[: w.limit]
        return validate(df.reset_index(drop=True), f"workload generator {w.generator}")
    parts = []
    for s, srng in zip(w.streams, (np.random.default_rng(x) for x in
                                   np.random.SeedSequence(int(rng.integers(2**63))).spawn(len(w.streams)))):
        t = _poisson_times(srng, s, w.duration_s)
        n = len(t)
        parts.append(pd.DataFrame({
            "arrival_s": t,
            "prompt_tokens": s.prompt_tokens.sample(srng, n),
            "output_tokens": s.output_tokens.sample(srng, n),
            "model": s.model, "region": s.region, "tier": s.tier, "app": s.app,
            "deadline_s": t + (np.nan if s.deadline_after_s is None else s.deadline_after_s),
        }))
    df = pd.concat(parts, ignore_index=True).sort_values("arrival_s", kind="stable").reset_index(drop=True)
    return make(df["arrival_s"].to_numpy(), df["prompt_tokens"].to_numpy(), df["output_tokens"].to_numpy(),
                model=df["model"].to_numpy(), region=df["region"].to_numpy(), tier=df["tier"].to_numpy(),
                app=df["app"].to_numpy(), deadline_s=df["deadline_s"].to_numpy(), source=f"{sc.name}:generator")


def _poisson_times(rng: np.random.Generator, s: Stream, duration: float) -> np.ndarray:
    """Piecewise-constant-rate Poisson arrivals on [0, duration)."""
    bounds = [(0.0, s.rate_rps)] + sorted((float(a), float(b)) for a, b in s.steps)
    out = []
    for j, (t0, rate) in enumerate(bounds):
        t1 = bounds[j + 1][0] if j + 1 < len(bounds) else duration
        t1 = min(t1, duration)
        if rate <= 0 or t1 <= t0:
            continue
        n = rng.poisson(rate * (t1 - t0))
        out.append(np.sort(rng.uniform(t0, t1, n)))
    return np.concatenate(out) if out else np.zeros(0)


__all__ = ["Scenario", "ScenarioError", "build_workload", "load_scenario", "parse_duration", "parse_scenario"]
