"""SageServe's control-plane parameters: the paper's text as defaults, the authors' code as a preset.

Every paper-vs-code difference of spec §1.7 / §6.3 is a field here, so a run names the reading
that produced its numbers (``SageServeConfig.paper()`` vs ``SageServeConfig.code()``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from ...errors import InputError

STRATEGIES = ("siloed", "reactive", "lt_i", "lt_u", "lt_ua", "chiron")
TIER_POLICIES = ("fcfs", "edf", "pf", "dpa")
#: "none": the engine's own FIFO queue (no tier ordering)
TIER_CHOICES = ("none",) + TIER_POLICIES
#: instance step-time sources (see instance_models.py)
HARDWARE_CHOICES = ("default", "a100-80gb", "h100-80gb")
FORECAST_MODES = ("rolling", "insample", "oracle")


class ConfigError(InputError):
    """A wrong key or value in a SageServe config; the message names the key."""


@dataclass(frozen=True)
class SageServeConfig:
    # --- routing (J §6.1) ---
    iw_region_gate: float = 0.70          # first preferred region with effective memory util below this
    reroute_lt: bool = True               # code: LT runs never reroute IW across regions (no_reroute)
    global_routing_delay_s: float = 0.0   # code: constant 1 s; paper: measured inter-region latency
    inter_region_latency_s: float = 0.05  # an IW request sent to another region (paper: ~50 ms typical)
    # --- NIW queue manager (J §6.2) ---
    niw_release_one_below: float = 0.60   # util < 60 % -> release 1 request
    niw_release_two_below: float = 0.50   # util < 50 % -> release 2
    niw_release_rule: str = "paper"       # "paper" | "code" (code: (0.5, 0.6] -> 2, <= 0.5 -> 1, on every completion)
    niw_release_route: str = "endpoint"   # "endpoint": to the signalling (model, region) endpoint (paper);
                                          # "global": back through the global IW router (code's feed_async)
    niw_deadline_s: float = 86_400.0      # 24 h; sets every NIW request's deadline_s in a run
    niw_deadline_enforce: bool = True     # paper: NIW still waiting (queue manager, or queued not started in an
                                          # instance) at the deadline ends "timeout"; code: never expires, leftovers dropped
    niw_priority_bump_s: float = 36_000.0  # age > 10 h -> priority 0 (as IW)
    niw_queue: bool = True                # hold NIW in the queue manager (False: route on arrival)
    niw_signal_period_s: float = 1.0      # endpoints also signal on this period (besides every completion)
    niw_chunk_tokens: int | None = 4096   # J §6.2: NIW work is chunked into fixed-size jobs "comparable to other
                                          # workload tiers"; the paper gives no size: 4096 prompt tokens, the
                                          # largest IW prompt median of the four models (Bloom's 4000) rounded up
                                          # to a power of two, so no chunk exceeds a typical IW prompt of any model
                                          # (niw_chunks.py). None: whole prompts (the authors' code, ORCA)
    # --- scaling thresholds ---
    reactive_scale_out: float = 0.70      # code: 0.5
    reactive_scale_in: float = 0.30       # code: 0.25
    lt_u_scale_out: float = 0.70          # code: 0.5
    lt_u_scale_in: float = 0.30           # code: 0.25
    lt_u_override_out: float | None = None  # code: 0.9 (one instance beyond the target; pending becomes -1)
    lt_scale_down: str = "deferred"       # "deferred" (paper) | "immediate" (code: ILP downs at the hour)
    cooldown_s: float = 15.0              # paper; code uses locks instead (below)
    reactive_count_starting: bool = False  # Reactive's KV utilisation also counts instances still starting as
                                          # empty capacity (dilutes it, so a boot is not re-triggered); paper: the
                                          # effective memory utilisation of the instances holding memory, the
                                          # 15-s cooldown as the only guard (R's instances start at once)
    reactive_interval_s: float = 5.0      # how often the reactive scaler checks (R scaling_interval; R's
                                          # default -1 = on every request has no periodic equivalent)
    use_locks: bool = False               # code: lock after a scale-up (reclaim / conversion), none after a
                                          # scale-in; Reactive then runs reactive.LockedReactive
    lock_reclaim_s: float = 65.0
    lock_conversion_s: float = 155.0
    # --- LT-UA (J §6.4) ---
    lt_ua_up_ratio: float = 5.0           # observed >= 5x forecast -> keep scaling up
    lt_ua_down_ratio: float | None = 0.5  # <= 0.5x -> keep scaling down (code: none)
    lt_ua_window_s: float | None = 1200.0  # only in the last 20 min of the hour (code: always)
    lt_ua_observed: str = "offered"       # "offered": the client region's IW prompt tokens of the last minute
                                          # (the load predictor's signal); "endpoint" (code): prompt tokens
                                          # that reached the endpoint in the last 60 s, NIW releases included
    # --- forecasting and ILP (J §5, §6.3) ---
    lt_interval_s: float = 3600.0
    forecast_mode: str = "rolling"        # "rolling" (paper text) | "insample" (code) | "oracle" (the coming
                                          # hour's true demand: a diagnostic reading, no forecaster has it)
    forecast_window_min: int = 60
    forecast_lo_min: int = 0              # code: max over [t+20, t+60] min
    forecast_hi_min: int = 60
    niw_buffer_beta: float = 0.10         # beta = 10 % of the past hour's NIW load
    niw_buffer_rule: str = "load"         # "load" (paper) | "max_prompt" (code: 0.1 x largest NIW prompt)
    epsilon: float = 1.0
    theta_source: str = "measured"        # J §5: theta_ik = the TPS one instance of model i provides, by benchmarking:
                                          # "measured" = one simulated instance's saturation throughput under the
                                          # run's engine (theta.measure_theta); "code" = the authors' absolute
                                          # 30 x 7516.67 = 225 500 tok/min (Llama-2; THETA_TOKENS_PER_MIN);
                                          # "sla" = the throughput one instance keeps within an IW TTFT SLA
                                          # (theta.measure_theta_sla: P95 TTFT <= theta_sla_ttft_s, J §3)
    theta_sla_ttft_s: float = 60.0        # the "sla" reading's bound: IW-N's < 1 min (IW-F's < 1 s is met by no
                                          # load: a Llama-2-70B instance's own P95 TTFT is 3.5 s on this workload)
    theta_sla_quantile: float = 0.95
    theta_headroom: float = 1.0           # sensitivity only: theta = headroom x the measured saturation ("measured"
                                          # source). 1.0 is the paper (its ILP has no headroom factor); the 0.5 of
                                          # earlier runs was the code's 30-per-minute factor on its own per-second
                                          # rating, not a fraction of a measured saturation
    ilp_global_constraint: bool = True    # code: only constraint (1)
    # --- fleet shape (J §4, §7.1) ---
    start_instances: int = 20             # per model per region (code: 8 for LT runs)
    siloed_iw_instances: int = 16
    siloed_niw_instances: int = 4
    min_per_deployment: int = 2
    max_per_deployment: int = 3
    min_per_endpoint: int = 2
    chiron_interactive: int = 10          # code: 20 / 10 / 10
    chiron_mixed: int = 5
    chiron_batch: int = 5
    chiron_theta: float = 0.6
    # --- instance performance (J §7.1 profiled on H100; J §4 / C / code: A100) ---
    hardware: str = "default"             # "default": the spec-quoted A100 linear fit; "a100-80gb" / "h100-80gb":
                                          # a fit to the Splitwise profile's rows of that GPU (App. A)
    # --- provisioning (J §4, §7.1) ---
    spot_switch_s: float = 60.0           # private <-> spot
    reclaim_median_s: float = 60.0
    reclaim_max_s: float = 300.0
    model_redeploy_s: float = 600.0       # VM changes model, weights local
    remote_weights_s: float = 7200.0
    delays_in_sim: bool = True            # code: instances usable at once; delays only in the waste metric
    scaling_level: int = 2                # 0 off, 1 same-model spot, 2 also convert other models' spot
                                          # (fleet pool_conversions = level >= 2; level 0 is not modelled)
    # --- cost (J §7.2.1) ---
    vm_price_per_hour: float = 98.32      # one 8xH100 cluster
    # --- instance scheduling (J §6.5) ---
    engine_policy: str = "orca"           # paper/code simulator: ORCA batching, KV reserved for prompt+output
                                          # at admission, no token cap; "vllm-v1": chunked prefill,
                                          # incremental KV (this package's first runs)
    tier_policy: str = "none"             # "none" (engine FIFO) | fcfs | edf | pf | dpa (Fig 15)
    dpa_tau_n_s: float = 10.0             # not given in the paper
    dpa_tau_p_s: float = 1.0              # not given in the paper
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        def bad(key, why):
            raise ConfigError(f"SageServeConfig.{key}: {why} (got {getattr(self, key)!r})")
        for k in ("iw_region_gate", "niw_release_one_below", "niw_release_two_below", "reactive_scale_out",
                  "reactive_scale_in", "lt_u_scale_out", "lt_u_scale_in", "niw_buffer_beta"):
            if not 0.0 <= getattr(self, k) <= 1.0:
                bad(k, "must be a fraction in [0, 1]")
        if self.reactive_scale_in >= self.reactive_scale_out:
            bad("reactive_scale_in", "must be below reactive_scale_out")
        if self.lt_u_scale_in >= self.lt_u_scale_out:
            bad("lt_u_scale_in", "must be below lt_u_scale_out")
        if not 0.0 < self.epsilon <= 1.0:
            bad("epsilon", "must be in (0, 1]")
        for k, allowed in (("niw_release_rule", ("paper", "code")), ("niw_release_route", ("endpoint", "global")),
                           ("lt_scale_down", ("deferred", "immediate")),
                           ("forecast_mode", FORECAST_MODES), ("niw_buffer_rule", ("load", "max_prompt")),
                           ("theta_source", ("measured", "code", "sla")),
                           ("tier_policy", TIER_CHOICES), ("engine_policy", ("orca", "vllm-v1")),
                           ("lt_ua_observed", ("offered", "endpoint")), ("hardware", HARDWARE_CHOICES)):
            if getattr(self, k) not in allowed:
                bad(k, f"must be one of {allowed}")
        if not self.theta_sla_ttft_s > 0:
            bad("theta_sla_ttft_s", "must be > 0 s")
        if not 0.0 < self.theta_sla_quantile < 1.0:
            bad("theta_sla_quantile", "must be in (0, 1)")
        if not 0.0 < self.theta_headroom <= 2.0:
            bad("theta_headroom", "must be in (0, 2] (a multiple of the measured saturation throughput)")
        if self.min_per_deployment > self.max_per_deployment:
            bad("min_per_deployment", "exceeds max_per_deployment")
        if self.reactive_interval_s <= 0:
            bad("reactive_interval_s", "must be > 0 (R's -1, every request, is not modelled)")
        if self.niw_signal_period_s <= 0:
            bad("niw_signal_period_s", "must be > 0")
        if self.niw_chunk_tokens is not None and self.niw_chunk_tokens < 1:
            bad("niw_chunk_tokens", "must be >= 1 tokens, or None (whole prompts)")
        if self.lt_ua_window_s is not None and not 0 < self.lt_ua_window_s <= self.lt_interval_s:
            bad("lt_ua_window_s", "must be in (0, lt_interval_s], or None (no gate: the authors' code)")
        if self.scaling_level not in (0, 1, 2):
            bad("scaling_level", "must be 0, 1 or 2")
        if not 0 <= self.forecast_lo_min < self.forecast_hi_min:
            bad("forecast_lo_min", "need 0 <= forecast_lo_min < forecast_hi_min")

    @classmethod
    def paper(cls, **overrides) -> "SageServeConfig":
        """The journal's text (the default)."""
        return cls.from_dict(overrides)

    def theta_reading(self) -> str:
        """Which reading of theta this config follows (recorded in run summaries)."""
        if self.theta_source == "code":
            return "code: the authors' absolute theta (225 500 tok/min for Llama-2)"
        if self.theta_source == "sla":
            return (f"sla: the throughput one instance keeps with P{100 * self.theta_sla_quantile:g} TTFT "
                    f"<= {self.theta_sla_ttft_s:g} s (J §5 benchmarked at an IW TTFT SLA of J §3)"
                    + ("" if self.theta_headroom == 1.0 else f", x {self.theta_headroom:g}"))
        if self.theta_headroom == 1.0:
            return "paper: one instance's measured saturation throughput (J §5)"
        return f"sensitivity: {self.theta_headroom:g} x one instance's measured saturation throughput"

    @classmethod
    def code(cls, **overrides) -> "SageServeConfig":
        """The authors' repository (spec §1.7 'code' column)."""
        base = dict(reroute_lt=False, global_routing_delay_s=1.0, niw_release_rule="code", niw_release_route="global",
                    reactive_scale_out=0.5, reactive_scale_in=0.25, lt_u_scale_out=0.5, lt_u_scale_in=0.25,
                    lt_u_override_out=0.9, lt_scale_down="immediate", use_locks=True, cooldown_s=0.0,
                    lt_ua_down_ratio=None, niw_deadline_enforce=False, lt_ua_window_s=None, lt_ua_observed="endpoint",
                    forecast_mode="insample", niw_chunk_tokens=None,
                    forecast_lo_min=20, niw_buffer_rule="max_prompt", ilp_global_constraint=False,
                    theta_source="code", start_instances=8, chiron_interactive=20, chiron_mixed=10, chiron_batch=10,
                    delays_in_sim=False, meta={"preset": "code"})
        base.update(overrides)
        return cls.from_dict(base)

    @classmethod
    def from_dict(cls, d: dict) -> "SageServeConfig":
        """Build from a mapping; an unknown key is an error naming it."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"SageServeConfig: unknown key(s) {unknown}; known: {sorted(known)}")
        return cls(**d)

    def with_(self, **kw) -> "SageServeConfig":
        return replace(self, **kw)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("meta")
        return d
