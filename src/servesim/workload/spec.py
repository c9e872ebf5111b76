"""Workload specs a scenario names, and the request tables they make.

A spec is one of: a request-table file (``file:``), the built-in Poisson generator
(``generator: poisson`` with ``streams``), or a named generator of `servesim.workload.GENERATORS`.
`materialise(spec, rng)` returns the validated request table. Durations are seconds, given as a
number or a string with a unit (``"250ms"``, ``"90s"``, ``"2min"``, ``"1h"``): `parse_duration`,
`Seconds`, `PosSeconds` (also used by the scenario schema and the components it names).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, model_validator

from .schema import MAX_REQUESTS as MAX_POISSON_REQUESTS, MAX_TOKENS, WorkloadError, make, read, validate

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


# finite: an infinite horizon, lead time or period would run (or sample) without end
Seconds = Annotated[float, BeforeValidator(parse_duration), Field(ge=0, allow_inf_nan=False)]
PosSeconds = Annotated[float, BeforeValidator(parse_duration), Field(gt=0, allow_inf_nan=False)]



class Strict(BaseModel):
    """A frozen config model that rejects unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class TokenDist(Strict):
    """Token counts: lognormal with this mean and coefficient of variation (cv=0: constant),
    rounded and clipped to [min, max]."""

    mean: float = Field(gt=0, allow_inf_nan=False)
    cv: float = Field(0.0, ge=0, allow_inf_nan=False)
    min: int = Field(1, ge=0)
    max: int = Field(1_000_000, ge=1, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _ordered(self):
        if self.min > self.max:
            raise ValueError(f"min={self.min} is above max={self.max}")
        if not self.min <= self.mean <= self.max:
            raise ValueError(f"mean={self.mean:g} is outside [min, max] = [{self.min}, {self.max}]")
        return self

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
    rate_rps: float = Field(gt=0, allow_inf_nan=False)
    #: optional piecewise-constant rate: [[start_s, rate_rps], ...] overriding rate_rps from start_s
    steps: list[tuple[Seconds, Annotated[float, Field(ge=0, allow_inf_nan=False)]]] = []
    prompt_tokens: TokenDist
    output_tokens: TokenDist
    #: deadline offset: the workload's absolute ``deadline_s`` = arrival + this (the TTFT
    #: deadline for IW tiers, the completion deadline for NIW); None: no deadline
    deadline_after_s: PosSeconds | None = None


class GeneratedWorkload(Strict):
    generator: Literal["poisson"]
    duration_s: PosSeconds
    streams: list[Stream] = Field(min_length=1)

    @model_validator(mode="after")
    def _bounded(self):
        """The expected number of arrivals, before any is drawn: a typo cannot allocate without bound."""
        n = sum(_expected_arrivals(s, self.duration_s) for s in self.streams)
        if n > MAX_POISSON_REQUESTS:
            raise ValueError(f"streams over duration_s={self.duration_s:g} s would make about {n:.3g} requests "
                             f"(at most {MAX_POISSON_REQUESTS:,}); lower rate_rps/steps or duration_s")
        return self


def _expected_arrivals(s: Stream, duration: float) -> float:
    bounds = [(0.0, s.rate_rps)] + sorted((float(a), float(b)) for a, b in s.steps)
    total = 0.0
    for j, (t0, rate) in enumerate(bounds):
        t1 = min(bounds[j + 1][0] if j + 1 < len(bounds) else duration, duration)
        total += rate * max(0.0, t1 - t0)
    return total


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
    scale: float = Field(1.0, gt=0, allow_inf_nan=False)
    options: dict[str, Any] = {}
    until_s: PosSeconds | None = None
    limit: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _known(self):
        from . import GENERATORS

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
WorkloadSpec = Annotated[
    Annotated[FileWorkload, Tag("file")] | Annotated[GeneratedWorkload, Tag("poisson")]
    | Annotated[NamedGenerator, Tag("named")],
    Discriminator(_workload_kind),
]


def materialise(spec: WorkloadSpec, rng: np.random.Generator, base_dir: str | Path = ".",
                name: str = "workload") -> pd.DataFrame:
    """The request table ``spec`` describes (validated against the workload schema). A relative
    file path is taken from ``base_dir``; ``name`` tags generated tables. Bad input raises
    `WorkloadError` naming the key (``workload.file: ...``)."""
    if isinstance(spec, FileWorkload):
        p = Path(spec.file)
        if not p.is_absolute():
            p = Path(base_dir) / p
        try:
            df = read(p)  # validated, rows in arrival order
            if len(df) == 0:  # a header without rows: nothing to simulate is an input error, not a 0-request run
                raise WorkloadError(f"{p}: no requests (the table has no rows)")
            return df if spec.limit is None else df.iloc[: spec.limit]  # the first `limit` arrivals
        except WorkloadError as exc:
            raise WorkloadError(f"workload.file: {exc}") from None
    if isinstance(spec, NamedGenerator):
        from . import generate

        try:
            df = generate(spec.generator, scale=spec.scale, seed=int(rng.integers(2**31)), **spec.options)
        except TypeError as exc:
            raise WorkloadError(f"workload.options: {exc}") from None
        except WorkloadError as exc:
            raise WorkloadError(f"workload (generator {spec.generator}): {exc}") from None
        if spec.until_s is not None:
            df = df[df["arrival_s"] < spec.until_s]
        if spec.limit is not None:
            df = df.iloc[: spec.limit]
        return validate(df.reset_index(drop=True), f"workload generator {spec.generator}")
    parts = []
    for s, srng in zip(spec.streams, (np.random.default_rng(x) for x in
                                      np.random.SeedSequence(int(rng.integers(2**63))).spawn(len(spec.streams)))):
        t = _poisson_times(srng, s, spec.duration_s)
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
                app=df["app"].to_numpy(), deadline_s=df["deadline_s"].to_numpy(), source=f"{name}:generator")


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


__all__ = ["FileWorkload", "GeneratedWorkload", "NamedGenerator", "PosSeconds", "Seconds", "Stream", "Strict",
           "TokenDist", "WorkloadSpec", "materialise", "parse_duration"]
