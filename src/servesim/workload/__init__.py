"""servesim.workload: the request table (`schema`) and where it comes from.

Loaders (`loaders`, `sharegpt`) read the public trace formats; generators (`gen_sageserve`,
`gen_azure_week`, `gen_oserve`, `gen_aegaeon`) synthesise each paper's workload, calibrated to the
characterisation the paper publishes (targets in each module's docstring). Everything returns the
one validated request table of `schema`; `write` / `read` store it as Parquet.
"""

from .arrivals import lengths_to_poisson
from .gen_azure_week import azure_week
from .gen_sageserve import sageserve_week
from .loaders import load_aegaeon, load_azure, load_azure_2023, load_sageserve
from .schema import COLUMNS, TIERS, WorkloadError, make, read, validate, write
from .sharegpt import iter_conversations, load_sharegpt

__all__ = ["COLUMNS", "TIERS", "WorkloadError", "make", "validate", "write", "read",
           "load_azure", "load_azure_2023", "load_aegaeon", "load_sageserve", "load_sharegpt",
           "iter_conversations", "lengths_to_poisson", "sageserve_week", "azure_week", "generate", "GENERATORS"]


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


def generate(name: str, scale: float = 1.0, seed: int = 0, **options):
    """Run a generator by name (see ``GENERATORS``)."""
    if name not in GENERATORS:
        raise WorkloadError(f"unknown generator {name!r}; known: {sorted(GENERATORS)}")
    return GENERATORS[name](scale=scale, seed=seed, **options)
