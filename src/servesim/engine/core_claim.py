"""Give the pinned engine its cores to itself while the workflow's other jobs run on the rest.

The in-process calibration pins vLLM's engine to one core (``--cpus last``) and replays workloads
in real time, so for most of its run it keeps about one core busy (quick scale, 2-core host: 349
CPU s in 417 s). Claiming every core of the workflow (the old rule) left the others idle for
those minutes; running other jobs beside it unpinned would put them on the engine's core and slow
the very steps being measured. `claim` does neither: for the duration of the calibration it moves
the workflow's scheduler (Snakemake's process: jobs it starts inherit its CPU set) and the jobs it
is running off the engine's cores, every thread of each, and restores the scheduler's CPU set on
exit. The calibration's own process tree is left alone. A process that ends meanwhile is skipped;
one this user may not touch is reported, not fatal. Linux only (``os.sched_setaffinity``).

The workflow uses it where the engine run declares ``beside_jobs`` for the scale (quick), or
with ``SERVESIM_ENGINE_BESIDE_JOBS=1``. One run on 1 Dec had a job on the other core double the
simulator-vs-engine error; five pairs on 5 Dec (one engine start, the live fit;
benchmarks/engine_beside_jobs.py) moved less beside than from one run alone to the next
(workflow/runs/calibration.yaml has the numbers). Full scale, whose engine spread is published,
still runs alone.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the command may hold spaces and parentheses


def _descendants(root: int) -> list[int]:
    """``root``'s descendant processes (from /proc), ``root`` excluded."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            p = _ppid(int(d))
            if p is not None:
                children.setdefault(p, []).append(int(d))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _ancestors(pid: int) -> set[int]:
    out = set()
    while pid and pid not in out:
        out.add(pid)
        pid = _ppid(pid) or 0
    return out


def _set(pids, cpus: set[int], log: list[str]) -> int:
    """Set every thread of ``pids`` to ``cpus``; the number of threads moved."""
    n = 0
    for pid in pids:
        for tid in _threads(pid):
            try:
                os.sched_setaffinity(tid, cpus)
                n += 1
            except ProcessLookupError:
                pass  # ended meanwhile
            except (PermissionError, OSError) as e:
                log.append(f"thread {tid} of process {pid}: {e}")
    return n


def _targets(scheduler: int) -> list[int]:
    """The scheduler and its descendants, less this process's own line (its ancestors up to the
    scheduler: the job's shell) and this process's own children (the engine)."""
    mine = _ancestors(os.getpid()) - {scheduler}
    mine |= set(_descendants(os.getpid()))
    return [scheduler] + [p for p in _descendants(scheduler) if p not in mine]


@contextlib.contextmanager
def claim(cpus: list[int] | None, scheduler: int | None, report=print):
    """While inside, ``scheduler`` (a pid) and its other jobs run on its CPUs less ``cpus``.

    No-op when either is None, when the platform has no CPU affinity, when ``scheduler`` is not
    running or is not an ancestor of this process (a pid from elsewhere is never touched), or
    when nothing would be left to it."""
    if not cpus or not scheduler or not hasattr(os, "sched_setaffinity"):
        yield
        return
    if scheduler not in _ancestors(os.getpid()):
        report(f"core claim: process {scheduler} is not this job's scheduler (not an ancestor); nothing moved")
        yield
        return
    try:
        before = set(os.sched_getaffinity(scheduler))
    except OSError:
        yield
        return
    rest = before - set(cpus)
    if not rest:
        yield
        return
    log: list[str] = []
    n = _set(_targets(scheduler), rest, log)
    report(f"core claim: cores {sorted(cpus)} for the engine; the scheduler (process {scheduler}) and its other "
           f"jobs ({n} threads) moved to cores {sorted(rest)}" + (f"; not moved: {'; '.join(log)}" if log else ""))
    try:
        yield
    finally:
        log = []
        n = _set(_targets(scheduler), before, log)
        report(f"core claim: released; {n} threads back on cores {sorted(before)}"
               + (f"; not restored: {'; '.join(log)}" if log else ""))
