"""The evaluation's model market: logical model -> checkpoint, and each checkpoint's costs.

[AE] logical model i serves checkpoint ``CHECKPOINTS[i % 10]`` (6 Qwen2.5-7B, 2 Yi-1.5-9B,
2 Llama-2-13B; TP=1, BF16). Distinct logical models pay a full switch even when they share a
checkpoint. Step times come from the artifact's measured iteration profiles (H800 by default).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from ...catalog import get_hardware, get_model, kv_capacity
from ...perf.base import StepTimeModel
from .settings import CHECKPOINTS, Settings

PROFILE_DIRS = {"qwen2.5-7b": "qwen2_5_7b", "yi-1.5-9b": "yi1_5_9b_chat", "llama-2-13b": "llama2_13b_chat",
                "yi-1.5-6b": "yi1_5_6b_chat"}
AE_WEIGHT_BYTES = {"qwen2.5-7b": 14e9, "yi-1.5-9b": 18e9, "llama-2-13b": 26e9}  # AE simulator's mem_size (GB)
AE_SCHED_PARAMS_GI = {"qwen2.5-7b": 7.25, "yi-1.5-9b": 8.25, "llama-2-13b": 12.2, "yi-1.5-6b": 5.75}
_INDEX = re.compile(r"(\d+)\s*$")


def model_index(name: str) -> int:
    """The trailing integer of a logical model name (``synth_model_08`` -> 8)."""
    m = _INDEX.search(str(name))
    if not m:
        raise ValueError(f"aegaeon: logical model name {name!r} has no trailing index (expected e.g. synth_model_08)")
    return int(m.group(1))


def checkpoint(name: str, checkpoints: tuple = CHECKPOINTS) -> str:
    """Catalog key of the checkpoint a logical model serves (default: the i mod 10 mapping)."""
    return checkpoints[model_index(name) % len(checkpoints)]


@dataclass(frozen=True)
class ModelCosts:
    """What one checkpoint costs on one GPU under the simulator's settings."""

    key: str
    weight_bytes: float
    kv_bytes_per_token: float
    max_context: int
    step: StepTimeModel
    switch_s: float            # actual load time (weights / load bandwidth)
    c_est_s: float             # the scheduler's switch estimate (Eq. 2-3's c contribution)
    usable_bytes: float        # GPU memory for weights + KV (vram_fraction)
    gpu_bytes: float
    tp: int = 1                # weight_bytes and kv_bytes_per_token are per GPU (one 1/tp shard)

    @property
    def host_kv_bytes_per_token(self) -> float:
        """KV bytes per token of the whole instance (all tp shards), as the host cache holds it."""
        return self.kv_bytes_per_token * self.tp

    def prefill_s(self, tokens: int) -> float:
        return self.step.step_time(float(tokens), float(tokens) * tokens, 0.0, 0.0)

    def prefill_batch_s(self, lens) -> float:
        return self.step.step_time(float(sum(lens)), float(sum(x * x for x in lens)), 0.0, 0.0)

    def decode_s(self, seqs: int, ctx_sum: float) -> float:
        return self.step.step_time(0.0, 0.0, float(seqs), float(ctx_sum))

    def kv_bytes(self, tokens: int) -> float:
        return self.kv_bytes_per_token * tokens

    def kv_blocks_capacity(self, block_tokens: int) -> int:
        """KV blocks left on a GPU holding this model's weights alone: `catalog.kv_capacity`, reading
        "total" (vLLM's rule; Aegaeon §7.1 leaves ~10 % free) with the fraction already applied:
        ``usable_bytes`` is GPU memory x ``Settings.vram_fraction`` (see :func:`costs`)."""
        return kv_capacity(self.usable_bytes, self.weight_bytes, self.kv_bytes_per_token, fraction=1.0,
                           fraction_of="total", block_tokens=block_tokens)


def _ae_kv_bytes(key: str) -> float:
    m = get_model(key)
    return 4.0 * m.layers * m.hidden  # K and V, 2 bytes, hidden-size wide: no GQA (AE simulator)


def _step_model(key: str, gpu: str, kind: str, tp: int = 1, reference: str = "qwen2.5-7b") -> StepTimeModel:
    if kind == "roofline":
        return _roofline_step(key, get_hardware(gpu).key, tp, reference)
    return _cached_step(key, get_hardware(gpu).key, kind)


@lru_cache(maxsize=16)
def _roofline_step(key: str, hw: str, tp: int, reference: str) -> StepTimeModel:
    """[assumption] The catalog roofline of ``key`` at ``tp`` GPUs, with the compute, memory and
    attention efficiencies and the overheads fitted (`perf.fit_roofline`) to ``reference``'s measured
    single-GPU profile on the same GPU; the TP all-reduce keeps the roofline's prior (NVLink
    bandwidth x eff_net, per-call latency)."""
    from ...perf import RooflineStepTime, fit_roofline, sources

    ref = get_model(reference).key
    prof = PROFILE_DIRS.get(ref)
    gpus = [g for m, g in sources.aegaeon_sets() if m == prof and get_hardware(g).key == hw]
    if not gpus:
        raise ValueError(f"aegaeon: roofline reference {ref} has no measured profile on {hw}")
    cal = fit_roofline(RooflineStepTime(ref, hw), sources.aegaeon(prof, gpus[0]))
    m = RooflineStepTime(key, hw, tp=tp, name=f"aegaeon-roofline-{key}-tp{tp}-{hw}")
    return m.with_params(**{p: v for p, v in cal.params().items() if p not in ("eff_net", "ar_latency_s")})


@lru_cache(maxsize=32)
def _cached_step(key: str, hw: str, kind: str) -> StepTimeModel:
    from ...perf import fit, sources
    from ...perf.table import TableStepTime

    sets = sources.aegaeon_sets()
    prof = PROFILE_DIRS.get(key)
    gpus = [g for m, g in sets if m == prof and get_hardware(g).key == hw]
    if not gpus:
        have = sorted(g for m, g in sets if m == prof)
        raise ValueError(f"aegaeon: no measured profile of {key} on {hw} (profiles of {prof}: {have}); "
                         "step_model=roofline scales a profiled model instead")
    df = sources.aegaeon(prof, gpus[0])
    if kind == "table":
        return TableStepTime(df, name=f"aegaeon-{key}-{hw}")
    return fit(df, name=f"aegaeon-{key}-{hw}")


def costs(key: str, s: Settings) -> ModelCosts:
    """The costs of checkpoint ``key`` under settings ``s``."""
    m = get_model(key)
    hw = get_hardware(s.gpu)
    w = (m.param_bytes if s.weights == "catalog" else AE_WEIGHT_BYTES[m.key]) / s.tp  # one GPU's shard
    kv = (float(m.kv_bytes_per_token()) if s.kv_size == "gqa" else _ae_kv_bytes(m.key)) / s.tp
    switch = w / s.load_bw  # the tp GPUs load their shards in parallel, each over its own link
    if s.c_estimate == "actual":
        c = switch
    elif s.c_estimate == "paper":
        c = w / hw.pcie_bw * s.switch_beta
    else:
        bw = 64 * 2**30 if hw.key == "h800" else 32 * 2**30
        c = AE_SCHED_PARAMS_GI.get(m.key, m.params / 2**30) * 2**30 * 2 / (bw * s.ae_ineff) / s.tp
    return ModelCosts(key=m.key, weight_bytes=float(w), kv_bytes_per_token=kv, max_context=m.max_context or 4096,
                      step=_step_model(m.key, s.gpu, s.step_model, s.tp, s.roofline_reference), switch_s=switch,
                      c_est_s=c, usable_bytes=hw.mem_bytes * s.vram_fraction, gpu_bytes=float(hw.mem_bytes), tp=s.tp)


def prefetch_fits(cur: ModelCosts, nxt: ModelCosts, s: Settings) -> bool:
    """[AE] prefetch of ``nxt`` beside running ``cur`` is allowed only if the KV blocks left for
    ``cur`` stay >= max(prefetch_min_blocks, max_len / 16)."""
    left = cur.usable_bytes - cur.weight_bytes - nxt.weight_bytes
    need = max(s.prefetch_min_blocks, math.ceil(cur.max_context / s.kv_block_tokens))
    return left >= need * cur.kv_bytes_per_token * s.kv_block_tokens
