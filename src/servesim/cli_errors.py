"""One error path for every command: input errors -> one line and EXIT_INPUT; bugs -> traceback.

A file the system cannot open or write is one line too, naming the file: a path that does not
resolve (missing, a symlink loop, a folder, no permission) is bad input (EXIT_INPUT); a read or
write the system fails (a full disk, an I/O error) is EXIT_IO (see servesim.errors). Notes an
output writer adds to the exception (what is left of the outputs) end the line.

Every entry point (``servesim`` and the ``python -m servesim.<module>`` mains the workflow calls)
runs its handler through :func:`run_command`; ``--debug`` shows the traceback of an input error too.
"""

from __future__ import annotations

import argparse
import errno
import sys
import warnings
from typing import Callable

from servesim.errors import EXIT_BUG, EXIT_INPUT, EXIT_IO, IO_ERRNOS, InputError


def input_error_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input: :class:`InputError`, which every error class of the package
    that names a bad file, row, key or option derives from (`ScenarioError`, `ClaimsError`,
    `CatalogError`, sageserve's `ConfigError`, `MeasurementError`, `BackendError`, `ForecastError`
    included). Nothing is imported from other layers: this module sits below every entry point."""
    return (InputError,)


#: errnos of a path that does not resolve to a usable file: the user's to fix (EXIT_INPUT)
PATH_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.ELOOP,
                         errno.ENAMETOOLONG, errno.EROFS, errno.EEXIST, errno.ENXIO})


def os_error_status(exc: OSError) -> int | None:
    """The exit status of an OSError that is not a bug, or None (a bug: its traceback is kept).
    A path that does not resolve -> EXIT_INPUT; a read or write the system failed (errno in
    IO_ERRNOS, or any other failure on a named file) -> EXIT_IO; an OSError naming no file and
    no failed read/write (a refused connection) is left to the command (a traceback if uncaught)."""
    if exc.errno in IO_ERRNOS:
        return EXIT_IO
    if exc.filename is None:
        return None
    return EXIT_INPUT if exc.errno in PATH_ERRNOS or exc.errno is None else EXIT_IO


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.filename}: {exc.strerror or exc}"
    elif isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    else:
        text = str(exc)
    text = " ".join(line.strip() for line in text.strip().splitlines()) or type(exc).__name__
    notes = [" ".join(str(n).split()) for n in getattr(exc, "__notes__", ())]
    return "; ".join([text, *notes])


def _one_line_warning(prog: str):
    """A warning (a dropped row, a clipped value) as one line ``<prog>: warning: ...``, not the
    default two lines that quote the package's source line."""
    def fmt(message, category, filename, lineno, line=None):
        return f"{prog}: warning: {' '.join(str(message).split())}\n"
    return fmt


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    """``--debug`` on ``parser`` and every sub-command parser under it (before or after the command)."""
    if "--debug" not in parser._option_string_actions:
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                            help="show the traceback of an input error too")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                add_debug_flag(sub)


def add_output_args(parser: argparse.ArgumentParser, *, seed: int | None = 0, seed_help: str | None = None) -> None:
    """The options every results-writing command shares: ``--seed`` (omitted when ``seed`` is None),
    ``--force`` (replace a non-empty folder servesim did not write), ``-o/--out`` and ``--debug``."""
    if seed is not None:
        parser.add_argument("--seed", type=int, default=seed, help=seed_help)
    parser.add_argument("--force", action="store_true", help="replace a non-empty output folder not written by servesim")
    parser.add_argument("-o", "--out", required=True, help="output folder (written whole or not at all)")
    add_debug_flag(parser)


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace, prog: str) -> int:
    """Call ``func(args)``; an input error (or a missing/unreadable input file) prints
    ``<prog>: error: <message>`` and returns EXIT_INPUT; a read or write the system failed (a full
    disk) prints the same line and returns EXIT_IO; anything else propagates (traceback, status 1)."""
    try:
        fmt, warnings.formatwarning = warnings.formatwarning, _one_line_warning(prog)  # recorders still record
        try:
            return int(func(args) or 0)
        finally:
            warnings.formatwarning = fmt
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, *input_error_types()) as exc:
        if getattr(args, "debug", False):
            raise
        print(f"{prog}: error: {_describe(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # a symlink loop, a full disk, ...: one line naming the file (or a bug)
        status = os_error_status(exc)
        if status is None or getattr(args, "debug", False):
            raise
        print(f"{prog}: error: {_describe(exc)}", file=sys.stderr)
        return status
    except KeyboardInterrupt as exc:
        print("; ".join([f"{prog}: interrupted", *getattr(exc, "__notes__", ())]), file=sys.stderr)
        return 130


__all__ = ["run_command", "add_debug_flag", "add_output_args", "input_error_types", "os_error_status", "EXIT_INPUT",
           "EXIT_BUG", "EXIT_IO"]
