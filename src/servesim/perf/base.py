"""The one interface between the simulator and every step-time backend.

An engine iteration is summarised by four aggregates of its batch:

- ``prefill_tokens``: new prompt tokens computed this iteration (sum over prefill chunks);
- ``prefill_ctx``: sum over prefill chunks of ``chunk_len * context_after_chunk``
  (the attention work of the chunks: a fresh prompt of length L contributes L*L);
- ``decode_seqs``: number of sequences generating one token this iteration;
- ``decode_ctx``: sum of those sequences' context lengths (prompt + generated so far).

Every backend maps these to seconds. Arguments may be Python/NumPy scalars or equal-length
NumPy arrays (one element per iteration): the simulator's fast-forward evaluates a whole run of
decode iterations in one vectorised call, and must get bit-identical numbers to evaluating them
one by one, so backends use only element-wise arithmetic (no reductions across the array).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


class StepTimeModel(ABC):
    """Seconds for one engine iteration of a (model, hardware, TP, PP) replica."""

    #: a short name for reports ("linear", "roofline", "splitwise-table", ...)
    name: str = "abstract"

    @abstractmethod
    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        """Iteration time in seconds; scalars in -> float out, arrays in -> array out."""

    def __call__(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        return self.step_time(prefill_tokens, prefill_ctx, decode_seqs, decode_ctx)


@dataclass(frozen=True)
class LinearStepTime(StepTimeModel):
    """A few-coefficient model: overhead + linear terms in the four aggregates.

    t = c0 + c_pt*prefill_tokens + c_pc*prefill_ctx + c_ds*decode_seqs + c_dc*decode_ctx
    (an empty batch takes no time). Coefficients in seconds per unit.
    """

    c0: float = 5e-3
    c_pt: float = 1e-4
    c_pc: float = 0.0
    c_ds: float = 2e-5
    c_dc: float = 1e-8
    name: str = "linear"

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        if type(prefill_tokens) is not np.ndarray and type(decode_seqs) is not np.ndarray:
            # scalar fast path (the hot loop): same operations in the same order as below
            if prefill_tokens == 0 and decode_seqs == 0:
                return 0.0
            return float(self.c0 + self.c_pt * prefill_tokens + self.c_pc * prefill_ctx
                         + self.c_ds * decode_seqs + self.c_dc * decode_ctx)
        t = (
            self.c0
            + self.c_pt * prefill_tokens
            + self.c_pc * prefill_ctx
            + self.c_ds * decode_seqs
            + self.c_dc * decode_ctx
        )
        empty = (np.asarray(prefill_tokens) == 0) & (np.asarray(decode_seqs) == 0)
        if np.ndim(t) == 0:
            return 0.0 if bool(empty) else float(t)
        return np.where(empty, 0.0, t)
