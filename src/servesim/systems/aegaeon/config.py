"""Aegaeon's settings as the paper states them (``data/paper_inputs.yaml``, key ``config``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..stated import StatedConfig, load_inputs

DATA = Path(__file__).parent / "data" / "paper_inputs.yaml"


def paper_inputs() -> dict:
    """The stated inputs (config, worked example, scaling and production numbers) with sources."""
    return load_inputs(DATA)


@dataclass(frozen=True)
class AegaeonConfig(StatedConfig):
    """Scheduler, memory, layout and SLO settings (§4, §5.2, §7.1, App. A.2)."""

    DATA = DATA  # the stated inputs; no annotation, so not a dataclass field


    max_gpsize: int
    prefill_batch_size: int
    q_max_s: float
    alpha_floor: float
    switch_beta: float
    switch_pcie_bw_ae: dict
    switch_ineff_ae: float
    vram_reserved_fraction: float
    kv_block_tokens: int
    n_prefill_gpus: int
    n_decode_gpus: int
    gpu: str
    slo_ttft_s: float
    slo_tbt_s: float
    slo_scales: tuple

    @classmethod
    def _coerce(cls, raw: dict) -> dict:
        return {**raw, "slo_scales": tuple(raw["slo_scales"])}

    def slo(self, scale: float = 1.0) -> tuple[float, float]:
        """(TTFT, TBT) target in seconds at an SLO scale (Fig 13: 0.5, 0.3, 0.2)."""
        return self.slo_ttft_s * scale, self.slo_tbt_s * scale
