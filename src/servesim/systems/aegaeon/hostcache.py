"""The node's unified CPU KV cache with slab allocation (§5.2 (iv), Fig 16).

Host memory is carved into slabs (``slab_bytes``, 1 GiB in the artifact); a slab holds blocks of a
single shape (one per checkpoint: 16 tokens x that model's KV bytes per token) and is returned
when it empties. A request's KV occupies ceil(tokens / 16) blocks while it is on the host (after
its prefill and between decode turns). Freed blocks go on a move list and return to their slab
only at the next tick of a daemon of period ``move_period_s`` (the artifact checks every 8 s
that their transfer finished; 0 frees at once).

Fragmentation (Fig 16) = free blocks inside allocated slabs, as a share of the peak allocated
slab memory; `report` gives, per shape and for all, the utilised and fragmented shares at the
moment the allocated memory peaked.
"""

from __future__ import annotations

import math


class SlabCache:
    def __init__(self, slab_bytes: float = 2**30, n_slabs: int = 256, move_period_s: float = 8.0):
        self.slab_bytes, self.n_slabs, self.move_period_s = float(slab_bytes), n_slabs, move_period_s
        self.slabs: dict[int, list] = {}      # id -> [shape, capacity, used]
        self._next = 0
        self.by_shape: dict[str, list[int]] = {}
        self.held: dict[int, list[tuple[int, int]]] = {}   # request id -> [(slab, blocks)]
        self.moving: list[tuple[int, int]] = []            # freed, waiting for the daemon
        self.overflow_blocks = 0                           # blocks that found no slab (cache full)
        self.peak_bytes = 0.0
        self.at_peak: dict = {}
        self._last_tick = 0.0

    def _tick(self, now: float) -> None:
        if self.move_period_s <= 0:
            return
        tick = math.floor(now / self.move_period_s) * self.move_period_s
        if tick > self._last_tick:
            self._last_tick = tick
            self._release(self.moving)
            self.moving = []

    def _release(self, parts) -> None:
        for sid, n in parts:
            s = self.slabs[sid]
            s[2] -= n
            if s[2] == 0:  # empty slabs go back to the pool
                del self.slabs[sid]
                self.by_shape[s[0]].remove(sid)

    def alloc(self, rid: int, shape: str, block_bytes: float, blocks: int, now: float) -> None:
        self._tick(now)
        cap = int(self.slab_bytes // block_bytes)
        if cap < 1:
            raise ValueError(f"slab cache: a {block_bytes:.0f}-byte block does not fit a {self.slab_bytes:.0f}-byte slab")
        parts = self.held.setdefault(rid, [])
        need = blocks
        for sid in self.by_shape.setdefault(shape, []):
            s = self.slabs[sid]
            k = min(need, s[1] - s[2])
            if k > 0:
                s[2] += k
                parts.append((sid, k))
                need -= k
            if need == 0:
                break
        while need > 0:
            if len(self.slabs) >= self.n_slabs:
                self.overflow_blocks += need
                break
            sid, self._next = self._next, self._next + 1
            k = min(need, cap)
            self.slabs[sid] = [shape, cap, k]
            self.by_shape[shape].append(sid)
            parts.append((sid, k))
            need -= k
        self._observe()

    def free(self, rid: int, now: float) -> None:
        self._tick(now)
        parts = self.held.pop(rid, [])
        if self.move_period_s <= 0:
            self._release(parts)
        else:
            self.moving.extend(parts)

    def _observe(self) -> None:
        alloc = len(self.slabs) * self.slab_bytes
        if alloc > self.peak_bytes:
            self.peak_bytes = alloc
            per: dict[str, list[float]] = {}
            for shape, cap, used in self.slabs.values():
                a = per.setdefault(shape, [0.0, 0.0])
                a[0] += self.slab_bytes
                a[1] += self.slab_bytes * used / cap
            self.at_peak = per

    def report(self) -> dict:
        """Per shape and ``all``: allocated, utilised and fragmented bytes at the allocation peak,
        and their shares of the peak."""
        out = {}
        tot_a = tot_u = 0.0
        for shape, (a, u) in sorted(self.at_peak.items()):
            out[shape] = {"allocated_bytes": a, "utilized_bytes": u, "fragmented_bytes": a - u}
            tot_a += a
            tot_u += u
        out["all"] = {"allocated_bytes": tot_a, "utilized_bytes": tot_u, "fragmented_bytes": tot_a - tot_u}
        for v in out.values():
            v["utilized_pct"] = 100 * v["utilized_bytes"] / tot_a if tot_a else 0.0
            v["fragmentation_pct"] = 100 * v["fragmented_bytes"] / tot_a if tot_a else 0.0
        return out
