"""An exact memo for scalar step-time calls: the simulator asks again and again for the same
batch shapes (same prompt lengths, the same decode batch at a repeated context), so a dict hit
replaces the backend's arithmetic or interpolation. Results are the backend's own, bit for bit;
array calls pass straight through. A table backend's fallback counter counts evaluations, so a
cached out-of-grid shape is counted once (``hits`` says how many calls the cache answered)."""

from __future__ import annotations

import numpy as np

from .base import StepTimeModel


class CachedStepTime(StepTimeModel):
    def __init__(self, inner: StepTimeModel, maxsize: int = 1 << 16):
        self.inner, self.maxsize = inner, maxsize
        self.name = f"cached-{inner.name}"
        self.hits = 0
        cache: dict = {}
        f = inner.step_time
        ndarray = np.ndarray

        def step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
            if type(prefill_tokens) is ndarray or type(decode_seqs) is ndarray:
                return f(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
            key = (prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
            t = cache.get(key)
            if t is None:
                if len(cache) >= maxsize:  # bounded memory: start over rather than track recency
                    cache.clear()
                t = cache[key] = f(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)
            else:
                self.hits += 1
            return t

        self._cache = cache
        self.step_time = step_time

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):  # replaced per instance
        raise AssertionError("unreachable")  # pragma: no cover

    def __getattr__(self, name):  # counters and attributes of the wrapped backend
        return getattr(self.__dict__["inner"], name)
