"""jsonschema, imported without its optional format checkers.

jsonschema imports the checkers of the string formats (``iri``, ``uri``, ``date-time``,
``duration``, ``color``, ...) at import, from whichever optional packages are installed
(JupyterLab's ``jupyter-events`` pulls them in), and one of them, ``rfc3987_syntax``, builds a
parser grammar on import: about 1 s on the 2-core host (the rest another 0.1 s), paid by every
figure job that reads the declared runs and by every papermill start. No schema this project
validates (its workflow schemas, nbformat's notebook schema) uses ``format``, so those packages
are hidden (``None`` in ``sys.modules`` makes their import raise ImportError, which jsonschema
treats as "not installed"; it then skips those formats only). Import jsonschema through this
module, or call `hide_format_checkers` before anything imports it.
"""

import sys

#: the optional packages jsonschema's format checkers import (not idna or jsonpointer: other
#: packages of a notebook's process use them)
FORMAT_CHECKERS = ("rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "isoduration", "webcolors",
                   "uri_template", "fqdn")


def hide_format_checkers() -> None:
    """Make importing jsonschema's optional format checkers fail in this process (a no-op for one
    already imported)."""
    for name in FORMAT_CHECKERS:
        sys.modules.setdefault(name, None)


hide_format_checkers()

from jsonschema import Draft202012Validator  # noqa: E402
from jsonschema.exceptions import best_match  # noqa: E402

__all__ = ["Draft202012Validator", "best_match", "hide_format_checkers"]
