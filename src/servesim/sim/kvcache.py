"""Paged-KV block arithmetic and the two bookkeeping strategies for decoding requests.

Every decoding request needs one new KV slot per iteration (for the token sampled in the previous
one) and a new block whenever that slot starts a block, i.e. when ``computed % block_size == 0``.

Two interchangeable *decode sets* track the requests in their decode phase:

- :class:`RefDecodeSet` (reference mode) keeps each request's ``computed``/``generated``/``held``
  explicit and updates them one iteration at a time with plain loops: obviously right, O(n) per
  iteration.
- :class:`FastDecodeSet` (fast mode) keeps them implicit. All members advance together, so a
  member's ``computed`` is ``c0 + D - d0`` with ``D`` the set's decode-step counter. It keeps:
  the member count, the sum of ``c0 - d0`` (so the batch's total context is O(1)), a histogram of
  block phases ``(c0 - d0) mod block_size`` (so the blocks needed over the next ``m`` iterations,
  and the first iteration that would run out of blocks, are O(block_size)), and a lazy heap of
  finish steps (so the next finish is O(log n)). Advancing ``m`` iterations is O(1).

Both expose the same methods; the instance and the scheduler policies only use those, and the
property tests check both modes give identical results.
"""

from __future__ import annotations

import heapq


def cdiv(a: int, b: int) -> int:
    """Ceiling division for non-negative ints."""
    return -(-a // b)


class RefDecodeSet:
    """Explicit per-request decode bookkeeping (reference mode)."""

    __slots__ = ("bs", "members", "D")

    def __init__(self, block_size: int) -> None:
        self.bs = block_size
        self.members: dict = {}  # Req -> None, in join order
        self.D = 0               # decode iterations run so far on this instance

    @property
    def n(self) -> int:
        return len(self.members)

    def add(self, r, reserved: bool = False) -> None:
        """``r`` (with explicit computed/generated/held) decodes from the next iteration on."""
        r.d0 = self.D
        r.hkey = -1 if reserved else 0
        self.members[r] = None

    def remove(self, r) -> int:
        """Take ``r`` out (finish or preemption); returns the blocks it holds."""
        del self.members[r]
        return r.held

    def computed(self, r) -> int:
        return r.computed

    def generated(self, r) -> int:
        return r.generated

    def held(self, r) -> int:
        return r.held

    def materialize(self, r) -> None:
        """Write the implicit state into ``r`` (no-op here)."""

    def needs_block(self, r) -> int:
        return 1 if (r.hkey != -1 and r.computed % self.bs == 0) else 0

    def demand(self) -> int:
        """KV blocks the members need for the next iteration."""
        bs = self.bs
        return sum(1 for r in self.members if r.hkey != -1 and r.computed % bs == 0)

    def alloc_all(self) -> int:
        """Give every member its block for the next iteration; returns blocks allocated."""
        bs = self.bs
        k = 0
        for r in self.members:
            if r.hkey != -1 and r.computed % bs == 0:
                r.held += 1
                k += 1
        return k

    def alloc_one(self, r) -> int:
        k = self.needs_block(r)
        r.held += k
        return k

    def ctx(self) -> int:
        """decode_ctx of the next iteration: sum of (computed + 1) over members."""
        return sum(r.computed + 1 for r in self.members)

    def advance(self) -> list:
        """Run one decode iteration; returns the members that sampled their last token."""
        self.D += 1
        done = []
        for r in self.members:
            r.computed += 1
            r.generated += 1
            if r.generated >= r.output:
                done.append(r)
        for r in done:
            del self.members[r]
        return done

    def remaining(self) -> int:
        """Output tokens the members have still to sample."""
        return sum(r.output - r.generated for r in self.members)

    def min_d0(self) -> int:
        """Earliest decode step a member's open stint started at (``D`` with no members)."""
        return min((r.d0 for r in self.members), default=self.D)


class FastDecodeSet:
    """Implicit decode bookkeeping with O(1)/O(block_size)/O(log n) queries (fast mode)."""

    __slots__ = ("bs", "n", "nh", "csum", "fsum", "hist", "heap", "D")

    def __init__(self, block_size: int) -> None:
        self.bs = block_size
        self.n = 0          # members
        self.nh = 0         # members that allocate blocks as they grow (not reserved)
        self.csum = 0       # sum over members of (c0 - d0)
        self.fsum = 0       # sum over members of fin
        self.hist = [0] * block_size
        self.heap: list = []  # (fin, adm, req) lazily deleted
        self.D = 0

    def add(self, r, reserved: bool = False) -> None:
        D = self.D
        r.c0 = r.computed
        r.d0 = D
        r.fin = D + (r.output - r.generated)
        self.n += 1
        self.csum += r.c0 - D
        self.fsum += r.fin
        if reserved:
            r.hkey = -1
        else:
            k = (r.c0 - D) % self.bs
            r.hkey = k
            self.hist[k] += 1
            self.nh += 1
        heapq.heappush(self.heap, (r.fin, r.adm, r))

    def materialize(self, r) -> None:
        """Write computed/generated/held of member ``r`` as of now into the record."""
        adv = self.D - r.d0
        r.computed = r.c0 + adv
        r.generated = r.output - (r.fin - self.D)
        if r.hkey != -1:
            r.held = -(-r.computed // self.bs)

    def remove(self, r) -> int:
        self.materialize(r)
        self.n -= 1
        self.csum -= r.c0 - r.d0
        self.fsum -= r.fin
        if r.hkey != -1:
            self.hist[r.hkey] -= 1
            self.nh -= 1
        r.fin = -1  # marks its heap entry stale
        return r.held

    def purge(self, r) -> None:
        """Drop ``r``'s (stale) heap entries: a request leaving for another instance, whose
        (fin, adm) there could equal an old entry's here."""
        self.heap = [e for e in self.heap if e[2] is not r]
        heapq.heapify(self.heap)

    def computed(self, r) -> int:
        return r.c0 + self.D - r.d0

    def generated(self, r) -> int:
        return r.output - (r.fin - self.D)

    def held(self, r) -> int:
        if r.hkey == -1:
            return r.held
        return -(-(r.c0 + self.D - r.d0) // self.bs)

    def needs_block(self, r) -> int:
        return 1 if (r.hkey != -1 and (r.hkey + self.D) % self.bs == 0) else 0

    def demand(self) -> int:
        return self.hist[(-self.D) % self.bs]

    def alloc_all(self) -> int:
        return self.hist[(-self.D) % self.bs]

    def alloc_one(self, r) -> int:
        return self.needs_block(r)

    def demand_range(self, m: int) -> int:
        """Blocks the members need over the next ``m`` iterations."""
        bs = self.bs
        q, rem = divmod(m, bs)
        tot = q * self.nh
        hist = self.hist
        D = self.D
        for j in range(rem):
            tot += hist[(-(D + j)) % bs]
        return tot

    def iterations_fitting(self, free: int) -> int:
        """Largest m such that the next m iterations need at most ``free`` blocks."""
        nh = self.nh
        if nh == 0:
            return 1 << 62
        bs = self.bs
        q, rem = divmod(free, nh)
        hist = self.hist
        D = self.D
        c = 0
        for j in range(bs):
            c += hist[(-(D + j)) % bs]
            if c > rem:
                return q * bs + j
        raise AssertionError("block histogram inconsistent")  # pragma: no cover

    def ctx(self) -> int:
        return self.csum + self.n * (self.D + 1)

    def remaining(self) -> int:
        """Output tokens the members have still to sample."""
        return self.fsum - self.n * self.D

    def min_d0(self) -> int:
        """A lower bound of the decode step each member's open stint started at (``D`` with no
        members): the minimum over the heap, whose stale entries only lower it."""
        return min((e[2].d0 for e in self.heap), default=self.D)

    def min_fin(self) -> int:
        heap = self.heap
        while heap:
            f, a, r = heap[0]
            if r.fin == f and r.adm == a:
                return f
            heapq.heappop(heap)
        return 1 << 62

    def advance_many(self, m: int) -> None:
        """Advance all members ``m`` iterations (the caller guarantees no finish in between)."""
        self.D += m

    def advance(self) -> list:
        """Run one decode iteration; returns the members that sampled their last token."""
        self.D += 1
        return self.pop_finished()

    def pop_finished(self) -> list:
        """Remove and return members whose last token was sampled by now (join order)."""
        heap = self.heap
        D = self.D
        done = []
        while heap and heap[0][0] <= D:
            f, a, r = heapq.heappop(heap)
            if r.fin == f and r.adm == a:
                self.remove(r)
                done.append(r)
        return done
