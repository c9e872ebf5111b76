"""A paper's stated settings: `data/paper_inputs.yaml` beside each system, read once, and a
dataclass mixin whose ``paper()`` builds the settings from its ``config`` key."""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache
from pathlib import Path

import yaml


@lru_cache(maxsize=None)
def load_inputs(path: Path) -> dict:
    """The stated inputs of one paper (config, worked examples, quoted numbers) with sources."""
    return yaml.safe_load(Path(path).read_text())


class StatedConfig:
    """Mixin for a frozen dataclass of a paper's settings; subclasses set ``DATA`` (the YAML)."""

    DATA: Path

    @classmethod
    def _coerce(cls, raw: dict) -> dict:
        """Turn YAML values into field types (lists into tuples, ...); override where needed."""
        return raw

    @classmethod
    def paper(cls, **overrides):
        """The paper's settings, with ``overrides``; an unknown key is an error naming the file."""
        raw = dict(load_inputs(cls.DATA)["config"])
        names = {f.name for f in fields(cls)}
        unknown = sorted((set(raw) | set(overrides)) - names)
        if unknown:
            raise ValueError(f"{cls.DATA}: unknown {cls.__name__} key(s) {unknown}")
        raw.update(overrides)
        return cls(**cls._coerce(raw))
