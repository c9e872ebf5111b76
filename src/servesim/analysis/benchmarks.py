"""The workflow's per-job wall times: Snakemake's `benchmark:` files (``results/<scale>/benchmarks/**.tsv``).

One reader for the report's Runtimes page, the published snapshot's stamp and the summary printed
when a workflow run ends (the slowest jobs, so a newcomer sees where the time went).
"""

from __future__ import annotations

import csv
from pathlib import Path


def read_benchmarks(bench_dir: str | Path) -> list[dict]:
    """One row per benchmark file under ``bench_dir``: ``job`` (its path without ``.tsv``), ``wall_s``,
    ``hms``, ``max_rss_mb``, ``cpu_s`` (floats where numeric, else None; the file's last repeat) and
    ``mtime`` (when the file was written)."""
    bench_dir = Path(bench_dir)
    rows = []
    for f in sorted(bench_dir.rglob("*.tsv")):
        with open(f, newline="") as fh:
            recs = list(csv.DictReader(fh, delimiter="\t"))
        if not recs:
            continue
        rec = recs[-1]
        rows.append({"job": str(f.relative_to(bench_dir).with_suffix("")), "wall_s": _num(rec.get("s")),
                     "hms": rec.get("h:m:s", ""), "max_rss_mb": _num(rec.get("max_rss")),
                     "cpu_s": _num(rec.get("cpu_time")), "mtime": f.stat().st_mtime})
    return rows


def _num(v) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def slowest_summary(results_dir: str | Path, since: float | None = None, n: int = 10,
                    scheduler: tuple[float, float] | None = None) -> str:
    """The ``n`` slowest jobs benchmarked under ``results_dir/<scale>/benchmarks`` (only files written
    at or after ``since``, a time.time() value, when given), one per line; empty when there are none.
    ``scheduler``: (CPU s, wall s) of the Snakemake process itself, printed after the jobs (its own
    work competes with the jobs for the cores)."""
    rows = []
    for bdir in sorted(Path(results_dir).glob("*/benchmarks")):
        rows += [{**r, "job": f"{bdir.parent.name}/{r['job']}"} for r in read_benchmarks(bdir)
                 if r["wall_s"] is not None and (since is None or r["mtime"] >= since)]
    if not rows:
        return ""
    rows.sort(key=lambda r: (-r["wall_s"], r["job"]))
    total = sum(r["wall_s"] for r in rows)
    head = (f"servesim: the {min(n, len(rows))} slowest of the {len(rows)} jobs this run benchmarked "
            f"({total:.0f} s of job wall time in all; every job: the report's Runtimes page):")
    lines = [head, *(f"  {r['wall_s']:8.1f} s  {r['job']}" for r in rows[:n])]
    if scheduler is not None:
        cpu, wall = scheduler
        lines.append(f"servesim: Snakemake itself used {cpu:.0f} CPU s in {wall:.0f} s of wall time "
                     f"({100 * cpu / max(wall, 1e-9):.0f} % of one core)")
    return "\n".join(lines)
