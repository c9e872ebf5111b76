"""The published paper-scale results: `results-full/`, committed so a reviewer sees them without
running hours of simulation.

One part per paper, refreshed one paper at a time (`servesim snapshot --paper P`, or the
workflow's `publish_<paper>` target): each figure's `metrics.json`, `data.csv` and PNG copied from
`results/full/` and `figures/full/`, and `<paper>/STAMP.json` naming the commit that produced them,
whether the tree was dirty, the date, the machine and the wall time of every job. The claims report
of the snapshot (`claims_report.{csv,md}`) is re-checked against today's claims files after every
refresh (`servesim snapshot --recheck`), so a claims edit never leaves it stale.
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from pathlib import Path

from servesim.analysis import runs as runs_api
from servesim.analysis.benchmarks import read_benchmarks
from servesim.analysis.claims import REPORT_COLUMNS, ClaimsError, check_claims, to_markdown, write_csv
from servesim.analysis.provenance import _git, _machine, _versions

SNAPSHOT = "results-full"
SCALE = "full"
STAMP = "STAMP.json"
FILES = ("metrics.json", "data.csv")


class SnapshotError(ValueError):
    """A snapshot that cannot be published or read; the message names the paper or file."""


def figures_of(root: Path, paper: str) -> list[str]:
    return sorted(p.stem for p in (root / "notebooks" / paper).glob("*.ipynb"))


def _wall_times(root: Path, paper: str) -> dict[str, float]:
    """Seconds per job of the paper at full scale, from Snakemake's benchmark files (runs, the
    engine job and notebooks all write `results/full/benchmarks/<paper>/<job>.tsv`)."""
    bench = read_benchmarks(root / "results" / SCALE / "benchmarks" / paper)
    return {r["job"]: round(r["wall_s"], 1) for r in bench if r["wall_s"] is not None}


def stale_jobs(root: str | Path, paper: str, figure: str | None = None) -> list[str]:
    """The jobs Snakemake would still run for the paper at full scale in this checkout (a dry run
    of `full_<paper>`, or of one ``figure`` and the runs it reads): empty when the results are what
    this commit's code, notebooks and parameters produce."""
    import subprocess
    import sys

    # the environment's `snakemake` script, as the README runs it: the workflow's params hold the
    # interpreter path it runs under (python3 via the script's shebang), so `python -m` would differ
    script = Path(sys.executable).parent / "snakemake"
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "snakemake"]
    target = f"results/{SCALE}/{paper}/{figure}/metrics.json" if figure else f"full_{paper}"
    extra = ["--config", f"scale={SCALE}"] if figure else []
    r = subprocess.run([*cmd, "-n", target, *extra], cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        raise SnapshotError(f"snakemake -n {target} failed: {(r.stdout + r.stderr)[-800:]}")
    rows, table = [], False
    for line in (r.stdout + r.stderr).splitlines():
        if line.startswith("job ") and "count" in line:
            table = True
            continue
        if table:
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("total", f"full_{paper}"):
                rows.append(f"{parts[0]} x{parts[1]}")
            elif parts and parts[0] == "total":
                break
    return rows


def _copy_figure(root: Path, paper: str, figure: str, dest: Path) -> None:
    """A figure's metrics, data and PNG from `results/full` and `figures/full` into ``dest``."""
    res, fig_dir = root / "results" / SCALE / paper / figure, root / "figures" / SCALE / paper
    dest.mkdir(parents=True)
    for name in FILES:
        if (res / name).is_file():
            shutil.copy2(res / name, dest / name)
    if (fig_dir / f"{figure}.png").is_file():
        shutil.copy2(fig_dir / f"{figure}.png", dest / f"{figure}.png")


def _origin(root: Path, paper: str) -> dict:
    """The commit this checkout publishes from, what differed from it in the code, notebooks and
    workflow, and when."""
    dirty = _git(root, "status", "--porcelain", "--", "src", "workflow", f"notebooks/{paper}", "pyproject.toml")
    return {"commit": _git(root, "rev-parse", "HEAD"),
            "dirty": sorted(line[3:] for line in (dirty or "").splitlines()),
            "published_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def publish(root: str | Path, paper: str, out: str | Path | None = None, stale: list[str] | None = None) -> dict:
    """Copy one paper's full-scale outputs into the snapshot and stamp them. Figures the full run
    has not written are listed in the stamp as missing (their claims then read PENDING); a paper
    with no full-scale output at all is an error."""
    root = Path(root)
    out = Path(out) if out else root / SNAPSHOT
    figs = figures_of(root, paper)
    if not figs:
        raise SnapshotError(f"notebooks/{paper}: no notebooks (is {paper!r} a paper of this project?)")
    res = root / "results" / SCALE / paper
    have = [f for f in figs if (res / f / "metrics.json").is_file()]
    if not have:
        raise SnapshotError(f"results/{SCALE}/{paper}: no figure has been run at full scale "
                            f"(run `snakemake --cores N full_{paper}` first)")
    part = out / paper
    staging = out / f".{paper}.part"
    shutil.rmtree(staging, ignore_errors=True)
    for f in have:
        _copy_figure(root, paper, f, staging / f)
    walls = _wall_times(root, paper)
    stamp = {
        "paper": paper, "scale": SCALE, **_origin(root, paper),
        "results_newest_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(
            max((res / f / "metrics.json").stat().st_mtime for f in have))),
        "machine": _machine(), "packages": _versions(),
        "wall_s_total": round(sum(walls.values()), 1), "wall_s": walls,
        "figures": have, "missing": [f for f in figs if f not in have],
        # jobs Snakemake would still run here (published with --allow-stale); empty: up to date
        "stale_jobs": list(stale or []),
    }
    (staging / STAMP).write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    shutil.rmtree(part, ignore_errors=True)
    staging.rename(part)
    return stamp


def remake(root: str | Path, paper: str, figures: list[str], out: str | Path | None = None) -> dict:
    """Replace some figures of a published paper by this checkout's full-scale outputs (a figure
    re-drawn, or its runs re-run alone), keeping the rest of the part and its stamp. The stamp's
    ``remade`` names, per figure, the commit and date it now comes from, so a reviewer sees which
    files postdate the paper's run. A published figure whose notebook is gone (removed or renamed)
    leaves the part, stamp entries included: the claims can no longer cite it."""
    root = Path(root)
    out = Path(out) if out else root / SNAPSHOT
    part = out / paper
    st = stamps(root, out).get(paper)
    if st is None:
        raise SnapshotError(f"{part}: {paper} is not published; publish it whole first (--paper {paper})")
    known = figures_of(root, paper)
    res = root / "results" / SCALE / paper
    for f in figures:
        if f not in known:
            raise SnapshotError(f"--figure {f}: not a notebook of {paper} (known: {', '.join(known)})")
        if not (res / f / "metrics.json").is_file():
            raise SnapshotError(f"{res / f / 'metrics.json'}: not written; run the figure at full scale first")
    origin, walls = _origin(root, paper), _wall_times(root, paper)
    remade = dict(st.get("remade", {}))
    for f in figures:
        staging = part / f".{f}.part"
        shutil.rmtree(staging, ignore_errors=True)
        _copy_figure(root, paper, f, staging)
        shutil.rmtree(part / f, ignore_errors=True)
        staging.rename(part / f)
        remade[f] = {**origin, "wall_s": walls.get(f)}
    # the runs behind the re-made figures: their wall times now come from the runs whose outputs
    # are published (re-run or not, this checkout's benchmark files are those of its results)
    job_walls = dict(st.get("wall_s", {}))
    for f in figures:
        for job in (f, *runs_api.figure_runs(paper, f, SCALE, root)):
            if job in walls:
                job_walls[job] = walls[job]
    gone = [f for f in (*st.get("figures", []), *st.get("missing", [])) if f not in known]
    for f in gone:
        shutil.rmtree(part / f, ignore_errors=True)
        remade.pop(f, None)
        job_walls.pop(f, None)
    stamp = dict(st, remade=remade, wall_s=job_walls, wall_s_total=round(sum(job_walls.values()), 1))
    stamp["figures"] = sorted((set(st.get("figures", [])) - set(gone)) | set(figures))
    stamp["missing"] = [f for f in st.get("missing", []) if f not in figures and f not in gone]
    tmp = part / f".{STAMP}.part"
    tmp.write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    tmp.replace(part / STAMP)
    return stamp


def stamps(root: str | Path, out: str | Path | None = None) -> dict[str, dict]:
    out = Path(out) if out else Path(root) / SNAPSHOT
    found = {}
    for f in sorted(out.glob(f"*/{STAMP}")):
        try:
            found[f.parent.name] = json.loads(f.read_text())
        except (OSError, ValueError) as exc:
            raise SnapshotError(f"{f}: not readable JSON: {exc}") from None
    return found


def _header(st: dict[str, dict]) -> str:
    parts = [f"{p} at {s.get('commit', '?')[:10]}{' (dirty)' if s.get('dirty') else ''}"
             f"{' (STALE: jobs left)' if s.get('stale_jobs') else ''}, "
             f"published {s.get('published_utc', '?')}, {s.get('wall_s_total', 0) / 60:.0f} min of jobs"
             + (f", {len(s['missing'])} figure(s) not run" if s.get("missing") else "")
             + "".join(f", {f} re-made at {m.get('commit', '?')[:10]}" for f, m in sorted(s.get("remade", {}).items()))
             for p, s in st.items()]
    return ("Parts: " + "; ".join(parts) + ".") if parts else "No paper has been published yet."


def report_rows(root: str | Path, out: str | Path | None = None) -> list[dict]:
    """The snapshot's claims rows: today's claims files checked against its metrics; a paper not
    yet published reads PENDING and says so."""
    root = Path(root)
    out = Path(out) if out else root / SNAPSHOT
    try:
        rows = check_claims(root, SCALE, results_dir=out)
    except ClaimsError as exc:
        raise SnapshotError(f"{out}: the snapshot does not fit today's claims files: {exc}") from None
    published = stamps(root, out)
    for r in rows:  # a paper never published: say so rather than "not run at full scale"
        if r["status"] == "PENDING" and r["paper"].split(" ", 1)[0] not in published:
            r["reason"] = f"not yet published in {SNAPSHOT}/ (servesim snapshot --paper ...)"
    return rows


def recheck(root: str | Path, out: str | Path | None = None) -> list[dict]:
    """Write the snapshot's claims report (`claims_report.{csv,md}`, `report_rows`) into it."""
    root = Path(root)
    out = Path(out) if out else root / SNAPSHOT
    out.mkdir(parents=True, exist_ok=True)
    rows = report_rows(root, out)
    write_csv(rows, out / "claims_report.csv")
    md = to_markdown(rows, SCALE).replace("\n\n", f"\n\n{_header(stamps(root, out))}\n\n", 1)
    (out / "claims_report.md").write_text(md)
    return rows


def read_report(root: str | Path, out: str | Path | None = None) -> list[dict] | None:
    """The snapshot's claims rows as published (None where there is no snapshot)."""
    f = (Path(out) if out else Path(root) / SNAPSHOT) / "claims_report.csv"
    if not f.is_file():
        return None
    with open(f, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if rows and tuple(rows[0]) != REPORT_COLUMNS:
        raise SnapshotError(f"{f}: columns {list(rows[0])} are not the report's {list(REPORT_COLUMNS)}; "
                            "re-check it with `servesim snapshot --recheck`")
    return rows
