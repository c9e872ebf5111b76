"""The Dynamo + vLLM baseline of OServe's Fig 18 (§6.2, App. H; spec §2 baseline 4), in the simulator.

What the paper says of it: "autoscales prefill/decoding workers with KV-aware scheduling", and it
"fixes per-worker parallelism". The paper gives no configuration beyond "we optimize the model
deployment for each baseline" (spec risk 14), so this is our reading:

- Workers: ``gpus / shape.gpus`` vLLM workers of ONE fixed shape, each a prefill or a decode worker
  (``InstanceConfig.role``). The shape is the best homogeneous one for disaggregated serving: every
  valid (TP, PP) shape that gives >= 2 workers is scored by ``split_alpha`` on each span of the
  trace's true load, and the shape with the largest worst-span headroom wins (as vLLM static's
  grid search, but on a P/D capacity model); the first span's best split is the starting split.
- Capacity model (``worker_caps``): a prefill worker's prompt tokens/s at full prefill batches of
  the span's mean prompt; a decode worker's output tokens/s at the batch its KV holds (mean
  prompt + output per sequence, at most vLLM's max_num_seqs), both from the step-time model the
  workers run. A span needs ``prompt tokens/s / prefill cap`` prefill and ``output tokens/s /
  decode cap`` decode workers; ``split_alpha`` is the best split's min(n_P/need_P, n_D/need_D).
- Planner (``planner_step``): at every span boundary (Dynamo's adjustment interval = OServe's 1-min
  span) it reads the load of the span just ended (request count, prompt and output tokens: what
  Dynamo's SLA planner observes at the frontend; the planner is reactive, it does not see the
  coming span) and moves ONE worker toward the best split for it (±1 per span). The moved worker is
  the one of the losing pool with the fewest requests in hand; it drains (its queue goes back to
  its pool, its running requests finish) and then comes back in the other role after a reload
  (``switching.reload_switch_s``: engine restart + weights from storage; a Dynamo worker is a new
  process). A pool never drops below one serving worker (a move that would is deferred).
- Routing: prefill requests join the prefill worker with the fewest pending prompt tokens (Dynamo
  queues prefills for free workers); after its prefill a request's decode worker is picked at once
  by KV-aware routing, the one with the most free KV (``servesim.sim`` router ``most-free-kv``).
  Dynamo's KV router also scores prefix overlap; our traces carry no prompts, so no prefix ever
  overlaps and the score reduces to the free KV.
- KV hand-off (``kv_handoff_s``): the prompt's KV bytes over the link between the two workers:
  NVLink (``switching.NVLINK_BPS``, 400 GB/s) when both sit on the same node, else InfiniBand
  (``switching.IB_BPS``, 200 GB/s); the decode worker pulls it (``Cluster(kv_link_s=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ...catalog import get_model
from ...sim import PRIO_CONTROL, Cluster
from . import switching as SW
from .replica import DEFAULT_BACKEND, GPU, Shape, instance_config, kv_tokens, step_model, strategies
from .search import place

PREFILL_ROUTER = "jsq-tokens"
DECODE_ROUTER = "most-free-kv"


# ---- the capacity model and the planner ------------------------------------------------------------

def worker_caps(model: str, shape: Shape, prompt_mean: float, output_mean: float, backend: str = DEFAULT_BACKEND,
                hardware: str = GPU) -> tuple[float, float]:
    """(prefill prompt tokens/s, decode output tokens/s) of one worker of ``shape`` at these means."""
    cfg = instance_config(model, shape, hardware)
    sm = step_model(model, shape, hardware, backend)
    L = max(1.0, float(prompt_mean))
    k = max(1, int(cfg.max_num_batched_tokens // L))  # whole prompts per prefill batch
    pre = k * L / float(sm.step_time(k * L, k * L * L, 0, 0))
    seq = L + max(1.0, float(output_mean))
    B = max(1, min(cfg.max_num_seqs, int(kv_tokens(model, shape, hardware) // seq)))
    ctx = L + max(1.0, float(output_mean)) / 2.0  # mean context over a sequence's decode
    dec = B / float(sm.step_time(0, 0, B, B * ctx))
    return pre, dec


def split_alpha(n_workers: int, need_p: float, need_d: float) -> tuple[int, float]:
    """(prefill workers, headroom α) of the best split of ``n_workers`` for a load needing ``need_p``
    prefill and ``need_d`` decode workers: α = max over n_P in 1..n-1 of min(n_P/need_p, n_D/need_d)
    (ties: fewer prefill workers)."""
    if n_workers < 2:
        raise ValueError(f"P/D disaggregation needs >= 2 workers, got {n_workers}")
    best = (1, -np.inf)
    for n_p in range(1, n_workers):
        a = min(n_p / need_p if need_p > 0 else np.inf, (n_workers - n_p) / need_d if need_d > 0 else np.inf)
        if a > best[1]:
            best = (n_p, a)
    return best


def planner_step(n_prefill: int, target: int, n_workers: int) -> int:
    """Dynamo's ±1 adjustment: one worker toward ``target``, keeping >= 1 worker in each pool."""
    step = int(np.sign(target - n_prefill))
    return int(min(max(n_prefill + step, 1), n_workers - 1))


def plan_counts(targets, n_start: int, n_workers: int) -> list[int]:
    """Prefill workers per span when every ±1 move happens: span 0 starts at ``n_start``; span s
    moves toward ``targets[s]`` (the split the planner derived from span s-1)."""
    out = [int(n_start)]
    for t in list(targets)[1:]:
        out.append(planner_step(out[-1], int(t), n_workers))
    return out


def kv_handoff_s(tokens: float, kv_bytes_per_token: float, same_node: bool, nvlink_bps: float = SW.NVLINK_BPS,
                 ib_bps: float = SW.IB_BPS) -> float:
    """Seconds to move ``tokens`` tokens of KV from a prefill to a decode worker."""
    return float(tokens) * kv_bytes_per_token / (nvlink_bps if same_node else ib_bps)


def span_loads(wl: pd.DataFrame, n_spans: int, span_s: float) -> pd.DataFrame:
    """Per span: requests, prompt tokens and output tokens arrived (what the planner observes)."""
    s = np.minimum((wl["arrival_s"].to_numpy(float) // span_s).astype(np.int64), n_spans - 1)
    out = pd.DataFrame({"requests": np.bincount(s, minlength=n_spans).astype(float),
                        "prompt": np.bincount(s, wl["prompt_tokens"].to_numpy(float), n_spans),
                        "output": np.bincount(s, wl["output_tokens"].to_numpy(float), n_spans)})
    return out


def needs(model: str, shape: Shape, loads: pd.DataFrame, span_s: float, backend: str = DEFAULT_BACKEND) -> np.ndarray:
    """spans x 2: prefill and decode workers of ``shape`` each span's load needs (NaN: no request)."""
    out = np.full((len(loads), 2), np.nan)
    for s, row in enumerate(loads.itertuples()):
        if row.requests <= 0:
            continue
        pre, dec = worker_caps(model, shape, row.prompt / row.requests, row.output / row.requests, backend)
        out[s] = (row.prompt / span_s / pre, max(row.output - row.requests, 0.0) / span_s / dec)
    return out


def shape_options(model: str, gpus: int, max_pp: int = 8) -> list[Shape]:
    """Homogeneous worker shapes that fill ``gpus`` with >= 2 workers."""
    out = []
    for d in range(1, gpus // 2 + 1):
        if gpus % d == 0:
            for s in strategies(model, d, max_pp=max_pp):
                placed = place([s] * (gpus // d), gpus)
                if placed is not None:
                    out.append(s)
    return out


def choose_shape(model: str, gpus: int, loads: pd.DataFrame, span_s: float, backend: str = DEFAULT_BACKEND,
                 max_pp: int = 8) -> tuple[Shape, float]:
    """The worker shape with the largest worst-span headroom α (ties: the first, i.e. fewer GPUs)."""
    best = None
    for s in shape_options(model, gpus, max_pp):
        nd = needs(model, s, loads, span_s, backend)
        ok = ~np.isnan(nd[:, 0])
        a = min((split_alpha(gpus // s.gpus, p, d)[1] for p, d in nd[ok]), default=np.inf)
        if best is None or a > best[1]:
            best = (s, a)
    if best is None:
        raise ValueError(f"{model} has no worker shape giving >= 2 workers on {gpus} GPUs")
    return best


# ---- serving ---------------------------------------------------------------------------------------

@dataclass
class DynamoSetup:
    model: str
    gpus: int
    shape: Shape
    alpha: float                       # the shape's worst-span headroom (true load)
    n_workers: int
    targets: list[int]                 # split the planner aims at in each span (from the span before)
    n_start: int
    span_s: float
    backend: str = DEFAULT_BACKEND
    placed: tuple = ()                 # workers laid out on GPU ids (switching.layout)
    actual: list = field(default_factory=list)  # prefill workers after each span's move (serve fills it)

    def summary(self) -> dict:
        return {"shape": self.shape.label(), "workers": self.n_workers, "alpha_worst_span": self.alpha,
                "prefill_workers_start": self.n_start, "prefill_workers_planned": plan_counts(self.targets, self.n_start, self.n_workers),
                "prefill_workers": self.actual, "prefill_router": PREFILL_ROUTER, "decode_router": DECODE_ROUTER}


def prepare(model: str, gpus: int, wl: pd.DataFrame, n_spans: int, span_s: float, *, backend: str = DEFAULT_BACKEND,
            max_pp: int = 8) -> DynamoSetup:
    """Pick the worker shape and the starting split; derive each span's planner target."""
    loads = span_loads(wl, n_spans, span_s)
    shape, alpha = choose_shape(model, gpus, loads, span_s, backend, max_pp)
    n = gpus // shape.gpus
    nd = needs(model, shape, loads, span_s, backend)
    best = [split_alpha(n, p, d)[0] if not np.isnan(p) else None for p, d in nd]
    first = next((b for b in best if b is not None), 1)
    targets, last = [first], first
    for s in range(1, n_spans):  # the planner sees the span that just ended
        last = best[s - 1] if best[s - 1] is not None else last
        targets.append(last)
    placed = SW.layout([shape] * n, gpus)
    return DynamoSetup(model, gpus, shape, float(alpha), n, targets, first, span_s, backend, placed)


def serve(setup: DynamoSetup, wl: pd.DataFrame, types: np.ndarray, *, restart_s: float = SW.RESTART_S,
          hardware: str = GPU) -> tuple[pd.DataFrame, list[dict]]:
    """Serve ``wl`` on the P/D workers with the planner's moves; (per-request table, moves)."""
    st, model = setup, setup.model
    cfg = instance_config(model, st.shape, hardware)
    sm = step_model(model, st.shape, hardware, st.backend)
    kvb = get_model(model).kv_bytes_per_token(get_model(model).dtype_bytes)
    same_node = SW.same_node(st.placed)
    reload_s = [SW.reload_switch_s(SW.SwitchPlan(changed=(p,)), model, restart_s) for p in st.placed]
    roles = ["prefill" if w < st.n_start else "decode" for w in range(st.n_workers)]
    worker_of = list(range(st.n_workers))        # instance index -> worker
    inst_of = list(range(st.n_workers))          # worker -> its current instance
    state = ["up"] * st.n_workers                # up | draining | joining
    gen = [0] * st.n_workers

    def link(r, a, b) -> float:
        return kv_handoff_s(r.computed, kvb, same_node(worker_of[a], worker_of[b]))

    cl = Cluster([replace(cfg, role=roles[w]) for w in range(st.n_workers)], [sm] * st.n_workers,
                 router=PREFILL_ROUTER, decode_router=DECODE_ROUTER, kv_link_s=link,
                 names=[f"w{w}{roles[w][0].upper()}0" for w in range(st.n_workers)])
    moves: list[dict] = []
    st.actual = [st.n_start]

    def come_back(w: int, new_role: str, rec: dict):
        def cb(_j: int, t: float) -> None:
            gen[w] += 1
            rec["drained_s"] = t
            j = cl.add_instance(replace(cfg, role=new_role), sm, name=f"w{w}{new_role[0].upper()}{gen[w]}",
                                at=t + reload_s[w])
            worker_of.append(w)
            inst_of[w] = j
            cl.kernel.at(t + reload_s[w], lambda _: state.__setitem__(w, "up"), None, PRIO_CONTROL)
        return cb

    def control(s: int) -> None:
        n_p = sum(r == "prefill" for r in roles)
        want = planner_step(n_p, st.targets[s], st.n_workers)
        if want != n_p:
            lose = "prefill" if want < n_p else "decode"
            up = [w for w in range(st.n_workers) if roles[w] == lose and state[w] == "up"]
            if len(up) >= 2:  # a pool keeps one serving worker
                w = min(up, key=lambda w: (cl.instances[inst_of[w]].outstanding, w))
                new = "decode" if lose == "prefill" else "prefill"
                roles[w], state[w] = new, "draining"
                rec = {"span": s, "from": f"{n_p}P+{st.n_workers - n_p}D", "to": f"{want}P+{st.n_workers - want}D",
                       "switch_s": reload_s[w], "transfer_s": 0.0, "bytes_nvlink": 0.0, "bytes_ib": 0.0,
                       "replicas_changed": 1, "replicas_kept": st.n_workers - 1, "worker": w, "drained_s": np.nan}
                moves.append(rec)
                cl.drain(inst_of[w], requeue=True, on_stopped=come_back(w, new, rec))
        st.actual.append(sum(r == "prefill" for r in roles))

    n_spans = len(st.targets)
    for s in range(1, n_spans):
        cl.kernel.at(s * st.span_s, lambda s: control(s), s, PRIO_CONTROL)
    base = wl.assign(model=pd.Categorical([model] * len(wl)))
    res = cl.run(base)
    df = res.requests.sort_values("request_id", kind="stable").reset_index(drop=True)
    rid = df["request_id"].to_numpy()
    arrival = wl["arrival_s"].to_numpy(float)
    df["arrival_s"] = arrival[rid]
    df["span"] = np.minimum((arrival[rid] // st.span_s).astype(np.int64), n_spans - 1)
    df["type"] = np.asarray(types)[rid]
    df["wait_s"] = 0.0
    df["shape"] = st.shape.label()
    df["migrated"] = False
    return df, moves
