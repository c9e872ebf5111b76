"""A notebook kernel reached over Unix sockets in a folder of its own, never over TCP ports.

jupyter_client picks a kernel's five TCP ports by binding port 0 and releasing it, then the kernel
binds them again: two kernels started at the same moment (two figure jobs of the workflow, two test
workers) can draw the same port, and one dies with "Address already in use" before it runs a cell
(seen in the test suite, 2 Dec). Over `ipc` the channels are files named after `ip`; a fresh
temporary folder per kernel makes every name unique, so no two kernels can collide.

Every notebook this project executes goes through `execute_notebook` below: the workflow's figure
jobs (`servesim.analysis.papermill_run`) and the tests.
"""

from __future__ import annotations

import shutil
import tempfile

from jupyter_client import AsyncKernelManager


class IpcKernelManager(AsyncKernelManager):
    """AsyncKernelManager on the `ipc` transport, its sockets in a private temporary folder."""

    def __init__(self, **kwargs):
        # a short path: a Unix socket's name is limited to ~107 bytes
        self._ipc_dir = tempfile.mkdtemp(prefix="ssk-")
        kwargs.setdefault("transport", "ipc")
        kwargs.setdefault("ip", f"{self._ipc_dir}/k")
        super().__init__(**kwargs)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        # (shutdown awaits this one by name; jupyter_client removes the socket files, the folder is ours)
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._ipc_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


def execute_notebook(*args, **kwargs):
    """`papermill.execute_notebook`, its kernel over Unix sockets (unless a manager is named),
    stopped at once when the last cell has answered.

    The graceful stop (jupyter_client interrupts the kernel, then asks it to shut down) sometimes
    loses the request: the kernel then lives until SIGTERM 2.5 s later (seen with strace in about
    one figure job in ten, 4 Dec: 5.4 s instead of 2.1). Every output has arrived by then (nbclient
    waits for each cell's reply and its output messages), so nothing is lost by killing it.
    """
    import papermill

    kwargs.setdefault("kernel_manager_class", IpcKernelManager)
    kwargs.setdefault("shutdown_kernel", "immediate")
    return papermill.execute_notebook(*args, **kwargs)
