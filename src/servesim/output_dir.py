"""Output folders that cannot mislead: written in a staging folder, renamed into place on success.

A command writing a results folder calls :func:`check_output_dir` before any work (so ``-o``
naming a file, or a folder holding someone else's files, fails at once), then writes inside
``with staged_output_dir(out) as tmp:``. On success the staging folder gets the completion
marker :data:`MARKER` (listing every file and its size) and replaces ``out`` in one rename, so
``out`` is either the complete new results or what it was before. On failure the staging
folder is removed, or, when the run left something there (a ``partial/`` result, or the files
written before the disk filled), it becomes ``out`` with :data:`FAILED_MARKER` instead of
``MARKER``, and a note on the exception says so (the command's one-line error ends with it). If
even the failure marker cannot be written (a full disk), the staging folder is removed.

A folder that holds a marker was written by servesim: a re-run replaces it (stale results are
cleared). A non-empty folder without one is refused unless ``force``; an empty one (as a
workflow engine creates for a job's outputs) is used.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Iterator

from servesim.errors import IO_ERRNOS, InputError, writing

#: completion marker written last into a finished results folder
MARKER = "_COMPLETE.json"
#: marker of a folder that holds a failed run's partial results
FAILED_MARKER = "_FAILED.json"
_STAGING = ".part-"


def _ours(path: Path) -> bool:
    return (path / MARKER).exists() or (path / FAILED_MARKER).exists()


def check_output_dir(out: str | os.PathLike, *, force: bool = False, option: str = "-o") -> Path:
    """Validate an output folder before work starts; returns it as a Path. Raises InputError
    if it names a file, sits under a file, or is a non-empty folder not written by servesim
    (unless ``force``)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{option} {out}: is a file, not a folder")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"{option} {out}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise InputError(f"{option} {out}: {parent} is not writable")
            break
    if out.is_dir() and any(out.iterdir()) and not _ours(out) and not force:
        raise InputError(f"{option} {out}: folder is not empty and holds no servesim results marker "
                         f"({MARKER}); choose another folder or pass --force to replace it")
    return out


def _files(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_size
            for p in sorted(root.rglob("*")) if p.is_file() and p.name not in (MARKER, FAILED_MARKER)}


def _replace(staging: Path, out: Path) -> None:
    """Put ``staging`` where ``out`` is: the old folder is moved aside first, then removed."""
    old = None
    if out.exists():
        old = out.with_name(f"{out.name}{_STAGING}old-{os.getpid()}")
        os.replace(out, old)
    os.replace(staging, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: a liveness check, nothing is sent
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _sweep_stale_staging(out: Path) -> None:
    """Remove ``<out>.part-<pid>`` / ``.part-old-<pid>`` folders of runs that were killed outright
    (SIGKILL, power loss: no handler ran); a folder whose process is still running is left alone."""
    prefix = f"{out.name}{_STAGING}"
    if not out.parent.is_dir():
        return
    for d in out.parent.iterdir():
        tail = d.name[len(prefix):].removeprefix("old-") if d.name.startswith(prefix) else ""
        if tail.isdigit() and d.is_dir() and not _pid_alive(int(tail)):
            shutil.rmtree(d, ignore_errors=True)


def _note(exc: BaseException, text: str) -> None:
    """Say what is left of the outputs: a note on the exception, which the command line's one-line
    error ends with (servesim.cli_errors) and a traceback shows (``print`` here would be a second line)."""
    exc.add_note(text)


def _is(filename, path: Path) -> bool:
    return isinstance(filename, (str, os.PathLike)) and os.path.abspath(filename) == os.path.abspath(path)


def _rename_into(exc: OSError, staging: Path, out: Path) -> None:
    """An OSError naming a file in the staging folder names it where it will be (under ``out``);
    a failed write naming no file (a full disk seen by pyarrow) names ``out``."""
    if exc.filename is None:
        if exc.errno in IO_ERRNOS:
            exc.filename = os.fspath(out)
        return
    if not isinstance(exc.filename, (str, os.PathLike)):  # a file descriptor
        return
    try:
        rel = Path(os.path.abspath(exc.filename)).relative_to(os.path.abspath(staging))
    except ValueError:  # another file (an input)
        return
    exc.filename = os.fspath(out / rel)


@contextlib.contextmanager
def staged_output_dir(out: str | os.PathLike, *, command: str = "servesim", force: bool = False) -> Iterator[Path]:
    """Yield a fresh staging folder beside ``out``; see the module doc for what happens after."""
    out = check_output_dir(out, force=force)
    out.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale_staging(out)
    staging = out.with_name(f"{out.name}{_STAGING}{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        with writing(staging / MARKER):
            (staging / MARKER).write_text(json.dumps({"complete": True, "command": command, "files": _files(staging)},
                                                     indent=1, sort_keys=True) + "\n")
    except BaseException as exc:
        (staging / MARKER).unlink(missing_ok=True)  # a completion marker cut short by a full disk
        if isinstance(exc, OSError):  # a full disk: name the file where it will be (or the folder)
            _rename_into(exc, staging, out)
        if any(staging.iterdir()):  # a partial result kept on purpose (or cut short): mark it failed
            try:
                (staging / FAILED_MARKER).write_text(json.dumps(
                    {"complete": False, "command": command, "error": f"{type(exc).__name__}: {exc}"[:2000],
                     "files": _files(staging)}, indent=1, sort_keys=True) + "\n")
            except OSError as marker_exc:  # the disk is full: an unmarked folder would mislead, drop it
                shutil.rmtree(staging, ignore_errors=True)
                _note(exc, f"nothing kept in {out}/ (its failure marker could not be written: "
                           f"{marker_exc.strerror or marker_exc})")
            else:
                _replace(staging, out)
                _note(exc, f"what it wrote is kept in {out}/, marked {FAILED_MARKER} (not complete)")
        else:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    _replace(staging, out)


def check_output_file(out: str | os.PathLike, *, option: str = "-o") -> Path:
    """Validate a single output file path before work starts (it is written as ``.part`` and renamed)."""
    out = Path(out)
    if out.is_dir():
        raise InputError(f"{option} {out}: is a folder, not a file")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"{option} {out}: {parent} is a file, not a folder")
            break
    return out


@contextlib.contextmanager
def atomic_file(out: str | os.PathLike) -> Iterator[Path]:
    """Yield a ``.part`` path beside ``out`` (same suffix) to write; renamed onto ``out`` on success,
    removed on failure, so ``out`` is never a half-written file."""
    out = check_output_file(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.stem}.part{out.suffix}")
    try:
        yield tmp
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and (_is(exc.filename, tmp) or
                                         exc.filename is None and exc.errno in IO_ERRNOS):  # a full disk
            exc.filename = os.fspath(out)
            _note(exc, f"{out} not written (its partial file removed)")
        raise
    os.replace(tmp, out)
