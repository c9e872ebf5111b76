"""Aegaeon's settings as the paper states them (``data/paper_inputs.yaml``, key ``config``)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

import yaml

DATA = Path(__file__).parent / "data" / "paper_inputs.yaml"


@lru_cache(maxsize=1)
def paper_inputs() -> dict:
    """The stated inputs (config, worked example, scaling and production numbers) with sources."""
    return yaml.safe_load(DATA.read_text())


@dataclass(frozen=True)
class AegaeonConfig:
    """Scheduler, memory, layout and SLO settings (§4, §5.2, §7.1, App. A.2)."""

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
    def paper(cls, **overrides) -> "AegaeonConfig":
        """The paper's defaults, with ``overrides`` (unknown keys are an error)."""
        raw = dict(paper_inputs()["config"])
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - names) + sorted(set(overrides) - names)
        if unknown:
            raise ValueError(f"{DATA}: unknown AegaeonConfig key(s) {unknown}")
        raw.update(overrides)
        raw["slo_scales"] = tuple(raw["slo_scales"])
        return cls(**raw)

    def slo(self, scale: float = 1.0) -> tuple[float, float]:
        """(TTFT, TBT) target in seconds at an SLO scale (Fig 13: 0.5, 0.3, 0.2)."""
        return self.slo_ttft_s * scale, self.slo_tbt_s * scale
