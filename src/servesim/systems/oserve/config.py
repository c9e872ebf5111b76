"""OServe's settings as the paper states them (``data/paper_inputs.yaml``, key ``config``)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

import yaml

DATA = Path(__file__).parent / "data" / "paper_inputs.yaml"


@lru_cache(maxsize=1)
def paper_inputs() -> dict:
    """The stated inputs (config, the §4.2/§4.3/App. C examples, §6.3 numbers) with sources."""
    return yaml.safe_load(DATA.read_text())


@dataclass(frozen=True)
class OServeConfig:
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

    @classmethod
    def paper(cls, **overrides) -> "OServeConfig":
        raw = dict(paper_inputs()["config"])
        names = {f.name for f in fields(cls)}
        unknown = sorted((set(raw) | set(overrides)) - names)
        if unknown:
            raise ValueError(f"{DATA}: unknown OServeConfig key(s) {unknown}")
        raw.update(overrides)
        return cls(**raw)

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node
