"""The public SplitwiseSim's reading of the Splitwise performance database, as a step-time model.

SageServe's instance counts come from a simulator built on SplitwiseSim, so how that simulator
turns a database row into an iteration time decides capacity. Its ``DatabasePerformanceModel``
(facts read from the public splitwise-sim source; no code taken):

- one axis for both phases: ``batch_tokens = prompt_size * batch_size`` of each database row; the
  rows sharing a value are reduced to their median ``prompt_time`` / ``token_time`` and joined by
  linear interpolation, extended linearly past both ends (``interp1d(..., fill_value="extrapolate")``);
- an iteration's tokens: the whole prompt of every prefill (no chunking) plus one per decode;
- prefill-only iteration: prompt_time(tokens); decode-only: token_time(number of decodes) -- on an
  axis whose smallest value is 128 tokens (128-token prompts, batch 1), so a decode batch reads
  the database below its grid and its context never enters;
- mixed iteration: 1.1 x prompt_time(prompt tokens + decodes).

servesim's own reading (`sources.splitwise` + `TableStepTime`, axes tokens / seqs) interpolates
decode time over the batch size of the decode rows and charges a mixed step as prefill plus
decode. The two are named readings of one file; `SplitwiseSimStepTime` is the other one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .base import StepTimeModel

MIXED_FACTOR = 1.1  # SplitwiseSim's flat surcharge on an iteration holding prefills and decodes


def _line(x: np.ndarray, y: np.ndarray):
    """Piecewise-linear through (x, y), continued linearly past both ends."""
    def f(q):
        q = np.asarray(q, float)
        out = np.interp(q, x, y)
        lo, hi = q < x[0], q > x[-1]
        if len(x) > 1:
            out = np.where(lo, y[0] + (q - x[0]) * (y[1] - y[0]) / (x[1] - x[0]), out)
            out = np.where(hi, y[-1] + (q - x[-1]) * (y[-1] - y[-2]) / (x[-1] - x[-2]), out)
        return out
    return f


@dataclass
class SplitwiseSimStepTime(StepTimeModel):
    """Built from raw database rows (``prompt_size, batch_size, prompt_time, token_time`` in s)."""

    rows: pd.DataFrame
    mixed_factor: float = MIXED_FACTOR
    name: str = "splitwise-sim"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        need = {"prompt_size", "batch_size", "prompt_time", "token_time"}
        if need - set(self.rows.columns):
            raise ValueError(f"splitwise-sim reading needs columns {sorted(need)}")
        bt = self.rows.prompt_size.to_numpy(float) * self.rows.batch_size.to_numpy(float)
        med = pd.DataFrame({"bt": bt, "p": self.rows.prompt_time.to_numpy(float),
                            "t": self.rows.token_time.to_numpy(float)}).groupby("bt").median()
        x = med.index.to_numpy(float)
        self._prompt, self._token = _line(x, med.p.to_numpy()), _line(x, med.t.to_numpy())

    def step_time(self, prefill_tokens, prefill_ctx, decode_seqs, decode_ctx):
        scalar = np.ndim(prefill_tokens) == 0 and np.ndim(decode_seqs) == 0
        pt = np.atleast_1d(np.asarray(prefill_tokens, float))
        ds = np.atleast_1d(np.asarray(decode_seqs, float))
        t = np.where(ds == 0, self._prompt(pt),
                     np.where(pt == 0, self._token(ds), self.mixed_factor * self._prompt(pt + ds)))
        t = np.where((pt == 0) & (ds == 0), 0.0, t)
        return float(t[0]) if scalar else t
