"""`python -m servesim.analysis.papermill_run ARGS`: papermill's own command line, started faster.

The workflow runs one papermill process per figure (workflow/rules/notebooks.smk). papermill
imports nbformat, nbformat imports jsonschema, and jsonschema imports the optional IRI checker
``rfc3987_syntax`` when it is installed (JupyterLab's ``jupyter-events`` pulls it in), which
builds a parser grammar at import: 0.8 s of a 2.1-s papermill start measured on the 2-core host,
paid by every figure job. nbformat's notebook schema uses no IRI format, so the checker is hidden
from the import (jsonschema then skips that one format) and everything else is papermill as is.
"""

import sys


def main() -> None:
    sys.modules.setdefault("rfc3987_syntax", None)  # None in sys.modules: `import` raises ImportError
    from papermill.cli import papermill

    papermill(prog_name="papermill")


if __name__ == "__main__":
    main()
