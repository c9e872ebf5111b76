"""PreServe's per-instance load anticipator (§4.3.1, Fig. 7): the load-look-ahead map.

U_j is the KV tokens the instance is predicted to hold j iterations from now, as a fraction of
its KV capacity M. The map is kept in absolute iteration coordinates (a ring of token counts
indexed by the instance's iteration number), so the paper's "shift by one per iteration" is only
moving ``clock`` forward and clearing the slots passed.

* add (prefill complete, P prompt tokens, predicted D, ``generated`` tokens already sampled):
  U_j += P + generated + j for j in [0, D - generated)  (the paper's P + j with generated = 0);
* early end (true length below the prediction): subtract exactly what is left of the request's
  span from now on;
* still running at its predicted end: a virtual extension of ``extension * D`` iterations (at
  least 1; the paper's 0.2 x D-hat uses the true length, unknown online, so the prediction
  stands in), repeated each time it runs out; the unused part is subtracted when it ends;
* ``peak(P, D)``: the largest U over the next ``lookahead`` iterations with a request virtually
  added (the router's query); ``overloaded()``: U > ``overload_kv`` in more than
  ``overload_fraction`` of the next ``lookahead`` iterations (the scaler's test, §4.3.2).

Predicted lengths are clipped to [1, ``horizon``] (L = 4096, LLaMA-2's longest output).
"""

from __future__ import annotations

import heapq

import numpy as np


class LoadAnticipator:
    """The load-look-ahead map of one instance (see module docstring)."""

    def __init__(self, capacity_tokens: int, *, horizon: int = 4096, lookahead: int = 100,
                 extension: float = 0.2, overload_kv: float = 0.95, overload_fraction: float = 0.1) -> None:
        if capacity_tokens < 1 or horizon < 1 or lookahead < 1 or not extension > 0:
            raise ValueError("LoadAnticipator: capacity, horizon, lookahead and extension must be positive")
        self.M = int(capacity_tokens)
        self.horizon = int(horizon)
        self.lookahead = int(lookahead)
        self.extension = float(extension)
        self.overload_kv = float(overload_kv)
        self.overload_fraction = float(overload_fraction)
        # a request's span from its add is at most horizon + one extension; the lookahead reads past it
        size = 1
        while size < 2 * (self.horizon + int(np.ceil(self.extension * self.horizon)) + self.lookahead + 1):
            size *= 2
        self._size = size
        self._U = np.zeros(size, dtype=np.float64)   # tokens at absolute iteration t, slot t % size
        self.clock = 0
        self._req: dict[int, list[int]] = {}          # rid -> [base, end, ext]: tokens base + t for t < end
        self._ends: list[tuple[int, int]] = []        # (end, rid) heap, stale entries skipped
        self._sum_end = 0                             # sum of ends of the requests in the map

    # ------------------------------------------------------------------ map arithmetic
    def _fill(self, base: int, t0: int, t1: int, sign: float) -> None:
        """U[t] += sign * (base + t) for absolute iterations t in [t0, t1)."""
        if t1 <= t0:
            return
        size, U = self._size, self._U
        s0 = t0 % size
        n = t1 - t0
        vals = sign * (base + np.arange(t0, t1, dtype=np.float64))
        k = min(n, size - s0)
        U[s0:s0 + k] += vals[:k]
        if k < n:
            U[:n - k] += vals[k:]

    def advance(self, clock: int) -> None:
        """The instance has started iteration ``clock``: forget the slots passed, extend the
        requests whose (extended) predicted span has run out."""
        if clock < self.clock:
            raise ValueError(f"LoadAnticipator.advance({clock}): the clock is already at {self.clock}")
        if clock > self.clock:
            n = clock - self.clock
            if n >= self._size:
                self._U[:] = 0.0
            else:
                s0 = self.clock % self._size
                k = min(n, self._size - s0)
                self._U[s0:s0 + k] = 0.0
                if k < n:
                    self._U[:n - k] = 0.0
            self.clock = clock
        ends = self._ends
        while ends and ends[0][0] <= clock:
            end, rid = heapq.heappop(ends)
            e = self._req.get(rid)
            if e is None or e[1] != end:
                continue  # stale
            base, _, ext = e
            new_end = end + ext * ((clock - end) // ext + 1)  # first multiple past now
            self._fill(base, clock, new_end, 1.0)
            e[1] = new_end
            self._sum_end += new_end - end
            heapq.heappush(ends, (new_end, rid))

    def add(self, rid: int, prompt: int, predicted: int, generated: int = 0) -> None:
        """Request ``rid`` completed its prefill (``generated`` tokens sampled so far)."""
        if rid in self._req:
            raise ValueError(f"LoadAnticipator.add: request {rid} is already in the map")
        D = min(max(int(predicted), 1), self.horizon)
        ext = max(1, int(round(self.extension * D)))
        c = self.clock
        base = int(prompt) + int(generated) - c
        end = c + max(D - int(generated), 0)
        self._req[rid] = [base, end, ext]
        self._fill(base, c, end, 1.0)
        self._sum_end += end
        heapq.heappush(self._ends, (end, rid))
        if end <= c:
            self.advance(c)  # already past its prediction: extend now

    def end(self, rid: int) -> bool:
        """Request ``rid`` finished now: take its remaining span (early end or unused extension)
        out of the map. False when it was not in the map."""
        e = self._req.pop(rid, None)
        if e is None:
            return False
        base, end, _ = e
        self._fill(base, self.clock, end, -1.0)
        self._sum_end -= end
        return True

    def __contains__(self, rid: int) -> bool:
        return rid in self._req

    def __len__(self) -> int:
        return len(self._req)

    # ------------------------------------------------------------------ queries
    def window(self) -> np.ndarray:
        """Tokens over the next ``lookahead`` iterations (a copy)."""
        s0 = self.clock % self._size
        ln = self.lookahead
        if s0 + ln <= self._size:
            return self._U[s0:s0 + ln].copy()
        return np.concatenate([self._U[s0:], self._U[:s0 + ln - self._size]])

    def usage(self) -> np.ndarray:
        """U over the next ``lookahead`` iterations (fractions of M)."""
        return self.window() / self.M

    def peak(self, prompt: int = 0, predicted: int = 0) -> float:
        """max_j U_j over the next ``lookahead`` iterations with a request (``prompt``,
        ``predicted``) virtually added now (the router's query, §4.3.3)."""
        w = self.window()
        D = min(max(int(predicted), 0), self.horizon)
        if D:
            k = min(D, self.lookahead)
            w[:k] += prompt + np.arange(k, dtype=np.float64)
        return float(w.max()) / self.M

    def overloaded(self) -> bool:
        """KV above ``overload_kv`` in more than ``overload_fraction`` of the next ``lookahead``
        iterations (§4.3.2)."""
        over = int(np.count_nonzero(self.window() > self.overload_kv * self.M))
        return over > self.overload_fraction * self.lookahead

    def remaining_decode(self) -> int:
        """Predicted output tokens still to come from the requests in the map (with extensions)."""
        return self._sum_end - len(self._req) * self.clock
