"""Aegaeon's latency estimator (App. A.2, Eq. 4-6), fitted to measured iteration profiles.

Eq. 5 (prefill of a batch with input lengths l_k, t = sum l_k, t2 = sum l_k^2):
    T_prefill = C1 (4 t h^2 + 2 t h m) + C2 (3 h t2 / b) + C3
Eq. 6 (decode step, t = sum of the batch's context lengths):
    T_decode  = C4 (4 h^2 + 2 h m) + C5 (3 h t)
with h the hidden size, m the FFN size and b the FlashAttention block size. For one model
these are linear regressions on (t, t2) and on t; the Aegaeon artifact's decode regression adds a
batch-size term C6 B (``batch_term=True``), which Eq. 6 does not have.
We fit the C's by ordinary least squares on the physical features (so the fitted constants are
comparable across models) and score with R^2 (`servesim.perf.measurements.r2`).

Eq. 4 (switch estimate): T_switch = model_bytes / pcie_bw * beta.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..catalog import get_model
from ..perf.measurements import r2

FA_BLOCK = 128  # FlashAttention block size b of Eq. 5; it only rescales C2


@dataclass(frozen=True)
class LatencyFit:
    """Fitted constants of one phase of Eq. 5 or Eq. 6 for one model."""

    phase: str                 # "prefill" | "decode"
    names: tuple[str, ...]     # constant names, in feature order
    coef: np.ndarray
    hidden: int
    ffn: int
    batch_term: bool = False

    def features(self, t, t2=None, batch=None) -> np.ndarray:
        return _features(self.phase, self.hidden, self.ffn, np.asarray(t, float),
                         None if t2 is None else np.asarray(t2, float),
                         None if batch is None else np.asarray(batch, float), self.batch_term)

    def predict(self, t, t2=None, batch=None) -> np.ndarray:
        """Seconds for batches with token sums t (and t2 = sum of squares for prefill, batch size B
        for the decode fit with a batch term)."""
        return self.features(t, t2, batch) @ self.coef

    @property
    def constants(self) -> dict[str, float]:
        return dict(zip(self.names, map(float, self.coef)))


def _features(phase, h, m, t, t2, batch, batch_term) -> np.ndarray:
    if phase == "prefill":
        if t2 is None:
            raise ValueError("prefill features need t2 (sum of squared input lengths)")
        cols = [t * (4 * h * h + 2 * h * m), 3 * h * t2 / FA_BLOCK, np.ones_like(t)]
    elif phase == "decode":
        cols = [np.full_like(t, 4.0 * h * h + 2.0 * h * m), 3 * h * t]
        if batch_term:
            if batch is None:
                raise ValueError("the decode fit with a batch term needs the batch size")
            cols.append(batch)
    else:
        raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
    return np.column_stack(cols)


def phase_table(df: pd.DataFrame, phase: str) -> pd.DataFrame:
    """One phase of a step-time measurement table as columns t, t2, batch, step_s.

    Prefill rows (decode_seqs == 0): t = prefill_tokens, t2 = prefill_ctx (sum of l_k^2 for a
    batch of whole prompts). Decode rows (prefill_tokens == 0): t = decode_ctx, batch = decode_seqs.
    """
    if phase == "prefill":
        d = df[(df.prefill_tokens > 0) & (df.decode_seqs == 0)]
        out = pd.DataFrame({"t": d.prefill_tokens, "t2": d.prefill_ctx, "batch": np.nan, "step_s": d.step_s})
    elif phase == "decode":
        d = df[(df.prefill_tokens == 0) & (df.decode_seqs > 0)]
        out = pd.DataFrame({"t": d.decode_ctx, "t2": np.nan, "batch": d.decode_seqs, "step_s": d.step_s})
    else:
        raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
    return out.reset_index(drop=True)


def fit_phase(table: pd.DataFrame, model: str, phase: str, batch_term: bool = False) -> LatencyFit:
    """OLS fit of Eq. 5 (prefill) or Eq. 6 (decode) for catalog ``model`` on a `phase_table`."""
    spec = get_model(model)
    if len(table) < 4:
        raise ValueError(f"{model} {phase}: {len(table)} measurements, need at least 4 to fit")
    names = ("C1", "C2", "C3") if phase == "prefill" else (("C4", "C5", "C6") if batch_term else ("C4", "C5"))
    fit = LatencyFit(phase, names, np.zeros(len(names)), spec.hidden, spec.ffn, batch_term)
    X = fit.features(table.t.to_numpy(float), table.t2.to_numpy(float), table.batch.to_numpy(float))
    coef, *_ = np.linalg.lstsq(X, table.step_s.to_numpy(float), rcond=None)
    return LatencyFit(phase, names, coef, spec.hidden, spec.ffn, batch_term)


def score(fit: LatencyFit, table: pd.DataFrame) -> float:
    """R^2 of ``fit`` on a `phase_table`."""
    pred = fit.predict(table.t.to_numpy(float), table.t2.to_numpy(float), table.batch.to_numpy(float))
    return r2(table.step_s.to_numpy(float), pred)


def switch_time_s(model_bytes: float, pcie_bw: float, beta: float) -> float:
    """Eq. 4: T_switch = ModelSize / PCIeBandwidth * beta."""
    if model_bytes <= 0 or pcie_bw <= 0 or beta <= 0:
        raise ValueError(f"model_bytes, pcie_bw and beta must be positive, got {model_bytes}, {pcie_bw}, {beta}")
    return model_bytes / pcie_bw * beta


def screen(df: pd.DataFrame, model: str, hardware: str, prefill_token_cap: float | None = None) -> pd.DataFrame:
    """Flag measurements that cannot be one engine step of the stated batch (column ``dropped``:
    "" when kept, else the reason).

    - decode steps faster than reading the weights once from HBM (param_bytes / mem_bw from the
      catalog): no decode step took place (e.g. the profile's context reached the maximum length);
    - prefill batches over ``prefill_token_cap`` tokens: the engine's step holds at most that many
      tokens (the profiles plateau there), so the timing is of a partial batch.
    """
    from ..catalog import get_hardware

    floor = get_model(model).param_bytes / get_hardware(hardware).mem_bw
    out = df.copy()
    out["dropped"] = ""
    dec = (out.prefill_tokens == 0) & (out.decode_seqs > 0)
    out.loc[dec & (out.step_s < floor), "dropped"] = f"decode faster than the HBM weight-read floor {floor * 1e3:.2f} ms"
    if prefill_token_cap is not None:
        pre = (out.prefill_tokens > 0) & (out.decode_seqs == 0)
        out.loc[pre & (out.prefill_tokens > prefill_token_cap), "dropped"] = \
            f"prefill over the {prefill_token_cap:g}-token step cap"
    return out
