"""docs/timings.md, generated: how long a newcomer's two commands take, and where the quick target's
time goes.

Two sources, both data, so no number on the page is typed by hand:

* **Fresh-clone records** (``benchmarks/records/fresh_clone.jsonl``, one JSON object per line),
  appended by ``benchmarks/fresh_clone.py``, which clones a commit, runs the README's two quick-start
  commands verbatim (as CI does) and times them. Older measurements were transcribed from the
  session notes that first reported them (``"source": "transcribed"``).
* **The quick target's per-job wall times** (Snakemake's ``benchmark:`` files of a finished quick
  run, :mod:`.benchmarks`), each job with the claims it feeds: a run feeds the figures whose params
  name it (or a run that collects it), a figure the claims that read its metrics.

    servesim timings --md docs/timings.md     # rewrite the page from the records and results/quick
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from ..errors import InputError
from . import runs as runs_api
from .benchmarks import read_benchmarks

RECORDS = Path("benchmarks") / "records" / "fresh_clone.jsonl"
SCRIPT_RECORDS = Path("benchmarks") / "records" / "scripts.jsonl"
RECORD_KEYS = ("date", "commit", "commands")
SCRIPT_KEYS = ("script", "command", "result")


class TimingsError(InputError):
    """A malformed record (its file and line named)."""


def _jsonl(path: Path, keys: tuple[str, ...]) -> list[tuple[int, dict]]:
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise TimingsError(f"{path}:{i}: not JSON ({e})") from None
        missing = [k for k in keys if k not in rec] if isinstance(rec, dict) else list(keys)
        if missing:
            raise TimingsError(f"{path}:{i}: a record needs {missing}")
        out.append((i, rec))
    return out


def read_records(path: str | Path) -> list[dict]:
    """The fresh-clone records in ``path``, newest first (by date, then file order)."""
    path = Path(path)
    out = []
    for i, rec in _jsonl(path, RECORD_KEYS):
        if not isinstance(rec["commands"], list) or not all(
                isinstance(c, dict) and {"command", "wall_s"} <= set(c) for c in rec["commands"]):
            raise TimingsError(f"{path}:{i}: commands must be a list of {{command, wall_s, ...}}")
        out.append((rec["date"], i, rec))
    return [r for _, _, r in sorted(out, key=lambda t: (t[0], t[1]), reverse=True)]


def read_script_records(path: str | Path) -> dict[str, dict]:
    """The newest record of each benchmark command in ``path`` (later lines win)."""
    return {rec["command"]: rec for _, rec in _jsonl(Path(path), SCRIPT_KEYS)}


def _result_text(result: dict) -> str:
    """A recorded JSON line as text: a transcribed record's ``measured`` sentence, else its scalars."""
    if set(result) == {"measured"}:
        return str(result["measured"])
    if set(result) == {"lines"}:  # one JSON line per configuration
        return " / ".join(_result_text(r) for r in result["lines"] if isinstance(r, dict))
    parts = []
    for k, v in _flat(result):
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            continue
        parts.append(f"{k} {v:,.4g}" if isinstance(v, float) else f"{k} {v}")
    return ", ".join(parts)


def _flat(d: dict, prefix: str = ""):
    """(dotted key, value) of a nested result, in its order."""
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def job_claims(root: str | Path, scale: str = "quick") -> dict[str, list[str]]:
    """``{benchmark job ("<paper>/<run or figure>"): [claim id, ...]}`` for every declared run and
    figure of every paper: the claims judged on what the job writes (empty: none judges it)."""
    from .claims import load_all_claims

    root = Path(root)
    claims_by_fig: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in load_all_claims(root / "workflow" / "claims"):
        if c.not_reproducible or (scale == "quick" and c.quick_skip):
            continue  # not judged here (NOT-REPRODUCIBLE, or at paper scale only)
        claims_by_fig[(c.paper, c.figure)].append(c.id)
        if c.null_system is not None and c.null_system.figure not in (None, c.figure):
            claims_by_fig[(c.paper, c.null_system.figure)].append(c.id)
    out: dict[str, list[str]] = {}
    for paper in runs_api.papers(root):
        params = runs_api.figure_params(paper, root)
        declared = runs_api.declared(paper, scale, root)
        figs_of: dict[str, set[str]] = defaultdict(set)
        for fig in params:
            for name in runs_api.figure_runs(paper, fig, scale, root):
                figs_of[name].add(fig)
        for name in declared:
            out[f"{paper}/{name}"] = sorted({i for f in figs_of[name] for i in claims_by_fig.get((paper, f), [])})
        for fig in params:
            out[f"{paper}/{fig}"] = sorted(claims_by_fig.get((paper, fig), []))
    return out


def _ids(ids: list[str], k: int = 4) -> str:
    if not ids:
        return "none"
    short = ", ".join(ids[:k])
    return short + (f" and {len(ids) - k} more" if len(ids) > k else "")


def _fmt_s(v) -> str:
    return "" if v is None else f"{v:,.0f}"


def _snapshot_section(root: Path) -> list[str]:
    """Paper scale: each published part's job count and job wall time (its STAMP.json)."""
    from .snapshot import stamps

    found = stamps(root)
    if not found:
        return []
    out = ["", "## Paper scale (the published snapshot)", "",
           "Summed job wall time of each paper's run on record (`results-full/<paper>/STAMP.json`, which also "
           "names the machine; two jobs ran at a time, so the wall clock was shorter).", "",
           "| paper | commit | jobs | job wall s | slowest job | its s |", "|---|---|---|---|---|---|"]
    for paper, st in found.items():
        walls = st.get("wall_s") or {}
        slow = max(walls, key=walls.get) if walls else ""
        out.append(f"| {st.get('paper', paper)} | `{str(st.get('commit', ''))[:7]}` | {len(walls)} | "
                   f"{_fmt_s(st.get('wall_s_total'))} | {slow} | {_fmt_s(walls.get(slow))} |")
    return out


def write_page(root: str | Path, md: str | Path | None = None, scale: str = "quick") -> Path:
    """Rewrite ``md`` (default docs/timings.md under ``root``) from the records: what every writer
    of a record does after appending one, so the page (which a test checks) never lags them."""
    from servesim.output_dir import atomic_file

    md = Path(md) if md is not None else Path(root) / "docs" / "timings.md"
    text = render(Path(root), scale)
    with atomic_file(md) as tmp:
        Path(tmp).write_text(text)
    return md


def render(root: str | Path, scale: str = "quick", n: int = 10, records: str | Path | None = None) -> str:
    """The page's markdown."""
    root = Path(root)
    rec_file = root / (records or RECORDS)
    recs = read_records(rec_file) if rec_file.exists() else []
    lines = ["# Timings", "",
             "Generated by `servesim timings --md docs/timings.md` from `benchmarks/records/fresh_clone.jsonl` "
             f"and the {scale} target's per-job benchmark files (`results/{scale}/benchmarks/`); edit those, "
             "not this page. `benchmarks/fresh_clone.py` adds a record. Speed targets are met in the "
             "benchmark scripts of `benchmarks/` (each prints one JSON line), never in timed tests.", "",
             "## A newcomer's two commands, in a fresh clone", "",
             "The README's quick-start commands run verbatim (install + quick target, then the tests). "
             "Wall seconds; `job s` is the quick target's summed job wall time (two jobs at a time), "
             "`target s` the quick target's own wall time (Snakemake's; the rest of the first command is the "
             "install), `sched. CPU s` the CPU Snakemake's own process used meanwhile (blank: not recorded). "
             "`caches`: `cold` when the per-user caches (the OServe capacity profiles, vLLM's, matplotlib's, "
             "pip's) started empty, as on a new machine (`fresh_clone.py --cold`); `as found` when the clone "
             "shared them with earlier runs on the same machine, which saves the OServe profiling; blank: not "
             "recorded (a machine that had run the pipeline before).", "",
             "| date | commit | caches | first command s | target s | quick jobs | job s | sched. CPU s | test command s "
             "| passed | skipped | failed | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        cmds = r["commands"] + [{}] * (2 - len(r["commands"]))
        py = r.get("pytest") or {}
        note = r.get("note", "")
        mark = "†" if r.get("source") == "transcribed" else ""
        lines.append(f"| {r['date']} | `{r['commit'][:7]}`{mark} | {r.get('caches', '')} | {_fmt_s(cmds[0].get('wall_s'))} | "
                     f"{_fmt_s(r.get('quick_target_wall_s'))} | {r.get('quick_jobs', '')} | {_fmt_s(r.get('quick_job_wall_s'))} | {_fmt_s(r.get('scheduler_cpu_s'))} | "
                     f"{_fmt_s(cmds[1].get('wall_s'))} | "
                     f"{py.get('passed', '')} | {py.get('skipped', '')} | {py.get('failed', '')} | {note} |")
    if any(r.get("source") == "transcribed" for r in recs):
        lines += ["", "Rows whose commit is marked † were transcribed from the session notes that first reported them."]
    lines += ["", "## Benchmark scripts", "",
              "The newest record of each command (`python benchmarks/record.py <script> [args]` runs one and "
              "appends its JSON line). 1 core unless the record says; † transcribed from earlier sessions' notes.",
              "", "| command | what | date | commit | result |", "|---|---|---|---|---|"]
    script_recs = root / SCRIPT_RECORDS
    for cmd, r in (read_script_records(script_recs).items() if script_recs.exists() else []):
        commit = f"`{r['commit'][:7]}`" if r.get("commit") else ""
        mark = "†" if r.get("source") == "transcribed" else ""
        lines.append(f"| `{cmd}` | {r.get('what', '')} | {r.get('date') or ''} | {commit}{mark} | "
                     f"{_result_text(r['result']).replace('|', '/')} |")
    lines += _snapshot_section(root)
    bench = root / "results" / scale / "benchmarks"
    rows = [r for r in read_benchmarks(bench) if r["wall_s"] is not None]  # job: "<group>/<job>"
    lines += ["", f"## Where the {scale} target's time goes", ""]
    if not rows:
        lines.append(f"No benchmark files under `results/{scale}/benchmarks/` when this page was generated.")
        return "\n".join(lines) + "\n"
    rows.sort(key=lambda r: (-r["wall_s"], r["job"]))
    total = sum(r["wall_s"] for r in rows)
    feeds = job_claims(root, scale)
    by_group: dict[str, float] = defaultdict(float)
    for r in rows:
        by_group[r["job"].split("/", 1)[0]] += r["wall_s"]
    lines += [f"{len(rows)} benchmarked jobs, {total:,.0f} s of job wall time: "
              + ", ".join(f"{g} {s:,.0f} s" for g, s in sorted(by_group.items(), key=lambda t: -t[1])) + ".", "",
              f"The {min(n, len(rows))} slowest, each with the claims judged on what it writes "
              "(a run's through the figures that read it):", "",
              "| job | wall s | claims it feeds |", "|---|---|---|"]
    for r in rows[:n]:
        ids = feeds.get(r["job"])
        lines.append(f"| {r['job']} | {r['wall_s']:,.1f} | {_ids(ids) if ids is not None else 'not a paper run or figure (no claim reads it directly)'} |")
    return "\n".join(lines) + "\n"
