"""Per-(replica shape, workload type) capacities n_kj and e_kj by saturation runs (spec §1.3).

n_kj: type-j requests one replica of shape k completes per span (``span_s``) on its own, measured
in the simulator: ``n_requests`` requests sampled from the type's (input, output) pool all arrive
at t = 0; the rate is the completions between the 10th and 90th percentile finish times over that
time (the steady middle, without ramp-up and drain tails), rounded to an integer (the LCM needs
integers). A run needs several batches' worth of requests for that middle to be steady: with fewer
requests than the replica holds at once, all are admitted in one wave and the middle of one wave's
finish times overstates the rate (2.4x for OPT-30B (TP4, PP2) with 500 requests). So each run uses
max(``n_requests``, ``WAVES`` x the replica's concurrency), the concurrency being
min(max_num_seqs x pp, KV tokens / the type's mean sequence length). e_kj: n_kj if the type's 99th-percentile sequence (input + output) fits the replica's
KV cache (and context limit, with ``enforce_context``), else 0 (the spec's reading [R]; the paper
leaves e_kj undefined). Requests longer than the replica can ever hold are left out of its run.

``method="open"`` (a named reading, issue 28 item 2; the default ``closed`` is the above, the
paper's "maximum number of requests a replica can process in a span" read as a saturation run):
n_kj is the largest Poisson arrival rate the replica sustains on type j alone, found by bisection
between 0 and ``OPEN_HI`` x the closed-batch rate (``OPEN_STEPS`` halvings). A rate is sustained
when its queue stays bounded: the median TTFT of the requests arriving in the last fifth of the
arrival window is at most ``OPEN_GROWTH`` x that of the second fifth plus ``OPEN_SLACK_S`` (an
overloaded replica's TTFT grows with arrival time) and every request finishes. The arrival
window spans max(``OPEN_WINDOW_S``, ``OPEN_WINDOW_E2E`` x the median E2E of a probe at a third of
the closed rate): near capacity a queue grows slowly, and a replica starting empty absorbs its
first batch's ramp-up, so a short window passes rates it cannot sustain.

Results are cached on disk as one small JSON per (inputs) key: the model, shape, GPU, backend,
pool lengths digest, n_requests, seed, span, method (open only), a profiler version and the digest
of every servesim source file this module imports (`servesim._imports.code_digest`), so an entry
never outlives the simulator code that computed it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..._imports import code_digest
from ...disk_cache import cache_dir, key_of, read_json, write_json
from ...sim import Cluster
from ...workload import schema
from .replica import DEFAULT_BACKEND, GPU, Shape, instance_config, kv_tokens, step_model

VERSION = 2
WAVES = 4  # batches' worth of requests per saturation run, at least
METHODS = ("closed", "open")
OPEN_VERSION = 3     # of the open-loop probe (2: windows of OPEN_WINDOW_E2E low-load latencies; 3: a request
                     # rejected at arrival is left out, where one such request had failed every rate: n_kj 0 -> 1)
OPEN_HI = 2.5        # bisection over [0, OPEN_HI x the closed-batch rate]
OPEN_STEPS = 8       # halvings: ~1 % of the closed rate
OPEN_GROWTH = 1.5    # [R] sustained: late arrivals' median TTFT <= 1.5 x early arrivals' + slack
OPEN_SLACK_S = 0.25
OPEN_WINDOW_S = 30.0  # arrivals span at least this long, so a small overload has time to show,
OPEN_WINDOW_E2E = 20  # and at least this many low-load E2E latencies (past the batch's ramp-up)
# content-addressed (`CapacityProfiler.key` hashes every input and the code), so it is shared by checkouts and
# scales; a new machine starts with it empty (benchmarks/fresh_clone.py --cold measures that case)
DEFAULT_CACHE = cache_dir("oserve_capacity", "SERVESIM_OSERVE_CACHE")


def saturated_rate(requests: pd.DataFrame) -> float:
    """Requests per second of a saturation run (every arrival at 0): completions between the 10th and
    90th percentile finish times over that time (the steady middle, without ramp-up and drain)."""
    fin = np.sort(requests["finish_s"].dropna().to_numpy())
    lo, hi = int(0.1 * (len(fin) - 1)), int(0.9 * (len(fin) - 1))
    return (hi - lo) / (fin[hi] - fin[lo]) if fin[hi] > fin[lo] and hi > lo else len(fin) / max(fin[-1], 1e-9)


@dataclass(frozen=True)
class TypePool:
    """One workload type's (input, output) lengths to sample from."""

    name: str
    prompt: np.ndarray
    output: np.ndarray

    def __post_init__(self):
        if len(self.prompt) != len(self.output) or len(self.prompt) == 0:
            raise ValueError(f"type {self.name!r}: prompt and output must be equal-length and non-empty")

    def digest(self) -> str:
        h = hashlib.sha256(np.asarray(self.prompt, np.int64).tobytes())
        h.update(np.asarray(self.output, np.int64).tobytes())
        return h.hexdigest()[:16]


def pools_from_frame(df: pd.DataFrame, type_col: str = "type", names=None, labels=None) -> list[TypePool]:
    """Type pools from a table with prompt_tokens, output_tokens and a type column (``names``: the
    type values in that column, in order; ``labels``: their names)."""
    for c in ("prompt_tokens", "output_tokens", type_col):
        if c not in df:
            raise ValueError(f"type pool table has no column {c!r}")
    names = names if names is not None else sorted(df[type_col].unique())
    labels = list(labels) if labels is not None else [str(t) for t in names]
    out = []
    for t, lab in zip(names, labels):
        g = df[df[type_col] == t]
        if g.empty:
            raise ValueError(f"type pool table has no rows of type {t!r}")
        out.append(TypePool(lab, g.prompt_tokens.to_numpy(np.int64), g.output_tokens.to_numpy(np.int64)))
    return out


class CapacityProfiler:
    """n_kj / e_kj of shapes x types, memoised in memory and on disk."""

    def __init__(self, model: str, pools: list[TypePool], *, hardware: str = GPU, backend: str = DEFAULT_BACKEND,
                 n_requests: int = 2000, span_s: float = 60.0, seed: int = 0, enforce_context: bool = False, cache_dir: str | Path | None = DEFAULT_CACHE,
                 method: str = "closed"):
        if method not in METHODS:
            raise ValueError(f"capacity method {method!r}: one of {METHODS}")
        self.method = method
        self.model, self.pools, self.hardware, self.backend = model, list(pools), hardware, backend
        self.n_requests, self.span_s, self.seed = int(n_requests), float(span_s), int(seed)
        self.enforce_context = bool(enforce_context)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._mem: dict[Shape, tuple[np.ndarray, np.ndarray]] = {}
        self._closed: CapacityProfiler | None = None
        self.runs = 0  # saturation runs actually simulated (cache misses)
        self.hits = 0

    def key(self, shape: Shape) -> str:
        inputs = {"v": VERSION, "model": self.model, "hw": self.hardware, "backend": self.backend,
                  "shape": [shape.tp, shape.pp, shape.cross_node], "n": self.n_requests, "span": self.span_s,
                  "seed": self.seed, "ctx": self.enforce_context, "pools": [[p.name, p.digest()] for p in self.pools],
                  "code": code_digest(__name__), "engines": instance_config(self.model, shape, self.hardware).pp_engines}
        if self.backend == "gpu-bench-fit":  # its parameters come from committed tables: key on them
            sm = step_model(self.model, shape, self.hardware, self.backend)
            inputs["step"] = [sm.params(), sm.meta.get("source", "")]
        if self.method != "closed":  # (closed keys carry no method entry)
            inputs["method"] = [self.method, OPEN_VERSION]
        return key_of(inputs)

    def capacity(self, shape: Shape) -> tuple[np.ndarray, np.ndarray]:
        """(n_k, e_k): per-type capacities of one replica of ``shape``, requests per span."""
        if shape in self._mem:
            return self._mem[shape]
        path = self.cache_dir / f"{self.key(shape)}.json" if self.cache_dir is not None else None
        d = read_json(path) if path is not None else None
        if d is not None:
            res = (np.array(d["n"], float), np.array(d["e"], float))
            self.hits += 1
        else:
            res = self._profile(shape) if self.method == "closed" else self._profile_open(shape)
            if path is not None:
                write_json(path, {"model": self.model, "shape": shape.label(), "types": [p.name for p in self.pools],
                                   "n": res[0].tolist(), "e": res[1].tolist()})
        self._mem[shape] = res
        return res

    def matrix(self, shapes) -> tuple[np.ndarray, np.ndarray]:
        caps = [self.capacity(s) for s in shapes]
        return np.array([c[0] for c in caps]), np.array([c[1] for c in caps])

    def closed(self) -> CapacityProfiler:
        """This profiler's closed-batch sibling (itself when closed): the open-loop probes' brackets
        and the closed n_kj reported beside an open-loop reading's."""
        if self.method == "closed":
            return self
        if self._closed is None:
            self._closed = CapacityProfiler(self.model, self.pools, hardware=self.hardware, backend=self.backend,
                                            n_requests=self.n_requests, span_s=self.span_s, seed=self.seed,
                                            enforce_context=self.enforce_context, cache_dir=self.cache_dir)
        return self._closed

    def _replica(self, shape: Shape):
        """(instance config, step model, the longest sequence it can hold, KV tokens) of one replica."""
        cfg = instance_config(self.model, shape, self.hardware, self.enforce_context)
        kv = kv_tokens(self.model, shape, self.hardware)
        return cfg, step_model(self.model, shape, self.hardware, self.backend), min(kv, cfg.max_model_len or np.inf), kv

    def _base_requests(self, cfg, kv: float, pool: TypePool) -> int:
        """max(n_requests, WAVES x the replica's concurrency on this type)."""
        conc = min(cfg.max_num_seqs, kv / max(float(np.mean(pool.prompt + pool.output)), 1.0))
        return max(self.n_requests, int(np.ceil(WAVES * conc)))

    @staticmethod
    def _draw(rng, pool: TypePool, n: int, hold: float) -> tuple[np.ndarray, np.ndarray]:
        """``n`` requests drawn from ``pool``, less those the replica can never hold (not its load)."""
        idx = rng.integers(0, len(pool.prompt), n)
        prompt, output = pool.prompt[idx], pool.output[idx]
        keep = prompt + output <= hold
        return prompt[keep], output[keep]

    def _profile(self, shape: Shape) -> tuple[np.ndarray, np.ndarray]:
        cfg, sm, hold, kv = self._replica(shape)
        n_out, e_out = [], []
        for j, pool in enumerate(self.pools):
            rng = np.random.default_rng([self.seed, j])
            prompt, output = self._draw(rng, pool, self._base_requests(cfg, kv, pool), hold)
            if not len(prompt):
                n_out.append(0.0)
                e_out.append(0.0)
                continue
            w = schema.make(np.zeros(len(prompt)), prompt, output, model=self.model)
            res = Cluster.uniform(1, cfg, sm).run(w)
            self.runs += 1
            n = float(max(1, round(saturated_rate(res.requests) * self.span_s)))
            p99 = float(np.quantile(pool.prompt + pool.output, 0.99))
            n_out.append(n)
            e_out.append(n if p99 <= hold else 0.0)
        return np.array(n_out), np.array(e_out)

    def pool_rates(self, shape: Shape, pool: TypePool, rng) -> tuple[float, float]:
        """(open, closed) requests per span one replica of ``shape`` sustains on requests drawn from
        ``pool`` (a type's, or a mix's): its closed saturation rate, then the largest Poisson rate
        (`open_rate`) bracketed by it."""
        cfg, sm, hold, kv = self._replica(shape)
        prompt, output = self._draw(rng, pool, self._base_requests(cfg, kv, pool), hold)
        res = Cluster.uniform(1, cfg, sm).run(schema.make(np.zeros(len(prompt)), prompt, output, model=self.model))
        closed = saturated_rate(res.requests) * self.span_s
        return self.open_rate(cfg, sm, hold, kv, pool, closed, rng), closed

    def open_rate(self, cfg, sm, hold: float, kv: float, pool: TypePool, closed_rate: float, rng) -> float:
        """The largest Poisson rate (requests per span) one replica (``cfg``, ``sm``) sustains on
        requests drawn from ``pool``, by bisection over [0, OPEN_HI x ``closed_rate``] (module docstring)."""
        hi_rate = OPEN_HI * float(closed_rate)
        base = self._base_requests(cfg, kv, pool)

        def probe(t, prompt, output):
            self.runs += 1
            return Cluster.uniform(1, cfg, sm).run(schema.make(t, prompt, output, model=self.model)).requests

        prompt, output = self._draw(rng, pool, base, hold)  # a low-load probe sets the window
        t_low = np.cumsum(rng.exponential(1.0, len(prompt))) * (3 * self.span_s / float(closed_rate))
        e2e_low = float(np.median(probe(t_low, prompt, output)["e2e_s"].dropna()))
        window = max(OPEN_WINDOW_S, OPEN_WINDOW_E2E * e2e_low)
        prompt, output = self._draw(rng, pool, max(base, int(np.ceil(hi_rate / self.span_s * window))), hold)
        gaps = rng.exponential(1.0, len(prompt))  # unit-rate gaps, scaled per probe: common random numbers

        def sustained(rate_per_span: float) -> bool:
            t = np.cumsum(gaps) * (self.span_s / rate_per_span)
            m = max(int(np.searchsorted(t, window)) + 1, min(len(t), base))
            r = probe(t[:m], prompt[:m], output[:m])
            # a request the replica can never hold (rejected at arrival: its blocks exceed the KV
            # cache after rounding, which _draw's token count cannot see) is not load; any other
            # unfinished one means the rate is not sustained
            r = r[r["state"] != "rejected"]
            if (r["state"] != "finished").any():
                return False
            arr, ttft = r["arrival_s"].to_numpy(float), r["ttft_s"].to_numpy(float)
            q = np.quantile(arr, [0.2, 0.4, 0.8])
            early = np.median(ttft[(arr >= q[0]) & (arr < q[1])])
            late = np.median(ttft[arr >= q[2]])
            return bool(late <= OPEN_GROWTH * early + OPEN_SLACK_S)

        lo, hi = 0.0, hi_rate
        for _ in range(OPEN_STEPS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if sustained(mid) else (lo, mid)
        return lo

    def _profile_open(self, shape: Shape) -> tuple[np.ndarray, np.ndarray]:
        """Open-loop n_kj (``method="open"``, module docstring); e_kj as the closed runs'."""
        closed = self.closed()
        before = closed.runs
        n_closed, e_closed = closed.capacity(shape)
        self.runs += closed.runs - before
        cfg, sm, hold, kv = self._replica(shape)
        n_out = []
        for j, pool in enumerate(self.pools):
            if n_closed[j] <= 0:
                n_out.append(0.0)
                continue
            rng = np.random.default_rng([self.seed, j, 1])
            n_out.append(float(max(1, round(self.open_rate(cfg, sm, hold, kv, pool, float(n_closed[j]), rng)))))
        n = np.array(n_out)
        return n, np.where(e_closed > 0, n, 0.0)
