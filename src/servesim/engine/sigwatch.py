"""Run a server and log who signals it: ``python -m servesim.engine.sigwatch LOG -- CMD...``.

``VLLMServer`` starts vLLM through this small process, which leads the server's process group
and is its parent. A SIGTERM, SIGINT or SIGHUP sent to the group (or to this process) is read
here with its siginfo, which vLLM's own Python handlers never see: the line appended to LOG names
the sender's pid, uid, command line and parent chain, so a kill sent by ``VLLMServer.stop``
names this package's process and a kill from anywhere else names its sender. The signal is
then passed on to the server (a second copy, after a group kill, only repeats the request to
shut down), and this process exits as the server does, with its status. It imports only the
standard library and starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
import time

WATCHED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: each logged line starts with this (grep server.log for it)
PREFIX = "servesim-sigwatch:"


def _proc_field(pid: int, name: str) -> str:
    try:
        if name == "cmdline":
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read().replace(b"\0", b" ").decode(errors="replace").strip() or "?"
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def describe_sender(pid: int, depth: int = 6) -> str:
    """``pid 'cmdline' <- ppid 'cmdline' <- ...`` up to init, or to a process already gone."""
    if pid <= 0:
        return "0 (the kernel, or a process outside this pid namespace)"
    chain = []
    while pid > 0 and len(chain) < depth:
        chain.append(f"{pid} {_proc_field(pid, 'cmdline')[:200]!r}")
        ppid = _proc_field(pid, "PPid")
        if not ppid.isdigit() or int(ppid) == pid:
            break
        pid = int(ppid)
    return " <- ".join(chain)


def sender_line(info: signal.struct_siginfo) -> str:
    return (f"{PREFIX} {time.strftime('%Y-%m-%d %H:%M:%S')} {signal.Signals(info.si_signo).name} "
            f"to the server (process group {os.getpgrp()}) from uid {info.si_uid}, pid "
            f"{describe_sender(info.si_pid)}\n")


def run(log_path: str, cmd: list[str]) -> int:
    # a background job inherits SIGINT ignored, and an ignored signal is never queued: restore it
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    waited = (*WATCHED, signal.SIGCHLD)
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    # the server starts with nothing blocked and default handlers, as if started directly
    pid = os.posix_spawnp(cmd[0], cmd, os.environ, setsigmask=(), setsigdef=WATCHED)
    while True:
        info = signal.sigwaitinfo(waited)
        if info.si_signo != signal.SIGCHLD:
            with open(log_path, "a") as f:  # the server's log is opened for appending: lines stay whole
                f.write(sender_line(info))
            try:
                os.kill(pid, info.si_signo)
            except ProcessLookupError:
                pass
            continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            if code < 0:  # end the same way, so the caller sees the server's signal
                if -code in WATCHED:
                    signal.signal(-code, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, (-code,))
                os.kill(os.getpid(), -code)
                return 128 - code
            return code


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: python -m servesim.engine.sigwatch LOG -- CMD...")
    sys.exit(run(sys.argv[1], sys.argv[3:]))
