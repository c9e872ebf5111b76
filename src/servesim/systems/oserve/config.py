"""OServe's settings as the paper states them (``data/paper_inputs.yaml``, key ``config``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..stated import StatedConfig, load_inputs

DATA = Path(__file__).parent / "data" / "paper_inputs.yaml"


def paper_inputs() -> dict:
    """The stated inputs (config, the §4.2/§4.3/App. C examples, §6.3 numbers) with sources."""
    return load_inputs(DATA)


@dataclass(frozen=True)
class OServeConfig(StatedConfig):
    DATA = DATA  # the stated inputs; no annotation, so not a dataclass field

    span_s: float
    n_types: int
    search_patience: int
    search_max_iter: int
    lstm_lookback_spans: int
    nodes: int
    gpus_per_node: int
    gpu: str
    nvlink_bytes_per_s: float
    ib_bytes_per_s: float
    kv_headroom_frac: float

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node
