"""servesim.workload: the request table (`schema`) and where it comes from.

Loaders (`loaders`, `sharegpt`) read the public trace formats; generators (`gen_sageserve`,
`gen_azure_week`, `gen_oserve`, `gen_aegaeon`) synthesise each paper's workload, calibrated to the
characterisation the paper publishes (targets in each module's docstring). Everything returns the
one validated request table of `schema`; `write` / `read` store it as Parquet.
"""

import numpy as np

from .arrivals import lengths_to_poisson
from .gen_azure_week import azure_week
from .gen_sageserve import sageserve_week
from .loaders import load_aegaeon, load_azure, load_azure_2023, load_azure_2024, load_sageserve
from .schema import COLUMNS, MAX_DAYS, MAX_REQUESTS, TIERS, WorkloadError, make, read, validate, write
from .sharegpt import iter_conversations, load_sharegpt

__all__ = ["COLUMNS", "TIERS", "WorkloadError", "make", "validate", "write", "read",
           "load_azure", "load_azure_2023", "load_azure_2024", "load_aegaeon", "load_sageserve", "load_sharegpt",
           "iter_conversations", "lengths_to_poisson", "sageserve_week", "azure_week", "generate", "check_generate",
           "GENERATORS", "MAX_REQUESTS"]


def _oserve(level: str = "trace-T1", scale: float = 1.0, seed: int = 0, **kw):
    """OServe: ``S1``-``S5`` (Table 1), ``T1``-``T4`` (Table 2), ``trace-T1`` / ``trace-T2`` (the traces)."""
    from . import gen_oserve as o

    rate = kw.pop("rate_rps", 5.0) * scale
    if level in o.SPATIAL:
        return o.spatial(level, rate, seed=seed, **kw)
    if level in o.TEMPORAL:
        return o.temporal(level, rate, seed=seed, **kw)
    if level.startswith("trace-"):
        return o.trace(level[len("trace-"):], rate, seed=seed, **kw)
    raise WorkloadError(f"oserve: level={level!r}; expected S1-S5, T1-T4, trace-T1 or trace-T2")


def _aegaeon(scale: float = 1.0, seed: int = 0, **kw):
    from .gen_aegaeon import market

    kw.setdefault("duration_s", 60.0 * scale)
    return market(seed=seed, **kw)


#: name -> callable(scale=..., seed=..., **options) returning a request table (the CLI's generators)
GENERATORS = {
    "sageserve_week": lambda scale=1.0, seed=0, **kw: sageserve_week(scale, seed, **kw),
    "azure_code_week": lambda scale=1.0, seed=0, **kw: azure_week("code", scale, seed, **kw),
    "azure_conv_week": lambda scale=1.0, seed=0, **kw: azure_week("conv", scale, seed, **kw),
    "oserve": _oserve,
    "aegaeon_market": _aegaeon,
}


def _inner_params(name: str) -> dict:
    """Keyword parameters (with defaults) of the function behind a named generator."""
    import inspect

    from . import gen_aegaeon, gen_oserve

    funcs = {"sageserve_week": [sageserve_week], "azure_code_week": [azure_week], "azure_conv_week": [azure_week],
             "oserve": [gen_oserve.trace, gen_oserve.spatial, gen_oserve.temporal],
             "aegaeon_market": [gen_aegaeon.market]}[name]
    out = {}
    for f in [GENERATORS[name], *funcs]:
        out.update({k: p.default for k, p in inspect.signature(f).parameters.items()
                    if p.default is not inspect.Parameter.empty})
    return out


def _expected_requests(name: str, scale: float, opt: dict) -> float:
    """An upper estimate of how many requests ``generate(name, scale, **opt)`` makes."""
    if name == "sageserve_week":
        extra = 1 + float(opt.get("fifth_model_share", 1.0)) if opt.get("fifth_model") else 1
        burst = 1 + (float(opt.get("burst_factor", 8.0)) - 1) * float(opt.get("burst_len_s", 60.0)) / 3600 \
            if opt.get("bursts") is True else 1
        return (float(opt.get("total_requests", 7.2e6)) * scale * float(opt.get("growth", 1.0))
                * float(opt.get("days", 7)) / 7 * extra * burst)
    if name.startswith("azure_"):
        return 3e7 * scale * float(opt.get("days", 7)) / 7  # the 2024 week files hold < 3e7 rows
    if name == "oserve":
        minutes = max(80.0, float(opt.get("minutes", 10)), 3 * float(opt.get("span_minutes", 10)))
        return float(opt.get("rate_rps", 5.0)) * scale * minutes * 60 * 2  # x2: the per-minute shape peaks
    if name == "aegaeon_market":
        dur = float(opt.get("duration_s", 60.0 * scale))
        rates = opt.get("rates")
        total = float(np.sum(np.asarray(rates, float))) if rates is not None else \
            float(opt.get("n_models", 16)) * float(opt.get("rate", 0.1))
        return total * dur * 2
    return 0.0


def check_generate(name: str, scale: float, seed, options: dict) -> None:
    """Validate a generator call before it runs (WorkloadError naming the option): a known name, a
    finite scale > 0, a seed >= 0, numeric options finite (and >= 0 where the default is), whole
    numbers where the default is an integer, a span of at most MAX_DAYS and at most MAX_REQUESTS."""
    import math
    import numbers

    if name not in GENERATORS:
        raise WorkloadError(f"unknown generator {name!r}; known: {sorted(GENERATORS)}")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not (0 < scale < math.inf):
        raise WorkloadError(f"{name}: scale={scale!r} must be a finite number > 0")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise WorkloadError(f"{name}: seed={seed!r} must be an integer >= 0")
    defaults = _inner_params(name)
    unknown = sorted(set(options) - set(defaults) - {"scale", "seed"})
    if unknown:
        raise WorkloadError(f"{name}: unknown option(s) {unknown}; known: {sorted(set(defaults) - {'scale', 'seed'})}")
    for key, v in options.items():
        d = defaults.get(key)
        numeric_default = isinstance(d, numbers.Real) and not isinstance(d, bool)
        if numeric_default and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise WorkloadError(f"{name}: option {key}={v!r} must be a number")
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            continue
        if not math.isfinite(v):
            raise WorkloadError(f"{name}: option {key}={v!r} must be finite")
        if numeric_default and d >= 0 and v < 0:
            raise WorkloadError(f"{name}: option {key}={v!r} must be >= 0")
        if isinstance(d, numbers.Integral) and not isinstance(d, bool) and v != int(v):
            raise WorkloadError(f"{name}: option {key}={v!r} must be a whole number")
    span_days = max(float(options.get("days", 0) or 0), float(options.get("duration_s", 0) or 0) / 86400,
                    float(options.get("minutes", 0) or 0) / 1440, 3 * float(options.get("span_minutes", 0) or 0) / 1440)
    if name == "aegaeon_market" and "duration_s" not in options:
        span_days = max(span_days, 60.0 * scale / 86400)
    if span_days > MAX_DAYS:
        raise WorkloadError(f"{name}: a span of {span_days:.3g} days (options {options}, scale {scale:g}) is over "
                            f"the {MAX_DAYS} days a generator may cover")
    try:
        n = _expected_requests(name, scale, options)
    except (TypeError, ValueError):
        return  # an option of the wrong type: the generator names it
    if not n <= MAX_REQUESTS:
        raise WorkloadError(f"{name}: scale {scale:g} with options {options} would make about {n:.3g} requests "
                            f"(at most {MAX_REQUESTS:,}); lower scale or the rate/volume options")


def generate(name: str, scale: float = 1.0, seed: int = 0, **options):
    """Run a generator by name (see ``GENERATORS``), after :func:`check_generate`."""
    if name not in GENERATORS:
        raise WorkloadError(f"unknown generator {name!r}; known: {sorted(GENERATORS)}")
    options = _typed_booleans(name, options)
    check_generate(name, scale, seed, options)
    df = GENERATORS[name](scale=scale, seed=seed, **options)
    if len(df) == 0:  # an empty workload simulates nothing and reads as a result: an error, not 0 rows
        raise WorkloadError(_no_requests(name, scale, seed, options))
    return df


def _no_requests(name: str, scale: float, seed: int, options: dict) -> str:
    """Why a generator call made no requests, and which scale makes some (where it is known)."""
    import math

    head = f"{name}: scale {scale:g} (seed {seed}{f', options {options}' if options else ''}) leaves no requests"
    if name == "aegaeon_market" and options.get("arrivals", "ae") == "ae":
        rates = options.get("rates")
        top = float(np.max(np.asarray(rates, float))) if rates is not None else float(options.get("rate", 0.1))
        if top <= 0:
            return f"{head}: every model's rate is 0"
        if "duration_s" in options:
            dur = float(options["duration_s"])
            if dur * top < 1:  # each model gets floor(duration_s * rate) arrivals
                return (f"{head}: duration_s={dur:g} s times the highest rate {top:g}/s is under one request; "
                        f"duration_s >= {1 / top:.3g} s gives some")
        elif 60.0 * scale * top < 1:
            need = math.ceil(1000 / (60.0 * top)) / 1000  # the smallest scale with one arrival, rounded up
            return (f"{head}: the market spans 60 s x scale = {60.0 * scale:g} s, under one request at the highest "
                    f"rate {top:g}/s; scale >= {need:g} gives some")
    return f"{head}; a larger scale (or larger rate or volume options) gives some"


def _typed_booleans(name: str, options: dict) -> dict:
    """Options whose default is a bool must be booleans (``bursts: maybe`` is an error, not truthy)."""
    from servesim._yaml import StrictYAMLError, parse_bool

    defaults = _inner_params(name)
    try:
        return {k: parse_bool(v, f"option {k}") if isinstance(defaults.get(k), bool) else v
                for k, v in options.items()}
    except StrictYAMLError as exc:
        raise WorkloadError(f"{name}: {exc}") from None
