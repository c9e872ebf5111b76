"""A newcomer's two commands, timed in a fresh clone; the result appended to
``benchmarks/records/fresh_clone.jsonl`` (what ``servesim timings`` renders into docs/timings.md).

    python benchmarks/fresh_clone.py DEST [--commit HEAD] [--cold] [--note TEXT] [--no-record]

Clones this checkout at ``--commit`` into DEST (which must not exist; its parent must hold whatever
the README expects beside a checkout, such as the data mirror), runs the README's quick-start
commands there verbatim (``.ci/quickstart-commands``: what CI runs) and records each command's
exit status and wall time, the quick target's job
count and summed job wall time (its benchmark files), and pytest's counts. Run it with nothing
else on the machine: the numbers are wall times.

A clone on a machine that has run the pipeline before still finds the per-user caches filled (the
OServe capacity profiles, vLLM's and matplotlib's caches, pip's wheels); ``--cold`` points them at an
empty folder beside DEST (DEST.cold-cache: ``XDG_CACHE_HOME`` and the tools' own variables), which is what a new
machine meets. The record says which (``caches``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from servesim.analysis.benchmarks import read_benchmarks  # noqa: E402
from servesim.analysis.timings import write_page  # noqa: E402


def quickstart_commands(checkout: Path) -> list[str]:
    """The README's quick-start commands, as CI reads them (``.ci/quickstart-commands``)."""
    out = subprocess.run([str(checkout / ".ci" / "quickstart-commands")], check=True, capture_output=True, text=True)
    cmds = [c for c in out.stdout.splitlines() if c.strip()]
    if len(cmds) != 2:
        raise SystemExit(f"{checkout / 'README.md'}: expected two quick-start commands, found {len(cmds)}")
    return cmds


def pytest_counts(text: str) -> dict:
    """passed / skipped / failed / errors and seconds from pytest's last summary line."""
    lines = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed)", ln) and " in " in ln]
    if not lines:
        return {}
    last = lines[-1]
    out = {k: int(m.group(1)) for k in ("passed", "skipped", "failed", "errors")
           if (m := re.search(rf"(\d+) {k}", last))}
    if (m := re.search(r" in ([\d.]+)s", last)):
        out["wall_s"] = float(m.group(1))
    return out


def memory_gb() -> float | None:
    try:
        kb = next(int(ln.split()[1]) for ln in open("/proc/meminfo") if ln.startswith("MemTotal:"))
    except (OSError, StopIteration, ValueError):
        return None
    return round(kb / 2 ** 20, 1)


#: the per-user caches a run fills, each pointed beside DEST by --cold (XDG_CACHE_HOME covers pip,
#: servesim's OServe capacity and forecast caches and the rest that follow it)
COLD_ENV = {"XDG_CACHE_HOME": "", "MPLCONFIGDIR": "matplotlib", "VLLM_CACHE_ROOT": "vllm",
            "TORCHINDUCTOR_CACHE_DIR": "torchinductor", "TRITON_CACHE_DIR": "triton", "HF_HOME": "huggingface"}


def cold_env(dest: Path) -> dict[str, str]:
    """The environment of a run whose per-user caches start empty, in ``DEST.cold-cache`` (beside the
    clone, so its git status stays clean)."""
    root = dest.with_name(dest.name + ".cold-cache")
    if root.exists():
        raise SystemExit(f"{root}: exists; a cold run needs it new")
    # servesim's own caches (servesim.disk_cache) follow XDG_CACHE_HOME unless SERVESIM_*_CACHE names one
    env = {k: v for k, v in os.environ.items() if not (k.startswith("SERVESIM_") and k.endswith("_CACHE"))}
    env.update({k: str(root / sub) for k, sub in COLD_ENV.items()})
    return env


def clone(dest: Path, commit: str) -> str:
    """Clone this checkout into ``dest`` at ``commit``; the full commit id."""
    full = subprocess.run(["git", "-C", str(ROOT), "rev-parse", commit], check=True, capture_output=True,
                          text=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", full], check=True)
    return full


def check_mirror(dest: Path, root: Path) -> None:
    """Refuse a DEST that would not find the data mirror ``root`` finds: that clone would download
    every dataset (or fail offline), a different measurement."""
    from servesim.data import DEFAULT_MIRROR, mirror_dir

    if mirror_dir(root) is not None and not os.environ.get("SERVESIM_DATA_MIRROR") \
            and not Path(os.path.normpath(dest.absolute() / DEFAULT_MIRROR)).is_dir():  # dest does not exist yet
        raise SystemExit(f"{dest}: no data mirror at {DEFAULT_MIRROR} beside it, as {root} has; clone beside "
                         f"that one (e.g. {root.parent / 'fresh-clone'}) or set SERVESIM_DATA_MIRROR")


#: the line the workflow prints at its end (servesim.analysis.benchmarks.slowest_summary)
SCHEDULER_LINE = re.compile(r"Snakemake itself used (\d+) CPU s in (\d+) s of wall time")


def scheduler_cpu_s(log: str) -> float | None:
    """The CPU seconds Snakemake's own process used, from the line its run prints at the end (the
    workflow's onsuccess), or None when the log has none."""
    m = SCHEDULER_LINE.search(log)
    return float(m.group(1)) if m else None


def quick_target_wall_s(log: str) -> float | None:
    """The quick target's own wall seconds (Snakemake's, from the same line): the first command's
    time less this is the install's."""
    m = SCHEDULER_LINE.search(log)
    return float(m.group(2)) if m else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--cold", action="store_true", help="start with empty per-user caches (a new machine)")
    ap.add_argument("--note", default="")
    ap.add_argument("--no-record", action="store_true", help="print the record, do not append it")
    a = ap.parse_args(argv)
    if a.dest.exists():
        raise SystemExit(f"{a.dest}: exists; give a new directory")
    check_mirror(a.dest, ROOT)
    commit = clone(a.dest, a.commit)
    rec = {"date": datetime.date.today().isoformat(), "commit": commit, "source": "fresh_clone.py",
           "machine": {"cpus": os.cpu_count(), "memory_gb": memory_gb()}, "commands": [],
           "caches": "cold" if a.cold else "as found"}
    env = cold_env(a.dest) if a.cold else None
    t_quick = time.time()
    for cmd in quickstart_commands(a.dest):
        t0 = time.time()
        p = subprocess.run(["bash", "-c", cmd], cwd=a.dest, capture_output=True, text=True, env=env)
        (a.dest / f"fresh_clone_{len(rec['commands'])}.log").write_text(p.stdout + p.stderr)
        rec["commands"].append({"command": cmd, "rc": p.returncode, "wall_s": round(time.time() - t0, 1)})
        print(f"{cmd}: exit {p.returncode} after {rec['commands'][-1]['wall_s']} s", flush=True)
    jobs = [r for r in read_benchmarks(a.dest / "results" / "quick" / "benchmarks")
            if r["wall_s"] is not None and r["mtime"] >= t_quick]
    first = (a.dest / "fresh_clone_0.log").read_text()
    rec.update(quick_jobs=len(jobs), quick_job_wall_s=round(sum(r["wall_s"] for r in jobs), 1),
               scheduler_cpu_s=scheduler_cpu_s(first), quick_target_wall_s=quick_target_wall_s(first),
               pytest=pytest_counts((a.dest / "fresh_clone_1.log").read_text()), note=a.note)
    line = json.dumps(rec, sort_keys=True)
    print(line)
    if not a.no_record:
        with open(ROOT / "benchmarks" / "records" / "fresh_clone.jsonl", "a") as f:
            f.write(line + "\n")
        print(f"rewrote {write_page(ROOT)}")  # the page renders the records: it must not lag them
    return 0 if all(c["rc"] == 0 for c in rec["commands"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
