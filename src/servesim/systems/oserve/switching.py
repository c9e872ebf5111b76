"""OServe's switch planner (§5.2, App. F, Alg. 2) as a cost model: which GPU sends which parameter
shard to which GPU when the deployment changes, and how long the switch takes.

Layout: a deployment is laid out on GPU ids (node = id // 8). ``layout`` keeps every replica whose
shape is unchanged on its old GPUs (it keeps serving, §5.2) and places the others on the free GPUs,
one node when the replica fits one, else (PP only) one stage per node.

Shards: GPU g of a (tp, pp) replica, stage s, TP rank r holds layers [s/pp, (s+1)/pp) of the model
and slice [r/tp, (r+1)/tp) of each layer (fractions of the weights). Cutting the layer axis at every
stage boundary and the slice axis at every rank boundary of both deployments gives atomic pieces of
``layer fraction x slice fraction x weight bytes``; a target GPU needs the pieces of its region it
does not hold already. Alg. 2: for each needed piece, the holders on the target's node first, else
any holder; among them the one that has sent the least so far (the prose's per-source reading; the
pseudo-code's per-(source, target) counter is ``per_pair=True``; spec §1.7 [A]).

Time: per GPU, bytes over NVLink / 400 GB/s + bytes over InfiniBand / 200 GB/s, for its sends and
its receives; the transfer takes the slowest GPU's max(send, receive). An ad hoc switch =
``restart_s`` (engine re-initialisation, which the paper's "about 10 s in any case" is dominated by;
imposed, not derived: spec §6 risk 13) + the transfer. A naive reload = ``restart_s`` + every changed
replica's weights read from storage at ``storage_bps`` per node.

KV at a switch (§5.2): short-output requests drain on their source replica; long-output requests'
KV moves with the same greedy rule in layer-aligned chunks into buffers with +10-20 % headroom
(``kv_migration_s``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ...catalog import get_model
from .replica import GPUS_PER_NODE, Shape

RESTART_S = 9.0          # [R] engine re-init; makes an ad hoc switch ~10 s (§5.2, §6.3)
STORAGE_BPS = 2.5e9      # [R] weight loading from storage per node (spec §1.7: a 66B reload > 50 s)
NVLINK_BPS = 400e9       # §5.2 / §6.1
IB_BPS = 200e9


def same_node(placed, per_node: int = GPUS_PER_NODE):
    """``same(i, j)``: replicas ``i`` and ``j`` of a layout sit on one node together (their KV
    moves over NVLink), else it crosses InfiniBand."""
    nodes = [{g // per_node for g in p.gpus} for p in placed]
    return lambda i, j: len(nodes[i] | nodes[j]) == 1


def link_bps(placed, nvlink_bps: float = NVLINK_BPS, ib_bps: float = IB_BPS):
    """Bytes/s between replicas ``i`` and ``j`` of a layout: NVLink within one node, else IB."""
    same = same_node(placed)
    return lambda i, j: nvlink_bps if same(i, j) else ib_bps


@dataclass(frozen=True)
class Placed:
    """A replica laid out on GPU ids (stage-major: gpus[s * tp + r] is stage s, TP rank r)."""

    shape: Shape
    gpus: tuple[int, ...]

    def regions(self):
        """(gpu, layer interval, slice interval) of each GPU, as Fractions of the whole model."""
        tp, pp = self.shape.tp, self.shape.pp
        for i, g in enumerate(self.gpus):
            s, r = divmod(i, tp)
            yield g, (Fraction(s, pp), Fraction(s + 1, pp)), (Fraction(r, tp), Fraction(r + 1, tp))


def _take(free: list[set], shape: Shape, per_node: int) -> tuple[int, ...] | None:
    fit = [n for n, f in enumerate(free) if len(f) >= shape.gpus]
    if fit:
        n = min(fit, key=lambda n: (len(free[n]), n))  # best fit keeps big holes for big replicas
        got = sorted(free[n])[: shape.gpus]
        free[n] -= set(got)
        return tuple(got)
    if shape.pp == 1:
        return None
    got = []
    for _ in range(shape.pp):  # one stage per node, the nodes with the most room first
        n = max(range(len(free)), key=lambda n: (len(free[n]), -n))
        if len(free[n]) < shape.tp:
            return None
        stage = sorted(free[n])[: shape.tp]
        free[n] -= set(stage)
        got += stage
    return tuple(got)


def layout(shapes, total_gpus: int, previous: tuple[Placed, ...] = (), per_node: int = GPUS_PER_NODE) -> tuple[Placed, ...]:
    """Lay ``shapes`` out on GPUs 0..total-1, keeping replicas of ``previous`` whose shape recurs.

    Keeping old replicas in place can fragment the nodes so that a new replica no longer fits (on 32
    GPUs a TP2 left with one free GPU on each of two nodes): then the deployment is laid out afresh,
    and ``plan`` still keeps every replica that lands on its old GPUs."""
    try:
        return _layout(shapes, total_gpus, previous, per_node)
    except ValueError:
        if not previous:
            raise
        return _layout(shapes, total_gpus, (), per_node)


def _layout(shapes, total_gpus: int, previous: tuple[Placed, ...], per_node: int) -> tuple[Placed, ...]:
    nodes = -(-total_gpus // per_node)
    free = [set(range(n * per_node, min((n + 1) * per_node, total_gpus))) for n in range(nodes)]
    todo = sorted(shapes, key=lambda s: (-s.gpus, -s.tp, s.pp, s.cross_node))
    out = []
    for p in previous:  # unchanged replicas stay where they are
        key = next((s for s in todo if (s.tp, s.pp) == (p.shape.tp, p.shape.pp)), None)
        if key is not None and all(any(g in f for f in free) for g in p.gpus):
            todo.remove(key)
            for g in p.gpus:
                free[g // per_node].discard(g)
            out.append(Placed(Shape(key.tp, key.pp, len({g // per_node for g in p.gpus}) > 1), p.gpus))
    for s in todo:
        got = _take(free, s, per_node)
        if got is None:
            raise ValueError(f"layout: {s.label()} does not fit the free GPUs {sorted(set().union(*free))}")
        out.append(Placed(Shape(s.tp, s.pp, len({g // per_node for g in got}) > 1), got))
    return tuple(sorted(out, key=lambda p: p.gpus))


@dataclass
class SwitchPlan:
    transfers: list = field(default_factory=list)   # (gpu_from, gpu_to, bytes, "nvlink" | "ib")
    kept: tuple = ()                                # replicas that keep serving
    changed: tuple = ()                             # new replicas (restart + receive)
    bytes_nvlink: float = 0.0
    bytes_ib: float = 0.0
    transfer_s: float = 0.0

    @property
    def bytes_total(self) -> float:
        return self.bytes_nvlink + self.bytes_ib


def _cuts(intervals) -> list[Fraction]:
    return sorted({x for a, b in intervals for x in (a, b)})


def plan(source: tuple[Placed, ...], target: tuple[Placed, ...], model: str, *, per_node: int = GPUS_PER_NODE,
         nvlink_bps: float = NVLINK_BPS, ib_bps: float = IB_BPS, per_pair: bool = False) -> SwitchPlan:
    """Alg. 2's greedy shard plan from ``source`` to ``target`` (see the module docstring)."""
    W = float(get_model(model).param_bytes)
    src_set = set(source)
    kept = tuple(p for p in target if p in src_set)
    changed = tuple(p for p in target if p not in src_set)
    held = [(g, L, S) for p in source for g, L, S in p.regions()]
    need = [(g, L, S) for p in changed for g, L, S in p.regions()]
    lcuts = _cuts([L for _, L, _ in held + need])
    scuts = _cuts([S for _, _, S in held + need])
    sent: dict = {}
    res = SwitchPlan(kept=kept, changed=changed)
    recv: dict[int, list[float]] = {}
    send: dict[int, list[float]] = {}
    for t, (l0, l1), (s0, s1) in need:
        for la, lb in zip(lcuts, lcuts[1:]):
            if la < l0 or lb > l1:
                continue
            for sa, sb in zip(scuts, scuts[1:]):
                if sa < s0 or sb > s1:
                    continue
                holders = [g for g, (h0, h1), (k0, k1) in held if h0 <= la and lb <= h1 and k0 <= sa and sb <= k1]
                if t in holders or not holders:
                    continue  # already on the target GPU (or, never here, held by no one)
                intra = [g for g in holders if g // per_node == t // per_node]
                cand = intra or holders
                s_star = min(cand, key=lambda g: (sent.get((g, t) if per_pair else g, 0.0), g))
                nbytes = float((lb - la) * (sb - sa)) * W
                sent[(s_star, t) if per_pair else s_star] = sent.get((s_star, t) if per_pair else s_star, 0.0) + nbytes
                link = "nvlink" if intra else "ib"
                res.transfers.append((s_star, t, nbytes, link))
                if intra:
                    res.bytes_nvlink += nbytes
                else:
                    res.bytes_ib += nbytes
                bw = nvlink_bps if intra else ib_bps
                recv.setdefault(t, [0.0])[0] += nbytes / bw
                send.setdefault(s_star, [0.0])[0] += nbytes / bw
    res.transfer_s = max([v[0] for v in recv.values()] + [v[0] for v in send.values()] + [0.0])
    return res


def adhoc_switch_s(p: SwitchPlan, restart_s: float = RESTART_S) -> float:
    """An ad hoc switch's duration for the changed replicas (0 when nothing changes)."""
    return restart_s + p.transfer_s if p.changed else 0.0


def reload_switch_s(p: SwitchPlan, model: str, restart_s: float = RESTART_S, storage_bps: float = STORAGE_BPS,
                    per_node: int = GPUS_PER_NODE) -> float:
    """A naive reload's duration: every changed replica reads its weights from storage (per node)."""
    if not p.changed:
        return 0.0
    W = float(get_model(model).param_bytes)
    per = {}
    for r in p.changed:
        for g in r.gpus:
            per[g // per_node] = per.get(g // per_node, 0.0) + W / r.shape.gpus
    return restart_s + max(per.values()) / storage_bps


def kv_migration_s(kv_bytes: float, intra_node: bool = True, headroom: float = 0.15,
                   nvlink_bps: float = NVLINK_BPS, ib_bps: float = IB_BPS) -> tuple[float, float]:
    """(seconds, buffer bytes) to move ``kv_bytes`` of long-output KV into a buffer with ``headroom``."""
    return kv_bytes / (nvlink_bps if intra_node else ib_bps), kv_bytes * (1.0 + headroom)
