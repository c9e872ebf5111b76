"""One paper's quick-scale target, timed alone in a fresh clone with the per-user caches empty.

    python benchmarks/paper_quick.py oserve DEST [--cores 2] [--bound-s 240] [--warm]

Why: issue 28 bounds the quick OServe jobs at 4 minutes on 2 cores, and the newcomer's quick target
is the sum of such parts; a part is only known to fit when it is timed alone, from nothing. This
clones this checkout's HEAD into DEST (new, beside the data mirror, as `fresh_clone.py` requires),
links this checkout's `.venv` into it (the install is not what is timed; the workflow's jobs run the
clone's own `src`), and runs ``snakemake <paper> --cores N`` there with the per-user caches (the
OServe capacity profiles, the forecasts, matplotlib's) in an empty DEST.cold-cache, as on a new
machine (``--warm``: as found). It prints one JSON line: the target's wall time and exit status, its
job count, summed job wall time and five slowest jobs (the benchmark files the run wrote), and
whether the wall time is within ``--bound-s``. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fresh_clone import check_mirror, clone, cold_env, memory_gb  # noqa: E402

from servesim.analysis.benchmarks import read_benchmarks  # noqa: E402

PAPERS = ("sageserve", "preserve", "oserve", "aegaeon", "calibration", "workload")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paper", choices=PAPERS)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--bound-s", type=float, default=None, help="the wall time the part should stay within")
    ap.add_argument("--warm", action="store_true", help="keep the per-user caches as found")
    a = ap.parse_args(argv)
    if a.dest.exists():
        raise SystemExit(f"{a.dest}: exists; give a new directory")
    if a.cores < 1:
        raise SystemExit(f"--cores {a.cores}: need >= 1")
    if not (ROOT / ".venv").is_dir():
        raise SystemExit(f"{ROOT / '.venv'}: no environment to link (run the README's install first)")
    check_mirror(a.dest, ROOT)
    commit = clone(a.dest, "HEAD")
    (a.dest / ".venv").symlink_to(ROOT / ".venv")  # .venv is git-ignored: the clone stays clean
    env = os.environ.copy() if a.warm else cold_env(a.dest)
    t0 = time.time()
    p = subprocess.run([str(a.dest / ".venv" / "bin" / "snakemake"), a.paper, "--cores", str(a.cores)],
                       cwd=a.dest, capture_output=True, text=True, env=env)
    wall = time.time() - t0
    (a.dest / "paper_quick.log").write_text(p.stdout + p.stderr)
    # every job the target ran (its data fetches included), by the benchmark files written since
    jobs = [r for r in read_benchmarks(a.dest / "results" / "quick" / "benchmarks")
            if r["wall_s"] is not None and r["mtime"] >= t0]
    jobs.sort(key=lambda r: -r["wall_s"])
    rec = {"paper": a.paper, "scale": "quick", "commit": commit, "cores": a.cores, "rc": p.returncode,
           "caches": "as found" if a.warm else "cold", "wall_s": round(wall, 1), "jobs": len(jobs),
           "job_wall_s": round(sum(r["wall_s"] for r in jobs), 1),
           "slowest": [[r["job"], r["wall_s"]] for r in jobs[:5]],
           "machine": {"cpus": os.cpu_count(), "memory_gb": memory_gb()}}
    if a.bound_s is not None:
        rec.update(bound_s=a.bound_s, within_bound=bool(p.returncode == 0 and wall <= a.bound_s))
    print(json.dumps(rec, sort_keys=True))
    return 0 if p.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
