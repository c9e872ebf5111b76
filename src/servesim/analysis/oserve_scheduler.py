"""Reading back the OServe scheduler's runs (``python -m servesim.systems.oserve.search``, declared in
workflow/runs/oserve.yaml) for the notebooks of Fig 16, Table 3 and App. J.

``load(patterns, scale, root)``: every matching run's cases.csv (one row per case x plan: heuristic,
exhaustive, static; with ``--search-seeds`` also ``heuristic@seed<k>``) with the run's name, model
and GPU count, in declaration order. ``by_seed``: one frame per Alg. 1 search seed, for metrics
summarised over the seeds (``metrics.seed_band``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..metrics.spread import seed_band
from ..systems.oserve.search import SEED_TAG
from . import runs as runs_api

__all__ = ["SEED_TAG", "all_draws", "by_seed", "load", "over_seeds", "replica_label", "summaries", "table3_row", "value"]


def load(patterns, scale: str, root=None) -> pd.DataFrame:
    parts = []
    for r in runs_api.select("oserve", patterns, scale, root):
        d = runs_api.run_dir("oserve", r.name, scale, root)
        summ = json.loads((d / "summary.json").read_text())
        df = pd.read_csv(d / "cases.csv")
        parts.append(df.assign(run=r.name, model=summ["model"], cluster_gpus=int(summ["gpus"]),
                               profile_seconds=float(summ["profile_seconds"])))
    return pd.concat(parts, ignore_index=True)


def summaries(patterns, scale: str, root=None) -> dict[str, dict]:
    return {r.name: json.loads((runs_api.run_dir("oserve", r.name, scale, root) / "summary.json").read_text())
            for r in runs_api.select("oserve", patterns, scale, root)}


def by_seed(df: pd.DataFrame) -> list[tuple[int, pd.DataFrame]]:
    """One frame per Alg. 1 search seed (cases.csv's ``search_seed``): that seed's rows under the
    base plan names ('heuristic@seed1' -> 'heuristic'), the other seeds' rows dropped, the
    seedless plans (exhaustive, static, previous) as they are. So the metrics of one draw of the
    search are computed by the same code on every seed."""
    seeded = df.search_seed.notna()
    base = df.plan.str.split(SEED_TAG).str[0]
    out = []
    for s in sorted(df.loc[seeded, "search_seed"].unique()):
        keep = ~seeded | (df.search_seed == s)
        out.append((int(s), df[keep].assign(plan=base[keep])))
    return out


def all_draws(df: pd.DataFrame) -> pd.DataFrame:
    """Every draw's rows under the base plan names, stacked (``search_seed`` tells them apart): the
    frame a figure's seed band is drawn from."""
    return pd.concat([d for _, d in by_seed(df)])


def over_seeds(df: pd.DataFrame, metrics_of, keys: tuple[str, ...] | None = None) -> dict:
    """``metrics_of`` on each draw (:func:`by_seed`), summarised by ``metrics.seed_band``, plus
    ``search_seeds`` (the seeds); ``keys``: only the metrics whose names start with one of them."""
    draws = by_seed(df)
    per = [metrics_of(d) for _, d in draws]
    if keys:
        per = [{k: v for k, v in m.items() if k.startswith(keys)} for m in per]
    return {**seed_band(per), "search_seeds": [s for s, _ in draws]}


def value(df: pd.DataFrame, column: str, **where) -> float:
    """The one value of ``column`` in the rows matching ``where`` (NaN when none)."""
    sel = np.ones(len(df), bool)
    for k, v in where.items():
        sel &= (df[k] == v).to_numpy()
    vals = df.loc[sel, column].dropna()
    if len(vals) > 1:
        raise ValueError(f"{column} at {where}: {len(vals)} rows, expected one")
    return float(vals.iloc[0]) if len(vals) else float("nan")


def replica_label(label: str) -> str:
    """Table 3's spelling of one of our shape labels: 'TP2,PP2*' -> '(TP2,PP2)' (* = stages on two nodes)."""
    s = label.strip().rstrip("*")
    if s.startswith("TP1,"):
        s = s[4:]  # pure pipeline: Table 3 writes (PP4)
    return f"({s})"


def table3_row(deployment: str) -> str:
    """'TP3,PP2 + TP2 + TP2' -> '(TP3,PP2), (TP2)x2' (replicas grouped, largest first)."""
    reps = [replica_label(x) for x in deployment.split(" + ")]
    order = sorted(set(reps), key=lambda r: (-reps.count(r), r))
    return ", ".join(r + (f"x{reps.count(r)}" if reps.count(r) > 1 else "") for r in order)
