"""Typed, validated scenario files for `servesim simulate`.

A scenario names the workload (a request-table file or a generator: `servesim.workload.spec`;
optional when the caller passes the request table), the fleet (regions, network latency, models
with their engine and step-time settings, endpoints), the routers and the autoscaler. Every
section forbids unknown keys; durations are seconds, given as a number or a string with a unit
(``"250ms"``, ``"90s"``, ``"2min"``, ``"1h"``). Errors are raised as `ScenarioError` with one
line per problem naming the key path, e.g.
``endpoints.1.instances: Input should be greater than or equal to 0``.

Components are named by registry name (`servesim.registry`): ``router``, ``global_router`` and
``autoscaler`` are ``{name: <name>, <option>: <value>, ...}``, the options checked by the
component; ``models.<m>.engine.policy`` and ``models.<m>.step_time.backend`` name a scheduler and
a step-time backend. ``plugins`` lists the user's files (or modules) that register more
components; they are imported before validation (docs/extending.md). ``frontend`` puts each
instance's API server in front of it as a queue (`servesim.sim.frontend`): its costs, or a
``frontend.json`` measured by ``servesim engine-frontend``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, StrictBool, Tag, ValidationError, model_validator

from ..errors import InputError
from ..registry import pydantic_message
from ..workload.schema import WorkloadError
from ..workload.spec import (  # noqa: F401 - re-exported: the schema's names from before the move
    FileWorkload,
    GeneratedWorkload,
    NamedGenerator,
    PosSeconds,
    Seconds,
    Stream,
    Strict,
    TokenDist,
    WorkloadSpec,
    materialise,
    parse_duration,
)

class ScenarioError(InputError):
    """Invalid scenario; the message has one line per problem, each naming its key path."""


# ---------------------------------------------------------------- fleet
class StepTimeCfg(Strict):
    """Engine iteration time model. ``backend: linear`` = `servesim.perf.LinearStepTime`."""

    backend: Literal["linear"] = "linear"
    c0: float = Field(5e-3, ge=0, allow_inf_nan=False)
    c_pt: float = Field(1e-4, ge=0, allow_inf_nan=False)
    c_pc: float = Field(0.0, ge=0, allow_inf_nan=False)
    c_ds: float = Field(2e-5, ge=0, allow_inf_nan=False)
    c_dc: float = Field(1e-8, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _positive(self):
        """Every non-empty batch takes time: a 0 s step would stall the simulation clock."""
        if not (self.c0 > 0 or (self.c_pt > 0 and (self.c_ds > 0 or self.c_dc > 0))):
            raise ValueError("a non-empty batch would take 0 s: set c0 > 0 (or both c_pt and c_ds/c_dc > 0)")
        return self

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
    #: the waiting queue's order (`servesim.sim.queue_orders`: ``{name: dpa, tau_p_s: 1.0, ...}``);
    #: None: the policy's own (arrival order)
    queue_order: dict | None = None
    kv_capacity_tokens: int = Field(gt=0)
    block_size: int = Field(16, ge=1)
    max_num_seqs: int = Field(256, ge=1)
    max_num_batched_tokens: int | None = Field(8192, ge=1)  # None: no token cap (orca only)
    max_model_len: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _sim_accepts(self):
        if self.block_size > self.kv_capacity_tokens:  # was rounded up to one block, silently
            raise ValueError(f"block_size={self.block_size} is larger than kv_capacity_tokens="
                             f"{self.kv_capacity_tokens}: not one whole KV block fits; lower block_size or raise "
                             f"kv_capacity_tokens")
        try:
            self.instance_config("default")
        except ValueError as exc:
            raise ValueError(str(exc).replace("InstanceConfig.", "")) from None
        return self

    def instance_config(self, model: str):
        """The `servesim.sim.InstanceConfig` of one replica serving ``model``."""
        from ..sim import InstanceConfig

        order = dict(self.queue_order or {})
        name = order.pop("name", None)
        if self.queue_order is not None and name is None:
            raise ValueError("queue_order needs a name (a registered queue order: "
                             "servesim.sim.queue_orders)")
        return InstanceConfig(num_blocks=max(1, self.kv_capacity_tokens // self.block_size), block_size=self.block_size,
                              max_num_seqs=self.max_num_seqs, max_num_batched_tokens=self.max_num_batched_tokens,
                              max_model_len=self.max_model_len, policy=self.policy, queue_order=name,
                              queue_order_options=order, model=model)


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


class ComponentCfg(BaseModel):
    """A registered component named by ``name``; every other key is one of its options, checked
    by the component itself when the scenario is validated (`servesim.registry.Registry.create`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class RouterCfg(ComponentCfg):
    """An endpoint router of `servesim.sim.routers.ROUTERS`."""

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


class GlobalRouterCfg(ComponentCfg):
    """A global router of `servesim.policies.GLOBAL_ROUTERS` (``local``, ``preference``, ...)."""

    name: str = "local"


class AutoscalerCfg(ComponentCfg):
    """A periodic control actor of `servesim.policies.CONTROLLERS` (``reactive``, ...)."""


class FrontEndCfg(Strict):
    """Each instance's API server as a queue (`servesim.sim.frontend`): its service times in
    seconds, or ``profile``, a ``frontend.json`` measured by ``servesim engine-frontend`` (a path
    relative to the scenario's folder); not both."""

    profile: str | None = None
    request_s: float | None = Field(None, ge=0, allow_inf_nan=False)
    prompt_token_s: float | None = Field(None, ge=0, allow_inf_nan=False)
    output_token_s: float | None = Field(None, ge=0, allow_inf_nan=False)
    #: fixed-point passes at most (engine side, then the queues) before the run says it did not settle
    max_passes: int = Field(8, ge=1, le=100)

    @model_validator(mode="after")
    def _one_source(self):
        costs = [self.request_s, self.prompt_token_s, self.output_token_s]
        if self.profile is not None and any(c is not None for c in costs):
            raise ValueError("give either profile or the costs (request_s, prompt_token_s, output_token_s), not both")
        if self.profile is None and all(c is None for c in costs):
            raise ValueError("give profile or at least one of request_s, prompt_token_s, output_token_s")
        return self

    def build(self, base_dir: str | Path = "."):
        from ..sim.frontend import FrontEnd

        if self.profile is not None:
            path = Path(self.profile) if Path(self.profile).is_absolute() else Path(base_dir) / self.profile
            return FrontEnd.from_json(path)
        return FrontEnd(request_s=self.request_s or 0.0, prompt_token_s=self.prompt_token_s or 0.0,
                        output_token_s=self.output_token_s or 0.0, source="scenario")


class OutputCfg(Strict):
    sample_s: PosSeconds = 10.0
    window_s: PosSeconds = 60.0  # look-back for arrival rates that actors see
    #: without duration_s, stop this long after the last arrival even if requests remain
    drain_limit_s: PosSeconds = 86400.0


class Scenario(Strict):
    """A whole simulation: see the module docstring and `examples/scenarios/`."""

    name: str
    seed: int = Field(0, ge=0)
    duration_s: PosSeconds | None = None  # stop here; None = when every request has ended
    #: None: the caller passes the request table (``run_scenario(sc, workload=df)``)
    workload: WorkloadSpec | None = None
    #: Python files (relative to the scenario's folder) or module names imported before the
    #: scenario is validated: where a user's own registered components live
    plugins: list[str] = []
    regions: list[RegionCfg] = Field(min_length=1)
    latency_s: dict[str, dict[str, Seconds]] = {}
    models: dict[str, ModelCfg] = Field(min_length=1)
    endpoints: list[EndpointCfg] = Field(min_length=1)
    router: RouterCfg = RouterCfg()
    global_router: GlobalRouterCfg = GlobalRouterCfg()
    autoscaler: AutoscalerCfg | None = None
    scale_in_to: Literal["release", "pool"] = "release"
    #: a draining instance hands its not-yet-admitted requests back for re-routing
    requeue_on_drain: StrictBool = True
    #: tiers whose requests end ``timeout`` (with a reason) when their ``deadline_s`` passes
    #: while they still wait: deferred, at/to their endpoint, or queued in an engine and never
    #: admitted to a batch (started requests run on). Empty (default): deadlines are reported only.
    enforce_deadlines: list[Literal["IW-F", "IW-N", "NIW"]] = []
    #: a scale-up may convert a pooled instance of another model (state ``converting``)
    pool_conversions: StrictBool = True
    #: servesim.sim Instance mode: "fast" (decode runs in one event) or "reference" (per iteration)
    mode: Literal["fast", "reference"] = "fast"
    #: every instance's API server as a queue in front of it (None: requests reach the engine on arrival)
    frontend: FrontEndCfg | None = None
    output: OutputCfg = OutputCfg()
    #: folder that relative workload paths resolve against (set by `load_scenario`)
    base_dir: str = "."
    _source: str = PrivateAttr("")

    @property
    def source(self) -> str:
        """The file (or label) the scenario was read from, for error messages ("" if built in code)."""
        return self._source

    @model_validator(mode="after")
    def _cross_refs(self):
        from ..policies.registry import CONTROLLERS, GLOBAL_ROUTERS
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
            if ep.router is not None:
                _check_component(errs, ROUTERS, ep.router, f"endpoints.{i}.router", {"rng": None})
        _check_component(errs, ROUTERS, self.router, "router", {"rng": None})
        _check_component(errs, GLOBAL_ROUTERS, self.global_router, "global_router")
        if self.autoscaler is not None:
            _check_component(errs, CONTROLLERS, self.autoscaler, "autoscaler")
        for name, m in self.models.items():
            try:
                m.build_step_time(name)
            except (ValueError, KeyError, TypeError, OSError, yaml.YAMLError) as exc:  # a model file that is not YAML too
                errs.append(f"models.{name}.step_time: {' '.join(str(exc).split())}")
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

        prefs_of = self.global_router.options().get("preferences")
        for src, prefs in (prefs_of.items() if isinstance(prefs_of, dict) else ()):
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


def _check_component(errs: list[str], registry: Any, cfg: ComponentCfg, where: str,
                     context: dict[str, Any] | None = None) -> None:
    """Append the errors of naming ``cfg`` at key path ``where``: an unknown name, bad options."""
    from ..registry import OptionsError

    if cfg.name not in registry:
        errs.append(f"{where}.name: unknown {registry.kind} {cfg.name!r}; known: {registry.names()}")
        return
    try:
        registry.create(cfg.name, cfg.options(), where=where, context=context)
    except OptionsError as exc:
        errs.extend(str(exc).split("\n"))


def _format(exc: ValidationError, source: str) -> str:
    lines = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"])
        msg = pydantic_message(e, unknown="unknown key (not allowed here)")
        # the workload union's tag (file / generator) is not a key: drop it from the path
        loc = re.sub(r"^workload\.(file|poisson|named)\b", "workload", loc)
        loc = re.sub(r"\.step_time\.(linear|other)\b", ".step_time", loc)
        for part in msg.split("\n"):
            lines.append(f"{source}: {loc}: {part}" if loc else f"{source}: {part}")
    return "\n".join(lines)


def load_plugins(entries: Any, base_dir: str | Path = ".", source: str = "<scenario>") -> None:
    """Import a scenario's ``plugins``: ``*.py`` files (relative to ``base_dir``) or module names.
    Their ``@register_...`` decorators add the user's components to the registries. A file is
    imported once per process (its module name is derived from its resolved path)."""
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise ScenarioError(f"{source}: plugins: a list of Python files or module names, got {entries!r}")
    for i, entry in enumerate(entries):
        try:
            if entry.endswith(".py") or "/" in entry or "\\" in entry:
                path = Path(entry) if Path(entry).is_absolute() else Path(base_dir) / entry
                path = path.resolve()
                if not path.is_file():
                    raise ScenarioError(f"{source}: plugins.{i}: {path} does not exist")
                stem = re.sub(r"\W", "_", path.stem)
                name = f"servesim_plugin_{stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
                if name in sys.modules:
                    continue
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
            else:
                importlib.import_module(entry)
        except ScenarioError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the user's code, named by its key
            raise ScenarioError(f"{source}: plugins.{i}: importing {entry!r} failed: "
                                f"{type(exc).__name__}: {exc}") from exc


def parse_scenario(data: dict, source: str = "<scenario>", base_dir: str | Path = ".") -> Scenario:
    """Validate a scenario given as a dict (e.g. parsed YAML)."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a mapping of keys, got {type(data).__name__}")
    load_plugins(data.get("plugins") or [], base_dir, source)
    data = {**data, "base_dir": str(base_dir)}
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_format(exc, source)) from None
    sc._source = source if source != "<scenario>" else ""
    return sc


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file."""
    path = Path(path)
    from servesim._yaml import StrictYAMLError, strict_yaml_load

    try:
        data = strict_yaml_load(path.read_text(encoding="utf-8-sig"), source=str(path))  # duplicate keys are errors too
    except StrictYAMLError as exc:
        raise ScenarioError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_scenario(data, str(path), path.parent)


# ---------------------------------------------------------------- workload materialisation
def build_workload(sc: Scenario, rng: np.random.Generator) -> pd.DataFrame:
    """The scenario's request table (`servesim.workload.spec.materialise` of its ``workload``)."""
    if sc.workload is None:
        raise ScenarioError(f"scenario {sc.name!r} has no workload: name one (key workload) or pass the "
                            "request table to run_scenario(workload=...)")
    try:
        return materialise(sc.workload, rng, sc.base_dir, sc.name)
    except WorkloadError as exc:
        raise ScenarioError(str(exc)) from None


def check_workload_names(sc: Scenario, df: pd.DataFrame) -> None:
    """Every request's model must be one of ``models`` and its region one of ``regions``: a request
    nothing can serve is a typo in the table or the scenario, not a rejected request to report."""
    for col, known in (("model", set(sc.models)), ("region", {r.name for r in sc.regions})):
        bad = ~df[col].isin(sorted(known)).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            names = sorted(set(df[col][bad].astype(str)))
            raise ScenarioError(f"workload row {i}: {col} {df[col].iloc[i]!r} is not in the scenario's "
                                f"{col}s {sorted(known)} ({int(bad.sum())} row(s), {col}(s) {names[:5]})")


__all__ = ["Scenario", "ScenarioError", "build_workload", "check_workload_names", "load_plugins", "load_scenario", "parse_duration",
           "parse_scenario"]
