"""One run summary for every producer: fleet runs, SageServe strategy runs, engine replays and
sim-vs-engine comparisons.

``summarize(requests, ...)`` reads a per-request result table (``servesim.sim`` /
``servesim.fleet`` / ``servesim.engine`` all write the same columns: ``state``, ``arrival_s``,
``first_token_s``, ``finish_s``, ``ttft_s``, ``e2e_s``, ``tbt_mean_s``, ``prompt_tokens``,
``output_tokens``; optionally ``tier``, ``deadline_s``, ``scheduled_s``) and returns a JSON-ready
dict. Layout, version ``SCHEMA_VERSION`` = 1::

    schema_version      1
    percentiles         [50, 75, 90, 95, 99]       the p<q> keys of every block
    slo                 {ttft_s, tpot_s, e2el_s, e2el_per_token_s} | None
    token_times         "recorded" (a tokens table was given) | "uniform" (per-request reading)
    all                 BLOCK over every request
    by_tier             {tier: BLOCK}               every tier present, sorted
    groups              {name: BLOCK}               caller-named subsets (SageServe: "iw")
    instance_hours      (only with a ledger table) billed, by_state, by_endpoint, binned_max

    BLOCK:
    requests, completed, failed, unfinished     counts (failed: ended without finishing)
    states                                      {state: count}
    total_input_tokens, total_output_tokens     of completed requests
    duration_s                                  the run's (same in every block)
    request_throughput_per_s, output_throughput_tok_per_s, total_token_throughput_tok_per_s
    {mean,median,std,p<q>}_{ttft,tpot,itl,e2el,e2el_per_token,queue}_s   (servesim.metrics.latency)
    with_deadline, deadline_met, deadline_attainment                    (servesim.metrics.slo)
    slo_attainment, token_slo_attainment, request_goodput_per_s         (None without an SLO)

Names follow ``vllm bench serve`` (``completed``, ``p99_ttft_ms`` ...) with seconds, the unit of
every time in servesim, written in each key (``p99_ttft_s``). Latencies are over completed
requests. ``duration_s`` defaults to first arrival -> last completion. Missing values are None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .instance_hours import BIN_S, instance_hours
from .latency import LATENCY_METRICS, PERCENTILES, mean_itl, per_request, stat_keys, stats, token_gaps
from .slo import COMPLETION_DEADLINE_TIERS, SLO, deadline_met, meets, tokens_on_time_recorded, tokens_on_time_uniform

SCHEMA_VERSION = 1
FINISHED, UNFINISHED = "finished", "unfinished"
_COLUMNS = ("arrival_s", "first_token_s", "finish_s", "ttft_s", "e2e_s", "tbt_mean_s")


def block_keys(percentiles: Sequence[float] = PERCENTILES) -> list[str]:
    """Every key of a BLOCK, in order."""
    keys = ["requests", "completed", "failed", "unfinished", "states", "total_input_tokens", "total_output_tokens",
            "duration_s", "request_throughput_per_s", "output_throughput_tok_per_s",
            "total_token_throughput_tok_per_s"]
    for m in LATENCY_METRICS:
        keys += stat_keys(m, percentiles)
    return keys + ["with_deadline", "deadline_met", "deadline_attainment", "slo_attainment",
                   "token_slo_attainment", "request_goodput_per_s"]


class _Codes:
    """A string column as category codes (one small int per row: no per-row Python strings)."""

    def __init__(self, col: pd.Series | None, n: int):
        cat = pd.Categorical(col.astype(str) if col is not None and not isinstance(col.dtype, pd.CategoricalDtype)
                             else col if col is not None else np.full(n, "", dtype=object))
        self.codes = cat.codes
        self.names = [str(c) for c in cat.categories]

    def mask(self, *values: str) -> np.ndarray:
        idx = [i for i, c in enumerate(self.names) if c in values]
        return np.isin(self.codes, idx)


class _Table:
    """The columns summarize needs, as arrays (masks select rows; no copies of the table)."""

    def __init__(self, req: pd.DataFrame, tokens: pd.DataFrame | None, slo: SLO | None):
        missing = [c for c in (*_COLUMNS, "state", "prompt_tokens", "output_tokens") if c not in req]
        if missing:
            raise ValueError(f"summarize: the request table lacks column(s) {missing}")
        n = len(req)
        self.n = n
        self.state = _Codes(req["state"], n)
        self.completed = self.state.mask(FINISHED)
        self.unfinished = self.state.mask(UNFINISHED)
        cols = {c: req[c].to_numpy(np.float64) for c in _COLUMNS}
        if "scheduled_s" in req:
            cols["scheduled_s"] = req["scheduled_s"].to_numpy(np.float64)
        self.prompt = req["prompt_tokens"].to_numpy(np.int64)
        self.output = req["output_tokens"].to_numpy(np.int64)
        cols["output_tokens"] = self.output
        self.cols = cols
        self.values = per_request(cols)
        self.tier = _Codes(req["tier"] if "tier" in req else None, n)
        self.tokens = tokens
        self.request_id = req["request_id"].to_numpy() if "request_id" in req else np.arange(n)
        self.has_dl, self.met_dl = (deadline_met(self.tier.mask(*COMPLETION_DEADLINE_TIERS), self.completed,
                                                 req["deadline_s"].to_numpy(np.float64),
                                                 cols["first_token_s"], cols["finish_s"])
                                    if "deadline_s" in req else (np.zeros(n, bool), np.zeros(n, bool)))
        self.good = meets(slo, self.completed, self.values) if slo is not None else None
        self.on_time = None
        if slo is not None and slo.ttft_s is not None and slo.tpot_s is not None:
            if tokens is not None:
                done = self.request_id[self.completed]
                on = tokens_on_time_recorded(tokens, done, cols["arrival_s"][self.completed], slo.ttft_s, slo.tpot_s)
                self.on_time = np.zeros(n, np.int64)
                self.on_time[self.completed] = on
            else:
                self.on_time = np.where(self.completed, tokens_on_time_uniform(
                    cols["ttft_s"], cols["tbt_mean_s"], self.output, slo.ttft_s, slo.tpot_s), 0)

    def duration(self) -> float | None:
        if not self.completed.any():
            return None
        return float(self.cols["finish_s"][self.completed].max() - self.cols["arrival_s"].min())


def _block(t: _Table, m: np.ndarray, duration: float | None, percentiles: Sequence[float]) -> dict:
    done = m & t.completed
    n_done = int(done.sum())
    n_in, n_out = int(t.prompt[done].sum()), int(t.output[done].sum())
    counts = np.bincount(t.state.codes[m] + 1, minlength=len(t.state.names) + 1)[1:]  # code -1: a missing state
    rate = (lambda x: x / duration) if duration else (lambda x: None)
    out = {"requests": int(m.sum()), "completed": n_done,
           "failed": int((m & ~t.completed & ~t.unfinished).sum()), "unfinished": int((m & t.unfinished).sum()),
           "states": {s: int(c) for s, c in sorted(zip(t.state.names, counts)) if c},
           "total_input_tokens": n_in, "total_output_tokens": n_out, "duration_s": duration,
           "request_throughput_per_s": rate(n_done), "output_throughput_tok_per_s": rate(n_out),
           "total_token_throughput_tok_per_s": rate(n_in + n_out)}
    for metric in LATENCY_METRICS:
        if metric == "itl":
            if t.tokens is not None:
                out.update(stats(token_gaps(t.tokens, t.request_id[done]), "itl", percentiles))
            else:
                out.update(dict.fromkeys(stat_keys("itl", percentiles)))
                out["mean_itl_s"] = mean_itl(t.values["tpot"][done], t.output[done])
        else:
            out.update(stats(t.values[metric][done], metric, percentiles))
    with_dl = int((m & t.has_dl).sum())
    met = int((m & t.met_dl).sum())
    out.update(with_deadline=with_dl, deadline_met=met, deadline_attainment=met / with_dl if with_dl else None)
    n = int(m.sum())
    good = int((m & t.good).sum()) if t.good is not None else None
    out["slo_attainment"] = good / n if good is not None and n else None
    wanted = int(t.output[m].sum())
    out["token_slo_attainment"] = (int(t.on_time[m].sum()) / wanted if t.on_time is not None and wanted else None)
    out["request_goodput_per_s"] = rate(good) if good is not None else None
    return out


def request_values(requests: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per-request values of every latency metric but ``itl`` (``latency.per_request``), NaN for a
    request that did not complete: the values ``summarize``'s percentiles are taken over, row for row."""
    t = _Table(requests, None, None)
    return {m: np.where(t.completed, v, np.nan) for m, v in t.values.items()}


def summarize(requests: pd.DataFrame, *, slo: SLO | None = None,
              groups: Mapping[str, Sequence[str] | np.ndarray] | None = None, by_tier: bool = True,
              percentiles: Sequence[float] = PERCENTILES, duration_s: float | None = None,
              tokens: pd.DataFrame | None = None, hours: pd.DataFrame | None = None,
              timeseries: pd.DataFrame | None = None, bin_s: float = BIN_S, end_s: float | None = None) -> dict:
    """The run summary of a per-request result table (layout: this module's docstring).

    slo: bounds for ``slo_attainment`` / ``token_slo_attainment`` / ``request_goodput_per_s``.
    groups: name -> tiers (a sequence of tier names) or a boolean mask over the rows.
    duration_s: the run's duration for throughputs (default: first arrival -> last completion).
    tokens: every token's time (``request_id``, ``time_s``; an engine replay's tokens.parquet).
    hours, timeseries, bin_s, end_s: the fleet ledger's instance-hours table and timeseries, for
      the ``instance_hours`` section (servesim.metrics.instance_hours; samples from ``end_s`` on
      are left out of the binned reading).
    """
    t = _Table(requests, tokens, slo)
    duration = t.duration() if duration_s is None else float(duration_s)
    percentiles = tuple(percentiles)
    everything = np.ones(t.n, dtype=bool)
    out = {"schema_version": SCHEMA_VERSION, "percentiles": list(percentiles),
           "slo": slo.to_dict() if slo is not None else None,
           "token_times": "recorded" if tokens is not None else "uniform",
           "all": _block(t, everything, duration, percentiles), "by_tier": {}, "groups": {}}
    if by_tier:
        present = np.bincount(t.tier.codes[t.tier.codes >= 0], minlength=len(t.tier.names))
        for tier in sorted(c for c, k in zip(t.tier.names, present) if c and k):
            out["by_tier"][tier] = _block(t, t.tier.mask(tier), duration, percentiles)
    for name, sel in (groups or {}).items():
        if isinstance(sel, np.ndarray) and sel.dtype == bool:
            if sel.shape != (t.n,):
                raise ValueError(f"summarize: group {name!r}: mask of shape {sel.shape} for {t.n} requests")
            mask = sel
        else:
            mask = t.tier.mask(*sel)
        out["groups"][str(name)] = _block(t, mask, duration, percentiles)
    if hours is not None:
        out["instance_hours"] = instance_hours(hours, timeseries, bin_s, end_s)
    return out
