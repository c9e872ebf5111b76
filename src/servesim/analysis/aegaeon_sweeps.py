"""Aegaeon Figs 11-13: the load sweeps of ``workflow/runs/aegaeon.yaml``, read back and summarised.

Each run is one system over one sweep (``servesim.systems.aegaeon.sweep``); its name's parts
are the figure's facets, e.g. ``fig12/rps0p5/ox2/sllm`` -> panel ``rps0p5``, data ``ox2``, system
``sllm``. :func:`load` gathers every run under a prefix into one table of points;
:func:`goodput` gives each sweep's goodput (``servesim.metrics.slo.goodput_x`` on the mean
attainment per load, 90 % line); MuxServe is the artifact's capacity rule
(``servesim.systems.aegaeon.muxserve``): 100 % up to 32 models, no placement beyond.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics.bounds import BOUND_SUFFIX, with_censoring
from ..metrics.slo import GOODPUT_READINGS, goodput_x
from ..metrics.spread import seed_band
from ..systems.aegaeon import muxserve
from ..systems.aegaeon.slo import GOODPUT_LINE as LINE
from .outputs import project_root
from .runs import select

LABELS = {"aegaeon": "Aegaeon", "sllm": "ServerlessLLM", "sllm_plus": "ServerlessLLM+", "muxserve": "MuxServe"}
STYLE = {"aegaeon": ("tab:red", "o-"), "sllm": ("tab:blue", "s-"), "sllm_plus": ("tab:green", "^-"),
         "muxserve": ("tab:purple", "D--")}


def declared(pattern: str, scale: str, root=None) -> bool:
    """Whether any run matching ``pattern`` is declared at this scale (workflow/runs/aegaeon.yaml):
    a named reading may run at some scales only."""
    return bool(select("aegaeon", pattern, scale, root))


def load(pattern: str, facets: list[str], scale: str, root=None) -> pd.DataFrame:
    """Every point of the runs matching ``pattern`` (named ``<figure>/<facet>/.../<system>``, e.g.
    ``fig11/rps0p*/*``): the points.csv rows with one column per facet, ``x`` (the swept quantity's
    value) and ``x_name``."""
    frames = []
    for r in select("aegaeon", pattern, scale, root):
        parts = r.name.split("/")[1:]
        if len(parts) != len(facets) + 1:
            raise ValueError(f"aegaeon run {r.name!r}: expected facets {facets} and a system after the figure")
        d = (Path(root) if root else project_root()) / r.dir
        pts = pd.read_csv(d / "points.csv")
        summ = json.loads((d / "summary.json").read_text())
        pts = pts.assign(**dict(zip(facets, parts[:-1])), run=r.name, x_name=summ["x"],
                         x=pts[summ["x"]].astype(float), slo_scale=summ["slo_scale"])
        frames.append(pts)
    if not frames:
        raise ValueError(f"no aegaeon runs match {pattern!r} at {scale} scale")
    return pd.concat(frames, ignore_index=True)


DETAIL_TABLES = ("requests", "switches", "host_cache")


def load_detail(pattern: str, table: str, scale: str, root=None) -> pd.DataFrame:
    """One ``--detail`` table (``requests``, ``switches`` or ``host_cache``) of every run matching
    ``pattern``, concatenated, with the run's name in ``run`` and its panel (the name's second
    part) in ``panel``."""
    if table not in DETAIL_TABLES:
        raise ValueError(f"load_detail: table={table!r}; expected one of {DETAIL_TABLES}")
    frames = []
    for r in select("aegaeon", pattern, scale, root):
        d = (Path(root) if root else project_root()) / r.dir
        df = pd.read_csv(d / f"{table}.csv")
        frames.append(df.assign(run=r.name, panel=r.name.split("/")[1]))
    if not frames:
        raise ValueError(f"no aegaeon runs match {pattern!r} at {scale} scale")
    return pd.concat(frames, ignore_index=True)


def curves(points: pd.DataFrame, by: list[str], muxserve_rule: bool = True) -> pd.DataFrame:
    """Mean attainment per (facets, x_name, system, x) over repeats, in both readings (percent),
    with MuxServe's capacity-rule curve added on every #models sweep (``muxserve_rule``)."""
    keys = [*by, "x_name", "system", "x"]
    cur = (points.groupby(keys, sort=True)[["attainment_pct", "attainment_token_pct", "n_failed", "n_requests"]]
           .mean().reset_index())
    return with_muxserve(cur, [*by, "x_name"]) if muxserve_rule else cur


def with_muxserve(cur: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Add MuxServe's capacity-rule curve on every #models sweep (NaN beyond its 32 models)."""
    rows = [{**dict(zip(by, key)), "system": "muxserve", "x": x, "x_name": "models",
             "attainment_pct": 100.0 * muxserve.attainment(int(x)), "attainment_token_pct": 100.0 * muxserve.attainment(int(x))}
            for key, g in cur[cur.x_name == "models"].groupby(by, sort=False) for x in sorted(g.x.unique())]
    return pd.concat([cur, pd.DataFrame(rows)], ignore_index=True) if rows else cur


def goodput(cur: pd.DataFrame, by: list[str], reading: str = "largest_meeting") -> pd.DataFrame:
    """Goodput per (facets, system): the largest load meeting the 90 % line (``reading``: see
    ``goodput_x``); ``below_grid`` marks sweeps where no load met it (goodput 0), ``at_grid_max``
    those whose largest load met it (the goodput is at least that: the sweep ends first)."""
    if reading not in GOODPUT_READINGS:
        raise ValueError(f"goodput: reading={reading!r}; expected one of {GOODPUT_READINGS}")
    rows = []
    for key, swept in cur.groupby([*by, "system"], sort=False):
        g = swept.dropna(subset=["attainment_pct"])   # NaN: no placement (MuxServe's rule beyond its 32)
        gp = goodput_x(g.x, g.attainment_pct / 100.0, LINE, reading) if len(g) else float("nan")
        rows.append({**dict(zip([*by, "system"], key)), "goodput": 0.0 if np.isnan(gp) else gp,
                     "below_grid": bool(np.isnan(gp)), "at_grid_max": bool(len(g)) and gp == float(swept.x.max()),
                     "x_min": float(g.x.min()) if len(g) else np.nan,
                     "x_max": float(g.x.max()) if len(g) else np.nan, "reading": reading})
    return pd.DataFrame(rows)


def ratio(a: float, b: float) -> float:
    """a / b, NaN when b is 0 (a system with no load meeting the line)."""
    return float(a) / float(b) if b else float("nan")


def band(points: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per (facets, system, x): the lowest and highest attainment over the seeds (``repeat``) of a
    generated-workload sweep, the band a single workload per point cannot show."""
    g = points.groupby([*by, "system", "x"], sort=True).attainment_pct
    return pd.DataFrame({"lo": g.min(), "hi": g.max(), "seeds": g.size()}).reset_index()


def censored_metrics(gp: pd.DataFrame, metrics_of) -> dict:
    """``metrics_of(gp)`` plus ``<key>__bound`` (``servesim.metrics.bounds``) for every key computed
    from a goodput the grid censors (``at_grid_max``: the sweep ends before the system misses the
    line, so its goodput is at least that load): each such goodput is raised in turn and the keys it
    moves are bounds, not measurements."""
    col = gp.columns.get_loc("goodput")

    def compute(raised: list[int]) -> dict:
        if not raised:
            return metrics_of(gp)
        g = gp.copy()
        for i in raised:
            v = float(g.iat[i, col])
            g.iat[i, col] = v + max(abs(v) * 1e-6, 1e-9)
        return metrics_of(g)
    return with_censoring(compute, [int(i) for i in np.flatnonzero(gp["at_grid_max"].to_numpy(bool))])


def seed_metrics(points: pd.DataFrame, by: list[str], reading: str, metrics_of) -> dict:
    """``metrics_of`` on each seed's sweep alone (curves, goodput under ``reading``), summarised over
    the seeds by ``metrics.seed_band`` (``<key>__seed_min`` / ``__seed_max`` / ``__seed_mean``; a
    value the grid censors in some seed passes its bound on)."""
    return seed_band([censored_metrics(goodput(curves(g, by), by, reading), metrics_of)
                      for _, g in points.groupby("repeat", sort=True)])


def plot(ax, cur: pd.DataFrame, gp: pd.DataFrame | None = None, systems=("aegaeon", "sllm", "sllm_plus", "muxserve"),
         bands: pd.DataFrame | None = None):
    """One panel: attainment vs load per system, the 90 % line and each system's goodput line
    (marked "≥" where the sweep ends before the system misses the line: a lower bound);
    ``bands`` (from :func:`band`) shades each system's seed band."""
    for s in systems:
        g = cur[cur.system == s].sort_values("x")
        if g.empty:
            continue
        color, style = STYLE[s]
        if bands is not None:
            b = bands[bands.system == s].sort_values("x")
            if len(b):
                ax.fill_between(b.x, b.lo, b.hi, color=color, alpha=0.15, lw=0)
        ax.plot(g.x, g.attainment_pct, style, color=color, ms=3, lw=1, label=LABELS[s])
        if gp is not None:
            v = gp[gp.system == s]
            if len(v) and v.goodput.iloc[0] > 0:
                ax.axvline(v.goodput.iloc[0], color=color, ls=":", lw=0.8)
                if v.at_grid_max.iloc[0]:   # the sweep ended first: the goodput is at least this load
                    ax.annotate("≥", (v.goodput.iloc[0], 3), color=color, fontsize=9, ha="right", va="bottom")
    ax.axhline(100 * LINE, color="0.4", ls="--", lw=0.8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("SLO attainment (%)")


def metrics_by_reading(cur: pd.DataFrame, by: list[str], reading: str, metrics_of) -> dict:
    """``metrics_of(goodput table)`` under ``reading``, plus the same keys suffixed ``__<other>`` under
    every other goodput reading, so the report shows which numbers the reading decides."""
    out = {"goodput_reading": reading, **censored_metrics(goodput(cur, by, reading), metrics_of)}
    for other in GOODPUT_READINGS:
        if other != reading:
            out.update({_suffixed(k, f"__{other}"): v
                        for k, v in censored_metrics(goodput(cur, by, other), metrics_of).items()})
    return out


def _suffixed(key: str, suffix: str) -> str:
    """``key`` with ``suffix`` before its bound suffix, so a bound stays ``<metric>__bound``."""
    if key.endswith(BOUND_SUFFIX):
        return f"{key[: -len(BOUND_SUFFIX)]}{suffix}{BOUND_SUFFIX}"
    return f"{key}{suffix}"
