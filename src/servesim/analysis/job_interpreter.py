"""The interpreter every workflow job runs, named the same however Snakemake was started.

The jobs' shell commands name the interpreter running Snakemake (a virtual environment need not be
activated), and that name is part of each job's `params`, so a change of name is a change of
params and reruns the job. The same environment answers to several names: its `snakemake` script
runs `<venv>/bin/python3`, `python -m snakemake` runs `<venv>/bin/python`. Without this, a quick
run built one way was rebuilt from scratch (291 jobs) when asked the other way. The name kept is
`python3` beside it when that is the same file (the README's `snakemake` script's name, so runs it
built stay current), else `python`; never the resolved target, which would
leave the environment (a venv is found from the path it is started by).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CANONICAL_NAMES = ("python3", "python")  # preferred first: the `snakemake` script's


def job_interpreter(executable: str | None = None) -> str:
    """`executable` (default: this interpreter) under the first of CANONICAL_NAMES beside it that
    is the same file; itself when none is (another interpreter, or no such name)."""
    executable = sys.executable if executable is None else executable
    if not executable:
        raise RuntimeError("no interpreter path: sys.executable is empty; start Snakemake with a Python on PATH")
    exe = Path(executable)
    for name in CANONICAL_NAMES:
        candidate = exe.with_name(name)
        try:
            if candidate.exists() and os.path.samefile(candidate, exe):
                return str(candidate)
        except OSError:  # unreadable entry beside it: keep the name we were given
            continue
    return str(exe)
