"""SLO attainment (per request and per token), deadlines and goodput.

Three readings, each named:

- **Per-request SLO attainment** (``slo_attainment``): the share of requests that completed and
  met every bound of an :class:`SLO` (TTFT, TPOT, E2E, normalised latency). A request that did
  not complete is a miss. A request with one output token has TPOT 0 for the TPOT bound (as
  ``vllm bench serve``'s goodput). ``request_goodput_per_s`` is the number of such requests per
  second of the run (vLLM's ``request_goodput``).
- **Per-token SLO attainment** (``token_slo_attainment``): the share of all requested output
  tokens delivered by their buffered deadline ``arrival + ttft_s + k * tpot_s`` (token k = 0 is
  the first), so a stall can be hidden by tokens that came early (Aegaeon's definition of SLO
  attainment). Needs both ``ttft_s`` and ``tpot_s``. With a ``tokens`` table (``request_id``,
  ``time_s``) the real token times are used; otherwise the per-request table's reading: tokens
  evenly spaced from the first token at the request's TPOT. Tokens of requests that did not
  complete count as late.
- **Deadline attainment** (``deadline_attainment``): against the table's own absolute
  ``deadline_s`` (the workload schema's reading): the first-token time for interactive tiers, the
  completion time for tiers in ``COMPLETION_DEADLINE_TIERS`` (NIW); the share of requests with
  a deadline that completed in time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

#: tiers whose ``deadline_s`` bounds completion, not the first token (servesim.workload.schema)
COMPLETION_DEADLINE_TIERS: tuple[str, ...] = ("NIW",)


@dataclass(frozen=True)
class SLO:
    """Latency bounds in seconds (None: not bounded)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2el_s: float | None = None
    e2el_per_token_s: float | None = None

    def __post_init__(self) -> None:
        for k, v in asdict(self).items():
            if v is not None and not v > 0:
                raise ValueError(f"SLO.{k} must be a positive number of seconds, got {v!r}")
        if all(v is None for v in asdict(self).values()):
            raise ValueError("SLO: give at least one bound (ttft_s, tpot_s, e2el_s, e2el_per_token_s)")

    def to_dict(self) -> dict:
        return asdict(self)


def meets(slo: SLO, completed: np.ndarray, values: dict[str, np.ndarray]) -> np.ndarray:
    """Per request: completed and within every bound of ``slo`` (``values``: per-request
    ``ttft``, ``tpot``, ``e2el``, ``e2el_per_token`` arrays)."""
    ok = completed.copy()
    for metric, bound in (("ttft", slo.ttft_s), ("tpot", slo.tpot_s), ("e2el", slo.e2el_s),
                          ("e2el_per_token", slo.e2el_per_token_s)):
        if bound is None:
            continue
        v = values[metric]
        if metric == "tpot":
            v = np.where(np.isnan(v), 0.0, v)  # one output token: no TPOT, counted as 0 (vLLM)
        ok &= v <= bound
    return ok


def tokens_on_time_uniform(ttft: np.ndarray, tpot: np.ndarray, output_tokens: np.ndarray,
                           ttft_slo: float, tpot_slo: float) -> np.ndarray:
    """Per request, how many of its tokens meet ``arrival + ttft_slo + k * tpot_slo`` when they
    come at ``ttft + k * tpot`` (k = 0 .. output - 1). NaN TTFT (no first token) -> 0."""
    n = output_tokens.astype(np.int64)
    tp = np.where(np.isnan(tpot), 0.0, tpot)
    a = ttft - ttft_slo          # token k on time  <=>  a <= k * b
    b = tpot_slo - tp
    out = np.zeros(len(n), dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.ceil(a / b)      # b > 0: k >= a / b
        hi = np.floor(a / b)     # b < 0: k <= a / b
    seen = ~np.isnan(ttft)
    pos = seen & (b > 0)
    out[pos] = n[pos] - np.clip(lo[pos], 0, n[pos]).astype(np.int64)
    neg = seen & (b < 0) & (a <= 0)
    out[neg] = np.clip(hi[neg] + 1, 0, n[neg]).astype(np.int64)
    flat = seen & (b == 0) & (a <= 0)
    out[flat] = n[flat]
    return out


def tokens_on_time_recorded(tokens: pd.DataFrame, request_ids: np.ndarray, arrival_s: np.ndarray,
                            ttft_slo: float, tpot_slo: float) -> np.ndarray:
    """Per request (aligned with ``request_ids``), how many recorded token times (``tokens``:
    ``request_id``, ``time_s``, in order within a request) meet the buffered deadlines."""
    t = tokens[tokens["request_id"].isin(request_ids)]
    rid = t["request_id"].to_numpy()
    pos = pd.Index(request_ids).get_indexer(rid)
    k = t.groupby("request_id", sort=False).cumcount().to_numpy()
    deadline = arrival_s[pos] + ttft_slo + k * tpot_slo
    on = t["time_s"].to_numpy(np.float64) <= deadline
    return np.bincount(pos[on], minlength=len(request_ids)).astype(np.int64)


def deadline_met(by_completion: np.ndarray, completed: np.ndarray, deadline_s: np.ndarray,
                 first_token_s: np.ndarray, finish_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(has a deadline, completed in time) per request, under the schema's reading
    (``by_completion``: the request's tier is in COMPLETION_DEADLINE_TIERS)."""
    has = ~np.isnan(deadline_s)
    at = np.where(by_completion, finish_s, first_token_s)
    return has, has & completed & (at <= deadline_s)


#: readings of "the maximum goodput while meeting the 90% SLO requirement" (Aegaeon Fig 11-13)
GOODPUT_READINGS = ("largest_meeting", "before_first_miss")


def goodput_x(xs, attainment, line: float = 0.9, reading: str = "largest_meeting") -> float:
    """The load (x: a number of models, a per-model rate) a system sustains at SLO attainment
    ``line`` over a sweep: ``largest_meeting`` the largest x whose attainment is >= ``line``;
    ``before_first_miss`` the largest x below the first x (in ascending order) that misses it, so a
    sweep that dips and recovers counts only up to the dip. NaN when no x meets the line."""
    if reading not in GOODPUT_READINGS:
        raise ValueError(f"goodput_x: reading={reading!r}; expected one of {GOODPUT_READINGS}")
    x = np.asarray(xs, float)
    a = np.asarray(attainment, float)
    if x.shape != a.shape:
        raise ValueError(f"goodput_x: {x.size} loads but {a.size} attainments")
    order = np.argsort(x, kind="stable")
    x, ok = x[order], a[order] >= line  # NaN attainment is a miss
    if reading == "before_first_miss":
        miss = np.flatnonzero(~ok)
        ok = ok & (np.arange(x.size) < (miss[0] if miss.size else x.size))
    return float(x[ok].max()) if ok.any() else float("nan")
