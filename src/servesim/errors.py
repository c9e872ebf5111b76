"""The base class of errors caused by bad input, and the exit statuses of every command.

An :class:`InputError` (a bad file, row, key or option) is the user's to fix: the command line
prints its one-line message and exits with :data:`EXIT_INPUT`; any other exception is a bug and
keeps its traceback. Messages name the file and the row, line or key.

A file the system cannot open or write is not a bug either (``servesim.cli_errors``): a path that
does not resolve (missing, a symlink loop, a folder, no permission) is bad input (:data:`EXIT_INPUT`);
a read or write the system fails (a full disk or quota, an I/O error) is :data:`EXIT_IO`, one line
naming the file and saying what is left of the outputs.

Exit statuses of every ``servesim`` command:

==========  ==============================================================================
0           success (outputs complete, with their completion marker)
1           a bug: an unexpected exception (traceback printed)
2           bad input: a file, row, key or option (one line on stderr; argparse usage errors too)
3           results written but partial (a replay or calibration cut short; marked in summary.json)
4           the system failed a read or write (disk full, quota, I/O error): one line naming the
            file. Not 3, which the workflow accepts as a finished job: the outputs are not usable.
            A results folder keeps what was written, marked ``_FAILED.json`` (not complete); a
            single output file is not written at all; ``fetch`` keeps the files it verified.
==========  ==============================================================================
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import Iterator

EXIT_OK = 0
EXIT_BUG = 1
EXIT_INPUT = 2
EXIT_PARTIAL = 3
EXIT_IO = 4

#: errnos of a read or write the system failed (the input is not at fault): exit status EXIT_IO
IO_ERRNOS = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG, errno.EIO)
                      if e is not None)


class InputError(ValueError):
    """Bad input; the message names the source (file or option) and the row, line or key."""


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Around writing ``path``: a failed write (errno in IO_ERRNOS) gets ``path`` as its file name,
    so the one-line error names what was being written: a full disk's ENOSPC names no file when
    ``file.write`` or pyarrow raise it, and the source file when ``shutil.copyfile`` does."""
    try:
        yield
    except OSError as exc:
        if exc.errno in IO_ERRNOS:
            exc.filename = os.fspath(path)
        raise


def not_found(path: str | os.PathLike, what: str = "file") -> str:
    """Why a path that ``exists()`` denies is no file: a symlink loop or a dangling symlink (where
    ``exists()`` is False too) is said so, not called missing."""
    if os.path.islink(path):
        return f"{what} is a symlink that resolves to no file (a symlink loop, or its target is missing)"
    return f"{what} does not exist"
