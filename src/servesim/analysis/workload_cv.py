"""Coefficients of variation of workload compositions (OServe §6.3, Tables 1 and 2).

Spatial CV (Table 1): population std / mean of one composition's K type proportions.
Temporal CV (Table 2): for each type, the population CV of its proportion across consecutive
spans, averaged over the types.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.workload import gen_oserve  # owns the stated levels file (and makes it a figure input)


def population_cv(x, axis: int | None = None) -> np.ndarray | float:
    """Population coefficient of variation std(x, ddof=0) / mean(x)."""
    x = np.asarray(x, dtype=float)
    mean = x.mean(axis=axis)
    if np.any(mean == 0):
        raise ValueError("CV is undefined for a zero mean")
    cv = x.std(axis=axis, ddof=0) / mean
    return float(cv) if np.ndim(cv) == 0 else cv


def spatial_cv(proportions) -> float:
    """CV of one composition's type proportions (any scale: % or fractions)."""
    return population_cv(proportions)


def temporal_cv(spans) -> float:
    """Mean over types of each type's CV across spans; ``spans`` is (n_spans, n_types)."""
    a = np.asarray(spans, dtype=float)
    if a.ndim != 2 or a.shape[0] < 2:
        raise ValueError(f"need a (spans >= 2, types) array, got shape {a.shape}")
    return float(np.mean(population_cv(a, axis=0)))


class LevelsError(ValueError):
    """The levels file is malformed; the message names the file and key."""


@dataclass(frozen=True)
class OServeLevels:
    types: list[str]
    spatial: pd.DataFrame   # index level; columns: the types (in %), paper_cv, paper_speedup
    temporal: pd.DataFrame  # index level; columns: spans (list of S-levels), paper_cv, paper_avg_speedup
    source: str


def load_oserve_levels(path: str | os.PathLike | None = None, *, sum_tol_pct: float = 0.2) -> OServeLevels:
    """Read the stated OServe levels (default: ``servesim/workload/data/oserve_levels.yaml``, which the
    OServe workload generator uses too)."""
    import yaml

    if path is None:
        path = Path(gen_oserve.__file__).parent / "data" / "oserve_levels.yaml"
        text, where = path.read_text(), "servesim/workload/data/oserve_levels.yaml"
    else:
        text, where = Path(path).read_text(), str(path)
    doc = yaml.safe_load(text) or {}
    for key in ("types", "spatial", "temporal"):
        if key not in doc:
            raise LevelsError(f"{where}: missing key {key!r}")
    types = list(doc["types"])
    rows = {}
    for level, d in doc["spatial"].items():
        p = d.get("proportions_pct")
        if p is None or len(p) != len(types):
            raise LevelsError(f"{where}: spatial.{level}.proportions_pct must list {len(types)} values ({types}), got {p!r}")
        if any(v < 0 for v in p) or abs(sum(p) - 100.0) > sum_tol_pct:
            raise LevelsError(f"{where}: spatial.{level}.proportions_pct must be >= 0 and sum to 100 (+-{sum_tol_pct}), got {p} (sum {sum(p):.1f})")
        rows[level] = {**dict(zip(types, map(float, p))), "paper_cv": d.get("paper_cv"), "paper_speedup": d.get("paper_speedup")}
    spatial = pd.DataFrame.from_dict(rows, orient="index")
    trows = {}
    for level, d in doc["temporal"].items():
        spans = list(d.get("spans") or [])
        unknown = [s for s in spans if s not in spatial.index]
        if len(spans) < 2 or unknown:
            raise LevelsError(f"{where}: temporal.{level}.spans must name >= 2 spatial levels of {list(spatial.index)}, got {spans}")
        trows[level] = {"spans": spans, "paper_cv": d.get("paper_cv"), "paper_avg_speedup": d.get("paper_avg_speedup")}
    temporal = pd.DataFrame.from_dict(trows, orient="index")
    return OServeLevels(types=types, spatial=spatial, temporal=temporal, source=str(doc.get("source", where)))


def spatial_cv_table(levels: OServeLevels) -> pd.DataFrame:
    """Table 1's CV column recomputed: one row per S-level with proportions, paper CV, our CV."""
    t = levels.spatial.copy()
    t["cv"] = [spatial_cv(t.loc[lv, levels.types].to_numpy()) for lv in t.index]
    return t.rename_axis("level").reset_index()


def temporal_cv_table(levels: OServeLevels) -> pd.DataFrame:
    """Table 2's CV column recomputed from the spans' S-level proportions."""
    t = levels.temporal.copy()
    prop = levels.spatial[levels.types]
    t["cv"] = [temporal_cv(prop.loc[spans].to_numpy()) for spans in t["spans"]]
    t["trace"] = ["\u2192".join(s) for s in t["spans"]]
    return t.drop(columns="spans").rename_axis("level").reset_index()
