"""`python -m servesim.analysis.papermill_run ARGS`: papermill's own command line, started faster.

The workflow runs one papermill process per figure (workflow/rules/notebooks.smk). papermill
imports nbformat, nbformat imports jsonschema, and jsonschema imports its optional format
checkers (``rfc3987_syntax`` alone was 0.8 s of a 2.1-s papermill start on the 2-core host, paid by
every figure job); nbformat's notebook schema uses no format, so they are hidden
(`jsonschema_lite`), as is pyarrow (below). The kernel runs over Unix sockets
(`kernel_ipc`: concurrent jobs cannot collide on a TCP port). Everything else is papermill as is.
"""

import sys


def main() -> None:
    from .jsonschema_lite import hide_format_checkers

    hide_format_checkers()
    # papermill's HDFS handler imports pyarrow (and numpy) at start-up, 0.2 s; this process only
    # drives the kernel (the notebook's own pyarrow is the kernel's), so it is hidden here
    sys.modules.setdefault("pyarrow", None)
    import papermill.cli as cli

    from . import kernel_ipc

    # the kernel over Unix sockets: two figure jobs starting at once cannot draw the same TCP port
    cli.execute_notebook = kernel_ipc.execute_notebook
    cli.papermill(prog_name="papermill")


if __name__ == "__main__":
    main()
