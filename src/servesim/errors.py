"""The base class of errors caused by bad input, and the exit statuses of every command.

An :class:`InputError` (a bad file, row, key or option) is the user's to fix: the command line
prints its one-line message and exits with :data:`EXIT_INPUT`; any other exception is a bug and
keeps its traceback. Messages name the file and the row, line or key.

Exit statuses of every ``servesim`` command:

==========  ==============================================================================
0           success (outputs complete, with their completion marker)
1           a bug: an unexpected exception (traceback printed)
2           bad input: a file, row, key or option (one line on stderr; argparse usage errors too)
3           results written but partial (a replay or calibration cut short; marked in summary.json)
==========  ==============================================================================
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_BUG = 1
EXIT_INPUT = 2
EXIT_PARTIAL = 3


class InputError(ValueError):
    """Bad input; the message names the source (file or option) and the row, line or key."""
