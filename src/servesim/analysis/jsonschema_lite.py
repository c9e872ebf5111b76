"""jsonschema, imported without its optional IRI checker.

jsonschema imports ``rfc3987_syntax`` at import when it is installed (JupyterLab's
``jupyter-events`` pulls it in), and that module builds a parser grammar on import: about 1 s on
the 2-core host, paid by every figure job that reads the declared runs and by every papermill
start. No schema of this project uses the ``iri`` formats, so the checker is hidden (``None`` in
``sys.modules`` makes its import raise ImportError, which jsonschema treats as "not installed";
it then skips those two formats only). Import jsonschema through this module, or call
`hide_iri_checker` before anything imports it.
"""

import sys


def hide_iri_checker() -> None:
    """Make ``import rfc3987_syntax`` fail in this process (a no-op if it is already imported)."""
    sys.modules.setdefault("rfc3987_syntax", None)


hide_iri_checker()

from jsonschema import Draft202012Validator  # noqa: E402
from jsonschema.exceptions import best_match  # noqa: E402

__all__ = ["Draft202012Validator", "best_match", "hide_iri_checker"]
