"""Reading back OServe's online runs (``python -m servesim.systems.oserve.online``, declared in
workflow/runs/oserve.yaml as ``online/<trace>/<model>/<load>`` and ``levels/<level>/<model>``) for
the notebooks of Figs 9-12, 14, 15, 19 and Tables 1-2.

``load(pattern, table, scale, root)``: one of the runs' tables (systems.csv, spans.csv, plans.csv,
switches.csv) for every declared run matching ``pattern``, with the run's name, model, GPU count and
workload name; an empty frame when this scale declares no such run (the notebooks then write NaN).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from . import runs as runs_api


def declared(pattern: str, scale: str, root=None) -> list:
    import fnmatch

    return [r for n, r in runs_api.declared("oserve", scale, root).items() if fnmatch.fnmatchcase(n, pattern)]


def load(pattern: str, table: str, scale: str, root=None) -> pd.DataFrame:
    parts = []
    for r in declared(pattern, scale, root):
        d = runs_api.run_dir("oserve", r.name, scale, root)
        summ = json.loads((d / "summary.json").read_text())
        df = pd.read_csv(d / table)
        parts.append(df.assign(run=r.name, model=summ["model"], gpus=int(summ["gpus"]), trace=summ["name"],
                               kind=summ["kind"]))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def ratio(a, b) -> float:
    """a / b, NaN when either is missing or b is not positive."""
    a, b = float(a), float(b)
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else float("nan")


def paired(df: pd.DataFrame, value: str, num: str, den: str, by=("model", "trace")) -> pd.Series:
    """value(num) / value(den) for each group in ``by`` (systems in the ``system`` column)."""
    if df.empty:
        return pd.Series(dtype=float)
    p = df.pivot_table(index=list(by), columns="system", values=value, aggfunc="first")
    if num not in p or den not in p:
        return pd.Series(dtype=float)
    return (p[num] / p[den]).dropna()


def with_reading(df: pd.DataFrame, reading: pd.DataFrame, name: str) -> pd.DataFrame:
    """``df`` plus the OServe rows of a named reading's runs (e.g. ``online/*/*/latency-reference``),
    renamed ``name``, so that ``paired`` compares the reading with the main runs' baselines on the
    same workload."""
    if reading.empty:
        return df
    extra = reading[reading.system == "oserve"].assign(system=name)
    return pd.concat([df, extra], ignore_index=True)


OSERVE_VARIANTS = ("oserve", "oserve_naive_reload", "hetero", "oserve_reference")  # OServe and its variants: never a baseline


def vs_best_baseline(df: pd.DataFrame, value: str, higher_is_better: bool, by=("trace",),
                     system: str = "oserve") -> pd.DataFrame:
    """For each group in ``by``: the best baseline on ``value`` (every system of the runs but OServe
    and its variants) and OServe's gain over it (> 1: OServe better; for a latency, baseline /
    OServe; for a throughput, OServe / baseline). Columns: *by, best_baseline, baseline_value,
    oserve_value, gain."""
    cols = [*by, "best_baseline", "baseline_value", "oserve_value", "gain"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    p = df.pivot_table(index=list(by), columns="system", values=value, aggfunc="first")
    base = [c for c in p.columns if c not in OSERVE_VARIANTS]
    if system not in p or not base:
        return pd.DataFrame(columns=cols)
    b = p[base]
    best = b.idxmax(axis=1) if higher_is_better else b.idxmin(axis=1)
    bv = b.max(axis=1) if higher_is_better else b.min(axis=1)
    gain = [ratio(o, v) if higher_is_better else ratio(v, o) for o, v in zip(p[system], bv)]
    out = pd.DataFrame({"best_baseline": best, "baseline_value": bv, "oserve_value": p[system], "gain": gain})
    return out.reset_index()[cols]


def _level_speedups(sysdf: pd.DataFrame, levels, system: str, key: str) -> dict:
    """{key.format(lv=<level>): P99(static) / P99(system)} over the levels, NaN where missing."""
    sp = paired(sysdf, "e2e_p99_s", "static", system, by=("trace",))
    return {key.format(lv=lv.lower()): float(sp.get(lv, float("nan"))) for lv in levels}


def _level_runs(kind: str, scale: str, root=None, reading: str | None = None) -> pd.DataFrame:
    """The systems tables of the level runs (level names are two characters), or of a reading's."""
    return load(f"levels/{kind}-??" + (f"-{reading}" if reading else ""), "systems.csv", scale, root)


def level_speedups(kind: str, levels, scale: str, root=None, system: str = "oserve",
                   reading: str | None = None) -> tuple[pd.DataFrame, dict]:
    """Tables 1-2: (the ``levels/<kind>-*`` runs' systems table, {speedup_<level>: OServe's P99
    E2E speedup over vLLM static}), NaN for a level the scale did not run. Another ``system`` in
    OServe's place (a claim's null) gives keys ``speedup_<level>_<system>``; a named ``reading``
    (its OServe runs ``levels/<kind>-<level>-<reading>``, paired with the level runs' static on the
    same workload) gives keys ``<reading>_speedup_<level>`` and the reading's rows in the table."""
    sysdf = _level_runs(kind, scale, root)
    if reading is not None:
        sysdf = with_reading(sysdf, _level_runs(kind, scale, root, reading), f"oserve_{reading}")
        return sysdf, _level_speedups(sysdf, levels, f"oserve_{reading}", reading + "_speedup_{lv}")
    return sysdf, _level_speedups(sysdf, levels, system, "speedup_{lv}" + ("" if system == "oserve" else f"_{system}"))


#: the online runs' named readings whose OServe rows the notebooks pair with the main runs' static
#: and reload (runs ``online/<trace>/<model>/<load>-<reading>``; workflow/runs/oserve.yaml); `openloop`
#: re-runs every system, so its gains are read within its own runs instead
ONLINE_READINGS = ("reference", "xnode", "balanced", "uniform", "restarts")
#: those that also run on the Tables 1-2 levels (``levels/<level>-<reading>``)
LEVEL_READINGS = ("uniform", "balanced", "xnode", "restarts")


def level_metrics(kind: str, levels, scale: str, root=None, null: str = "static") -> tuple[pd.DataFrame, dict]:
    """Tables 1-2 whole: OServe's speedups, the claims' ``null`` system's in OServe's place, and
    each of `LEVEL_READINGS` (NaN where this scale declares none of its runs); the systems table
    with every reading's OServe rows as ``oserve_<reading>``. The level runs are read once."""
    sysdf = _level_runs(kind, scale, root)
    for rd in LEVEL_READINGS:
        sysdf = with_reading(sysdf, _level_runs(kind, scale, root, rd), f"oserve_{rd}")
    metrics = {**_level_speedups(sysdf, levels, "oserve", "speedup_{lv}"),
               **_level_speedups(sysdf, levels, null, "speedup_{lv}_" + null)}
    for rd in LEVEL_READINGS:
        metrics.update(_level_speedups(sysdf, levels, f"oserve_{rd}", rd + "_speedup_{lv}"))
    return sysdf, metrics


def plot_level_speedups(ax, metrics: dict, levels) -> None:
    """Bars of OServe's P99 speedup per level, with each reading that has numbers beside it."""
    shown = [("", "OServe")] + [(f"{rd}_", rd) for rd in LEVEL_READINGS
                                if any(math.isfinite(metrics.get(f"{rd}_speedup_{lv.lower()}", float("nan")))
                                       for lv in levels)]
    w = 0.8 / len(shown)
    x = np.arange(len(levels))
    for i, (pre, label) in enumerate(shown):
        ax.bar(x + (i - (len(shown) - 1) / 2) * w, [metrics[f"{pre}speedup_{lv.lower()}"] for lv in levels], w,
               label=label)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, levels)
    ax.set_ylabel("P99 speedup vs vLLM static")
    if len(shown) > 1:
        ax.legend(fontsize=7)


def stat(s: pd.Series, how: str) -> float:
    s = pd.Series(s, dtype=float).dropna()
    if s.empty:
        return float("nan")
    return float({"max": s.max, "min": s.min, "mean": s.mean}[how]())


def route_shares(row: pd.Series, types) -> np.ndarray:
    """K x J routing shares of one plans.csv row."""
    return np.array([json.loads(row[f"route_{t}"]) for t in types]).T
