"""PreServe's instance scaler (§4.3.2) and its RQ2 baselines as fleet controllers.

Registered by name (``servesim.policies.CONTROLLERS``):

- ``preserve``: at every window boundary the Tier-1 plan (pre-initialise / isolate, below); within
  the window one more instance per potentially overloaded instance and, at most once per window,
  a scale-down when every instance's anticipated KV use stays below ``scaledown_threshold``.
- ``preserve-proactive``: the window-boundary step only (spec §2.4 "Proactive").
- ``preserve-hybrid``: Proactive plus the Reactive baseline (the shared ``reactive`` controller,
  or ``preserve-reactive-rate`` with ``metric: rate``, called at its own period).
- ``preserve-reactive-rate``: the Reactive baseline's ``rate`` reading (:class:`RateReactive`).

What the Reactive baseline (alone and inside Hybrid) observes. §5.3 defines it: "it leverages
the current instance status (i.e., KV memory usage) to reactively scale LLM instances up or
down", and Hybrid "combines workload predictions and current instance status"; the threshold is
§3.2.1's example ("GPU memory utilization beyond a predefined threshold (e.g., 95%)"). So the
default reading, ``kv``, is the paper's: +1 when the mean KV usage of the serving instances
exceeds 95 %, -1 after 5 min below 30 % (spec §2.4 [A]: period 10 s, cooldown 60 s). On the
prefill-bound code service KV usage stays low while the SLO is first missed, and rises only
once a backlog builds (vLLM V0 prefills every waiting request it can admit before it decodes,
so prefilled requests hold their KV while they wait): the KV reading reacts late, which is the
paper's account of Reactive ("untimely scaling response"). ``rate`` is the other reading,
§1's generic reactive scaler ("real-time metrics (e.g., CPU utilization exceeding 80%)") with
utilisation = load over capacity: the last minute's prompt-token arrival rate over the active
instances' profiled prompt capacity (the plan's one-instance mu_p, the same profile Tier 1
uses), +1 above 0.8, -1 after 5 min below 0.3.

Window-boundary step. ``targets[w]`` is N for replay window w (from the two-step Tier-1 forecast,
made at the start of window w-1). At the start of window w the scaler pre-initialises up to
N_{w+1} (instances start now and take traffic as soon as they are ready) and isolates down to
N_w (a decision *for* window w takes effect when w begins, spec [A]): it keeps
max(N_w, N_{w+1}) instances. The fleet's scale-down cancels starting instances first, then drains
the least-loaded ready ones (they finish their running requests, then are released); its scale-up
re-activates a draining instance before starting a new one (no cold start for those).

Anticipated KV use (§4.3.1) with ground-truth output lengths, as RQ2 uses: a decoding request
with ``c`` KV tokens and ``r`` tokens still to sample holds ``c + j`` tokens at iteration offset
j < r, so U_j = sum over requests with r > j of (c + j), over the KV capacity M. With the true
lengths the anticipator's early-end and extension corrections never fire.

Two readings the paper leaves open (spec §6.8), both options:

- ``count_queued`` (default True): the map also holds the requests routed to the instance and
  not yet prefilled, from offset 0 with the KV they will hold (the router's virtual add, §4.3.3).
  With only prefilled requests the overload test cannot see a prefill-bound backlog: code
  requests (prompt ~1.8 K tokens, output ~13) leave the map within ~20 iterations, so U > 95 %
  in more than 10 of the next 100 iterations never holds however long the queue grows.
- ``scaledown_floor`` (default ``plan``): the once-per-window scale-down keeps at least what the
  window boundary set up, max(N_w, N_{w+1}) (it trims instances beyond the plan, e.g. after
  intra-window scale-ups, and leaves the instances pre-initialised for the next window alone);
  ``none`` is the literal rule, which on a prefill-bound service (KV use a few %
  while the GPUs are busy) isolates down to one instance every window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ...fleet.control import Action, FleetView, Scale
from ...policies.autoscalers import ReactiveAutoscaler
from ...policies.registry import register_controller


def kv_projection(context, remaining, capacity_tokens: float, l: int = 100) -> np.ndarray:
    """U_j, j = 0..l-1: the KV fraction the decoding requests hold at iteration offset j
    (request i holds ``context[i] + j`` tokens while ``j < remaining[i]``)."""
    c = np.asarray(context, dtype=np.float64)
    r = np.asarray(remaining, dtype=np.int64)
    if c.shape != r.shape:
        raise ValueError(f"kv_projection: context {c.shape} and remaining {r.shape} differ")
    if not capacity_tokens > 0:
        raise ValueError(f"kv_projection: capacity_tokens must be > 0, got {capacity_tokens}")
    j = np.arange(l)
    if c.size == 0:
        return np.zeros(l)
    order = np.argsort(r, kind="stable")
    rs, cs = r[order], c[order]
    suffix = np.concatenate([np.cumsum(cs[::-1])[::-1], [0.0]])  # suffix[k] = sum cs[k:]
    first = np.searchsorted(rs, j, side="right")  # first request with remaining > j
    alive = rs.size - first
    return (suffix[first] + alive * j) / float(capacity_tokens)


def overloaded(u: np.ndarray, kv_threshold: float = 0.95, iteration_fraction: float = 0.1) -> bool:
    """§4.3.2: KV use above ``kv_threshold`` in more than ``iteration_fraction`` of the look-ahead."""
    u = np.asarray(u)
    return int((u > kv_threshold).sum()) > iteration_fraction * u.size


def instance_count(p_hat: float, d_hat: float, mu_p: float, mu_d: float, mu_t: float,
                   lo: int = 1, hi: int = 8) -> int:
    """§4.1: N = max(P^/mu_p, D^/mu_d, (P^+D^)/mu_t), rounded up and clamped to [lo, hi] (spec [A])."""
    if min(mu_p, mu_d, mu_t) <= 0:
        raise ValueError(f"instance_count: capacities must be > 0, got {(mu_p, mu_d, mu_t)}")
    n = max(p_hat / mu_p, d_hat / mu_d, (p_hat + d_hat) / mu_t)
    return int(min(hi, max(lo, math.ceil(n - 1e-9))))


@register_controller("preserve")
@dataclass
class PreServeScaler:
    """See the module docstring. ``targets``: N per window from time 0; ``intra``: the
    intra-window rules (False: Proactive). Decisions are appended to ``log``."""

    targets: list = field(default_factory=list)
    window_s: float = 600.0
    period_s: float = 1.0
    intra: bool = True
    lookahead_l: int = 100
    overload_kv_threshold: float = 0.95
    overload_iteration_fraction: float = 0.1
    scaledown_threshold: float = 0.3
    max_scaledowns_per_window: int = 1
    max_instances: int = 8
    count_queued: bool = True
    scaledown_floor: str = "plan"
    log: list = field(default_factory=list, repr=False)
    _window: int = field(default=-1, repr=False)
    _downs: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if not self.targets:
            raise ValueError("preserve scaler: targets (instances per window) must not be empty")
        if any(int(t) < 1 for t in self.targets):
            raise ValueError(f"preserve scaler: targets must be >= 1, got {min(self.targets)}")
        if not self.window_s > 0 or not self.period_s > 0:
            raise ValueError("preserve scaler: window_s and period_s must be > 0")
        if self.scaledown_floor not in ("plan", "none"):
            raise ValueError(f"preserve scaler: scaledown_floor must be 'plan' or 'none', got {self.scaledown_floor!r}")

    def target(self, w: int) -> int:
        """N for window ``w`` (the last one beyond the plan)."""
        return int(self.targets[min(max(w, 0), len(self.targets) - 1)])

    def _book(self, now: float, kind: str, delta: int, **extra: Any) -> None:
        self.log.append({"time_s": now, "kind": kind, "delta": delta, **extra})

    def planned(self, w: int) -> int:
        """The instances the plan holds during window ``w``: max(N_w, N_{w+1}) (N_w serves it, and
        N_{w+1} - N_w more are pre-initialised at its start for the next window)."""
        return max(self.target(w), self.target(w + 1))

    def boundary(self, now: float, st) -> int:
        """The window-boundary change: keep the plan's ``planned`` count."""
        return self.planned(int(now // self.window_s)) - st.active

    def intra_window(self, view: FleetView, key, st, now: float) -> int:
        """One instance per potentially overloaded one (less those already starting); else the
        once-per-window scale-down to ceil(sum of peak anticipated use / T_f)."""
        peaks, n_over = [], 0
        for _, (ctx, rem, cap) in view.decode_states(*key, queued=self.count_queued):
            u = kv_projection(ctx, rem, cap, self.lookahead_l)
            peaks.append(float(u.max()))
            n_over += overloaded(u, self.overload_kv_threshold, self.overload_iteration_fraction)
        if not peaks:
            return 0
        up = min(n_over - st.starting, self.max_instances - st.active)
        if up > 0:
            return up
        if n_over == 0 and self._downs < self.max_scaledowns_per_window and max(peaks) < self.scaledown_threshold:
            keep = max(1, math.ceil(sum(peaks) / self.scaledown_threshold - 1e-9))
            if self.scaledown_floor == "plan":
                # the boundary's count, pre-initialised instances included: a floor of N_w alone
                # cancelled, seconds later, an instance the boundary had just started for N_{w+1}
                keep = max(keep, self.planned(int(now // self.window_s)))
            if st.active > keep:
                self._downs += 1
                return keep - st.active
        return 0

    def act(self, view: FleetView) -> list[Action]:
        now = view.now
        w = int(now // self.window_s)
        actions: list[Action] = []
        new_window = w != self._window
        if new_window:
            self._window, self._downs = w, 0
        for key in view.endpoints():
            st = view.endpoint(*key)
            if new_window:
                delta, kind = self.boundary(now, st), "window"
            elif self.intra:
                delta, kind = self.intra_window(view, key, st, now), "intra"
            else:
                delta = 0
            if delta:
                actions.append(Scale(key[0], key[1], delta))
                self._book(now, kind, delta, active=st.active, ready=st.ready, window=w)
        return actions


@register_controller("preserve-proactive")
@dataclass
class ProactiveScaler(PreServeScaler):
    """The Tier-1 plan at window boundaries only (spec §2.4 Proactive)."""

    intra: bool = False


@register_controller("preserve-hybrid")
@dataclass
class HybridScaler(PreServeScaler):
    """Proactive plus Reactive (spec §2.4): the window-boundary plan, and between boundaries the
    Reactive baseline with ``reactive`` options (:func:`reactive_controller`), at its own period."""

    intra: bool = False
    reactive: dict = field(default_factory=dict)
    _reactive: ReactiveAutoscaler | None = field(default=None, repr=False)
    _next_reactive: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._reactive = reactive_controller(self.reactive)
        self._next_reactive = self._reactive.period_s

    def act(self, view: FleetView) -> list[Action]:
        actions = super().act(view)
        now = view.now
        if not actions and now >= self._next_reactive - 1e-9:
            self._next_reactive = now + self._reactive.period_s
            for a in self._reactive.act(view):
                actions.append(a)
                self._book(now, "reactive", a.delta, window=int(now // self.window_s))
        return actions


@register_controller("preserve-reactive-rate")
@dataclass
class RateReactive(ReactiveAutoscaler):
    """The Reactive baseline's ``rate`` reading (module doc): utilisation = the endpoint's prompt
    tokens per second over the fleet's look-back window (60 s) / (active instances x
    ``mu_prompt_tokens_s``, one instance's profiled prompt capacity); instances still starting
    count as capacity already requested (as a Kubernetes HPA counts its replicas), so one surge
    is not answered twice while the first instance boots. Thresholds and timing as the shared
    ``reactive`` controller (``up``, ``down``, ``down_for_s``, ``cooldown_s``, ``period_s``)."""

    metric: str = "rate"
    mu_prompt_tokens_s: float = 0.0
    Options: ClassVar[Any] = None  # checked by the keyword parameters and __post_init__

    def __post_init__(self) -> None:
        if self.metric != "rate":
            raise ValueError(f"preserve-reactive-rate: metric must be 'rate', got {self.metric!r}")
        if not 0 <= self.down < self.up:
            raise ValueError(f"preserve-reactive-rate: need 0 <= down < up, got down={self.down}, up={self.up}")
        if self.step < 1:
            raise ValueError(f"preserve-reactive-rate: step must be >= 1, got {self.step}")
        if not (self.mu_prompt_tokens_s > 0 and math.isfinite(self.mu_prompt_tokens_s)):
            raise ValueError(f"preserve-reactive-rate: mu_prompt_tokens_s must be > 0, got {self.mu_prompt_tokens_s}")

    def utilisation(self, st) -> float:
        n = st.active
        if n == 0:
            return float("inf") if (st.queued or st.outstanding or st.prompt_token_rate > 0) else 0.0
        return st.prompt_token_rate / (n * self.mu_prompt_tokens_s)


#: the Reactive baseline's readings (the first is the default; module doc)
REACTIVE_SIGNALS = ("kv", "rate")


def reactive_controller(options: dict) -> ReactiveAutoscaler:
    """The Reactive baseline with ``options`` (``metric: rate`` -> :class:`RateReactive`, else the
    shared ``reactive`` controller)."""
    if options.get("metric") == "rate":
        return RateReactive(**options)
    return ReactiveAutoscaler(**options)


__all__ = ["REACTIVE_SIGNALS", "HybridScaler", "PreServeScaler", "ProactiveScaler", "RateReactive", "instance_count",
           "kv_projection", "overloaded", "reactive_controller"]
