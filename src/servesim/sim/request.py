"""The per-request record an instance works on (compact: ``__slots__``, no dicts).

Token accounting follows vLLM: a request has ``prompt`` tokens and wants ``output`` tokens.
``computed`` tokens have their KV in the cache. A prefill computes prompt (+ already generated,
after a recompute preemption) tokens; the iteration that completes it samples one output token.
Each decode iteration feeds the last sampled token (one new KV slot) and samples the next. So
while decoding, ``computed == prompt + generated - 1``, and the request finishes in the iteration
that samples its ``output``-th token (the last token never enters the KV cache).
A request with ``output == 0`` is prefill-only: it finishes when its prefill completes.
"""

from __future__ import annotations

import math

# lifecycle states (``Req.state``)
NEW = 0          # created, not yet at an instance
WAITING = 1      # in an instance's waiting queue (or parked for another model)
RUNNING = 2      # admitted to the running batch (prefilling or decoding)
FINISHED = 3     # terminal: all output tokens produced
REJECTED = 4     # terminal: can never run (reason set)
SWAPPED = 5      # KV swapped out to host memory (model switching)
TRANSFER = 6     # KV in flight between instances (P/D disaggregation)
DROPPED = 7      # terminal: removed by a control action (reason set); reported as "error"

TERMINAL = (FINISHED, REJECTED, DROPPED)


class Req:
    """One request's live state. Results are copied into a :class:`~servesim.sim.request_log.RequestLog`.

    Attributes (times in seconds; NaN when not yet known):
      idx: row index in the workload (the log's index); rid: workload request_id.
      arrival, prompt, output, model: from the workload.
      state: lifecycle state (module constants); reason: why rejected/dropped ("" otherwise).
      generated: output tokens sampled so far; computed: tokens whose KV is cached;
      held: KV blocks held (for decoding requests in fast mode this is derived, see Instance).
      sched_t: first admission to a running batch; first_t: first token; last_t: last token.
      finish_t: terminal time. preemptions: recompute preemptions suffered.
      inst: index of the instance now holding it (-1 none). kv_ready: arrives with its KV
      (P/D hand-off or swap-in) so no prefill is needed.
      pred: predicted output tokens (-1: no prediction). Policies that must not see the true
      ``output`` (a router using a length predictor) read this instead.
      cls: the request's class (an int from ``Cluster.run(classes=...)``, e.g. a workload type;
      -1: none), for routers that route by class (``servesim.sim.routers.WeightedRouter``).
      tier / deadline: the workload's tier (as its rank, -1 none) and ``deadline_s``, for queue
      orders (``servesim.sim.queue_orders``); set only where an instance orders its queue.
    """

    __slots__ = (
        "idx", "rid", "arrival", "prompt", "output", "model", "state", "reason",
        "generated", "computed", "held", "sched_t", "first_t", "last_t", "finish_t",
        "preemptions", "inst", "kv_ready", "adm", "c0", "d0", "hkey", "fin", "gaps", "stints",
        "prefill_inst", "tag", "dec", "pred", "cls", "tier", "deadline",
    )

    def __init__(self, idx: int, arrival: float, prompt: int, output: int,
                 model: str = "default", rid: int | None = None) -> None:
        self.idx = idx
        self.rid = idx if rid is None else rid
        self.arrival = arrival
        self.prompt = prompt
        self.output = output
        self.model = model
        self.state = NEW
        self.reason = ""
        self.generated = 0
        self.computed = 0
        self.held = 0
        self.sched_t = math.nan
        self.first_t = math.nan
        self.last_t = math.nan
        self.finish_t = math.nan
        self.preemptions = 0
        self.inst = -1
        self.kv_ready = False
        self.adm = 0        # admission order number on its current instance
        self.c0 = 0         # fast decode bookkeeping: computed at decode-step d0
        self.d0 = 0
        self.hkey = 0       # block-phase key
        self.fin = 0        # decode-step count after its last decode iteration
        self.gaps = None    # list of individual TBT gaps (None: none yet)
        self.stints = None  # list of (d_start, d_end) decode-iteration ranges on the instance's log
        self.prefill_inst = -1  # P/D: instance that ran the prefill
        self.tag = None     # free slot for policies / fleet layer
        self.dec = False    # member of its instance's decode set
        self.pred = -1      # predicted output tokens (-1: none given)
        self.cls = -1       # request class (-1: none given)
        self.tier = -1      # workload tier's rank (sim.queue_orders.TIER_RANK; -1: none given)
        self.deadline = math.nan  # the workload's deadline_s (NaN: none)

    @property
    def num_tokens(self) -> int:
        """Prompt plus generated tokens (what a recompute prefill must compute)."""
        return self.prompt + self.generated

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (f"Req(idx={self.idx}, P={self.prompt}, O={self.output}, state={self.state}, "
                f"gen={self.generated}, comp={self.computed})")
