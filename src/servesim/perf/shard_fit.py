"""The roofline fitted to a measured one-shard profile, with what the profile lacks added back.

A committed `gpu_bench` table (``sources.gpu_bench``) times one GPU's 1/tp shard of a model: no
all-reduce, no pipeline. Fitting the roofline's GPU efficiencies and per-step / per-sequence costs
to it with the TP all-reduce switched off (``tp_comm=False``) gives the shard's compute from
measurement; the replica's model then puts back the datasheet all-reduce (the roofline's prior
``eff_net`` and ``ar_latency_s`` on the catalog's interconnect) and the pipelined PP schedule with
its hand-offs. Efficiencies are fractions of the datasheet, so a TP degree with no table takes
the nearest measured degree's (its ``meta`` says which).
"""

from __future__ import annotations

import math
from functools import cache

from ..catalog import get_hardware, get_model
from ..errors import InputError
from . import sources
from .measurements import AGGREGATES, mape
from .roofline import GPU_PARAMS, HOST_PARAMS, RooflineStepTime, fit_roofline

FIT_PARAMS = GPU_PARAMS + HOST_PARAMS  # not eff_net / ar_latency_s: the profile has no all-reduce
_FITS: dict = {}


def measured_tps(model: str, hardware: str) -> list[int]:
    """TP degrees of ``model`` with a committed profile on ``hardware``."""
    return list(_measured_tps(get_model(model).key, get_hardware(hardware).key))


@cache  # every replica's step model asks; the committed tables do not change within a run
def _measured_tps(key: str, hw: str) -> tuple[int, ...]:
    return tuple(sorted(t for h, m, t in sources.gpu_bench_sets() if h == hw and m == key))


def nearest_tp(tp: int, have: list[int]) -> int:
    """The measured degree closest to ``tp`` on a log scale (ties: the larger, whose shard is
    nearer in size to a split of tp's)."""
    return min(have, key=lambda t: (abs(math.log2(t) - math.log2(tp)), -t))


def shard_params(model: str, hardware: str, tp: int = 1, timing: str = "step") -> tuple[dict, dict]:
    """(fitted roofline parameters, meta) for ``model`` at ``tp`` on ``hardware`` (memoised).
    meta: profile_tp (the table fitted), rows, mape_pct on that table."""
    have = measured_tps(model, hardware)
    if not have:
        raise InputError(f"no gpu_bench profile of {get_model(model).key} on {get_hardware(hardware).key} "
                         f"(committed: {', '.join(f'{m}:tp{t}@{h}' for h, m, t in sources.gpu_bench_sets())})")
    use = tp if tp in have else nearest_tp(tp, have)
    key = (get_model(model).key, get_hardware(hardware).key, use, timing)
    if key not in _FITS:
        df = sources.gpu_bench(model, hardware, use, timing=timing)
        prior = RooflineStepTime(model, hardware, tp=use, tp_comm=False)
        fit = fit_roofline(prior, df, params=FIT_PARAMS)
        err = mape(df.step_s, fit.step_time(*(df[c].to_numpy(float) for c in AGGREGATES)))
        _FITS[key] = ({k: float(getattr(fit, k)) for k in FIT_PARAMS},
                      {"profile_tp": use, "rows": int(len(df)), "mape_pct": err, "timing": timing})
    params, meta = _FITS[key]
    return dict(params), dict(meta)


def shard_roofline(model: str, hardware: str, tp: int = 1, pp: int = 1, pp_link_bw: float | None = None,
                   timing: str = "step") -> RooflineStepTime:
    """A (tp, pp) replica's step model: the fitted shard plus the datasheet all-reduce and PP."""
    params, meta = shard_params(model, hardware, tp, timing)
    m = RooflineStepTime(model, hardware, tp=tp, pp=pp, pp_link_bw=pp_link_bw, name="gpu-bench-fit", **params)
    m.meta = {**meta, "source": f"gpu-bench {get_model(model).key} tp{meta['profile_tp']} fitted"
                                + ("" if meta["profile_tp"] == tp else f" (no tp{tp} table)") + " + datasheet all-reduce"}
    return m
