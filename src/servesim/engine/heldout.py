"""Held-out workloads for simulator-vs-engine comparison, at fractions of measured capacity.

The profiling sweep (:mod:`.profile`) measures the engine's saturation throughput on a request
mix; the comparison workloads use the same length mix with different seeds (so they are not the
sweep's requests) and Poisson arrivals at ``load x capacity`` requests per second. Besides these
loads, *held-out shapes* (`SHAPES`: bursty arrivals, long prompts, long outputs, a load ramp
through saturation) are workloads unlike anything the fit or the loads saw. Generated from a
profile's fit.json alone, so the in-process engine's child builds them right after its profile
(`servesim.engine.inprocess`) and the calibration (`servesim.engine.calibration`) reads them back.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: seed offset of held-out workloads: far from the sweep's seeds (plan.seed, plan.seed + 1)
HELDOUT_SEED = 1000


def _read_mix(fit_json: str | Path) -> tuple[float, tuple[int, int], tuple[int, int], int | None]:
    """(capacity req/s, prompt range, output range, the engine's max_model_len or None) of a fit."""
    import math

    from servesim.engine.profile import read_fit
    from servesim.errors import InputError

    fit = read_fit(fit_json, "prompt_range", "output_range")
    if "capacity_req_s" not in fit:
        raise InputError(f"{fit_json}: no capacity_req_s (profile with --capacity-requests > 0)")
    try:
        cap = float(fit["capacity_req_s"])
        ranges = [tuple(int(x) for x in fit[k]) for k in ("prompt_range", "output_range")]
    except (TypeError, ValueError):
        raise InputError(f"{fit_json}: capacity_req_s must be a number and prompt_range / output_range "
                         "lists of two integers") from None
    if not (math.isfinite(cap) and cap > 0) or any(len(r) != 2 or not 0 <= r[0] <= r[1] for r in ranges):
        raise InputError(f"{fit_json}: capacity_req_s={cap!r} must be a finite number > 0 and prompt_range / "
                         f"output_range [lo, hi] with 0 <= lo <= hi")
    max_len = (fit.get("engine") or {}).get("max_model_len")
    return cap, ranges[0], ranges[1], (int(max_len) if max_len else None)


def heldout_workload(fit_json: str | Path, load: float, n_requests: int, seed: int = 0) -> pd.DataFrame:
    """``n_requests`` of the profile's mix arriving as a Poisson process at ``load`` x capacity."""
    from servesim.engine.profile import request_mix

    cap, prompt, output, _ = _read_mix(fit_json)
    rate = float(load) * cap
    ss = np.random.SeedSequence([HELDOUT_SEED + seed, int(round(load * 1000))])
    arr_rng = np.random.default_rng(ss.spawn(1)[0])
    arrivals = np.cumsum(arr_rng.exponential(1.0 / rate, n_requests))
    arrivals -= arrivals[0]
    return request_mix(n_requests, int(ss.generate_state(1)[0]), prompt, output, arrival_s=arrivals)


#: held-out shapes: name -> what it is (the generator is `heldout_shape`). Rates are set from the
#: profile's measured capacity: the mix's, or for a long shape (`LONG_SHAPES`) its own (`LOAD_BASES`).
SHAPES = {
    "bursty": "the mix, renewal arrivals with Gamma inter-arrival times of CV 2 at 0.6 x capacity",
    "long-prompt": "prompts 1-3 x the mix's longest (capped by max_model_len), the mix's outputs; 0.5 x its own capacity",
    "long-output": "the mix's prompts, outputs 1-4 x the mix's longest (capped by max_model_len); 0.5 x its own capacity",
    "ramp": "the mix, Poisson arrivals whose rate rises linearly from 0.3 to 1.2 x capacity (through saturation)",
}
BURSTY_CV, BURSTY_LOAD, LONG_LOAD, RAMP_LOADS = 2.0, 0.6, 0.5, (0.3, 1.2)
#: the shapes whose lengths are not the mix's, so the mix's capacity does not say how loaded they are
LONG_SHAPES = ("long-prompt", "long-output")
#: what a long shape's LONG_LOAD is a fraction of (fit.json's ``shape_load_basis``):
#: ``capacity`` (the calibration's default since 7 Dec): the shape's own saturation throughput,
#: measured on the engine by a burst of its lengths as the mix's capacity is (fit.json's
#: ``shape_capacity``), so 0.5 means what load 0.5 means for the mix; ``tokens`` (until then, and
#: every fit without the key): the mix capacity's prompt + output token rate. A decode token costs a
#: step's slot where a prompt token is one of hundreds in a chunk, so on ``tokens`` the paper-scale
#: long-output replays published at 0b95176 ran at 1.13 x their own capacity (the fitted model's
#: burst of their lengths), the engine busy at every step, and long-prompt at 0.54 x
LOAD_BASES = ("capacity", "tokens")


def shape_ranges(name: str, prompt: tuple[int, int], output: tuple[int, int],
                 max_len: int | None) -> tuple[tuple[int, int], tuple[int, int]]:
    """(prompt range, output range) of the held-out shape ``name`` on a mix of ``prompt`` /
    ``output`` lengths and an engine context of ``max_len`` (None: unbounded): the long shapes'
    lengths past the mix's longest, a prompt plus its output always within the context."""
    check_shape(name)
    room = (max_len or 10**9) - 1
    if name == "long-prompt":
        return (prompt[1], max(prompt[1], min(3 * prompt[1], room - output[1]))), tuple(output)
    if name == "long-output":
        return tuple(prompt), (output[1], max(output[1], min(4 * output[1], room - prompt[1])))
    return tuple(prompt), tuple(output)


def check_shape(name: str) -> None:
    if name not in SHAPES:
        raise ValueError(f"unknown held-out shape {name!r}; choose from {', '.join(SHAPES)}")


def heldout_shape(fit_json: str | Path, name: str, n_requests: int, seed: int = 0) -> pd.DataFrame:
    """``n_requests`` of the held-out shape ``name`` (`SHAPES`), deterministic in ``seed``."""
    import zlib

    from servesim.engine.profile import request_mix

    check_shape(name)
    cap, mix_prompt, mix_output, max_len = _read_mix(fit_json)
    prompt, output = shape_ranges(name, mix_prompt, mix_output, max_len)
    ss = np.random.SeedSequence([HELDOUT_SEED + seed, zlib.crc32(name.encode())])
    arr_rng, len_rng = (np.random.default_rng(s) for s in ss.spawn(2))
    n = int(n_requests)
    lengths = request_mix(n, int(len_rng.integers(2**31)), prompt, output)
    if name == "bursty":
        k = 1.0 / BURSTY_CV**2  # Gamma shape: CV = 1/sqrt(k); mean 1/rate
        gaps = arr_rng.gamma(k, 1.0 / (k * BURSTY_LOAD * cap), n)
    elif name == "ramp":
        from servesim.engine.profile import ramp_arrivals

        t = ramp_arrivals(n, *(x * cap for x in RAMP_LOADS), arr_rng)
        gaps = np.diff(t, prepend=t[0])
    else:  # the long shapes: LONG_LOAD x their capacity (`LOAD_BASES`)
        mean = lambda r: 0.5 * (r[0] + r[1])  # noqa: E731
        rate = _long_rate(fit_json, name, cap, mean(mix_prompt) + mean(mix_output), mean(prompt) + mean(output))
        gaps = arr_rng.exponential(1.0 / rate, n)
    arrivals = np.cumsum(gaps)
    arrivals -= arrivals[0]
    return lengths.assign(arrival_s=arrivals)


def check_load_basis(basis: str) -> None:
    if basis not in LOAD_BASES:
        raise ValueError(f"shape_load_basis={basis!r}: one of {LOAD_BASES}")


def shape_load_fields(shapes, basis: str, mix: dict, max_len: int | None, measure) -> dict:
    """fit.json's fields for the held-out ``shapes`` on ``basis`` (`LOAD_BASES`): the basis and, on
    ``capacity``, each long shape's capacity fields (`servesim.engine.profile.capacity_of`), which
    ``measure(prompt_range, output_range)`` returns for a burst of the shape's lengths on the engine
    (``mix``: the mix's capacity fields, its ranges)."""
    check_load_basis(basis)
    fields = {"shape_load_basis": basis}
    if basis == "capacity":
        fields["shape_capacity"] = {name: measure(*shape_ranges(name, mix["prompt_range"], mix["output_range"], max_len))
                                    for name in shapes if name in LONG_SHAPES}
    return fields


def _long_rate(fit_json, name: str, cap: float, mix_tokens: float, shape_tokens: float) -> float:
    """The long shape ``name``'s request rate on the basis fit.json names (`LOAD_BASES`); ``cap``
    the mix's capacity, ``*_tokens`` the mix's and the shape's mean tokens per request."""
    import math

    from servesim.engine.profile import read_fit
    from servesim.errors import InputError

    fit = read_fit(fit_json)
    basis = fit.get("shape_load_basis", "tokens")
    if basis == "tokens":
        return LONG_LOAD * cap * mix_tokens / shape_tokens
    if basis != "capacity":
        raise InputError(f"{fit_json}: shape_load_basis={basis!r}: one of {LOAD_BASES}")
    try:
        own = float(fit["shape_capacity"][name]["capacity_req_s"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{fit_json}: shape_load_basis 'capacity' needs shape_capacity[{name!r}].capacity_req_s "
                         "(the calibration measures it for the shapes it replays)") from None
    if not (math.isfinite(own) and own > 0):
        raise InputError(f"{fit_json}: shape_capacity[{name!r}].capacity_req_s={own!r} must be a finite number > 0")
    return LONG_LOAD * own


def write_cases(out: Path, loads, shapes, n_requests: int, seed: int,
                shape_requests: int | None = None) -> list[tuple[str, float | str, pd.DataFrame]]:
    """(label, load or shape name, workload) of every held-out case of the profile in
    ``out/profile``, each written to ``out/workloads/<label>.parquet``."""
    out = Path(out)
    fit = out / "profile" / "fit.json"
    n_shape = n_requests if shape_requests is None else shape_requests
    cases = [(label, key, heldout_workload(fit, key, n_requests, seed=seed) if not isinstance(key, str)
              else heldout_shape(fit, key, n_shape, seed=seed)) for label, key in case_labels(loads, shapes)]
    (out / "workloads").mkdir(exist_ok=True)
    for label, _, wl in cases:
        wl.to_parquet(out / "workloads" / f"{label}.parquet", index=False)
    return cases


def case_labels(loads, shapes) -> list[tuple[str, float | str]]:
    """(label, key) of each held-out case: ``load{x}`` for a load (its key the number), a shape's name."""
    return [(replay_name(x, 0), x) for x in loads] + [(str(name), str(name)) for name in shapes]


def replay_runs(out: Path, loads, shapes, repeats: int) -> list[tuple[str, float | str, int, Path]]:
    """(label, key, repeat, folder) of every replay: each case ``repeats`` times under ``out/replay``,
    in rounds (every case once, then every case again): the host's speed drifts over minutes, and a
    case's repeats run back to back would share one slow spell (its spread would hide the drift
    and its mean would carry it)."""
    return [(label, key, rep, Path(out) / "replay" / replay_name(label, rep))
            for rep in range(repeats) for label, key in case_labels(loads, shapes)]


def replay_name(case: float | str, repeat: int) -> str:
    """The folder of one replay under ``replay/``: ``load{x}`` (a load given as a number) or the
    case's label (``load0.3``, ``bursty``) for the first, ``<label>.rep{k}`` after."""
    label = f"load{case}" if not isinstance(case, str) else case
    return label if repeat == 0 else f"{label}.rep{repeat}"
