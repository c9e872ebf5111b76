"""An interrupted run leaves no server process behind (process-group kill + signal handlers).

A stand-in for ``vllm serve`` (answers /health, and like vLLM starts a worker child in its
process group) keeps this test fast; the real server's stop path is covered in test_vllm_real.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

FAKE_SERVER = textwrap.dedent('''
    import http.server, subprocess, sys
    port = int(sys.argv[sys.argv.index("--port") + 1])
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[sys.argv.index("--pidfile") + 1], "w").write(str(worker.pid))
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        def log_message(self, *a): pass
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
''')

# The driver restores Python's SIGINT handler: a test run started as a background job inherits
# SIGINT ignored (POSIX shells do that for `cmd &`), and Python then keeps it ignored.
DRIVER = textwrap.dedent('''
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from servesim.engine.server import EngineConfig, VLLMServer
    fake, model, log, pidfile = sys.argv[1:5]
    cfg = EngineConfig(extra_args=("--pidfile", pidfile))
    srv = VLLMServer(model, cfg, log_path=log, python=fake, start_timeout_s=30).start()
    print("READY", srv.proc.pid, flush=True)
    time.sleep(600)
''')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _fake_python(tmp_path) -> Path:
    fake = tmp_path / "fake_python"
    (tmp_path / "fake_server.py").write_text(FAKE_SERVER)
    # argv: fake_python -m vllm.entrypoints... --model ... ; run the stand-in with the rest
    fake.write_text(f'#!/bin/sh\nshift 2\nexec "{sys.executable}" "{tmp_path / "fake_server.py"}" "$@"\n')
    fake.chmod(0o755)
    return fake


def test_port_taken_before_bind_is_retried_on_a_fresh_port(tmp_path):
    """The port found free is taken by another process before the server binds it: the server
    exits during start-up, and is started again on another port; the failed log is kept."""
    import socket

    from servesim.engine.server import EngineConfig, EngineStartError, VLLMServer

    model = tmp_path / "model"
    model.mkdir()
    cfg = EngineConfig(extra_args=("--pidfile", str(tmp_path / "worker.pid")))
    log = tmp_path / "server.log"
    srv = VLLMServer(model, cfg, log_path=log, python=str(_fake_python(tmp_path)), start_timeout_s=30)
    taken = srv.port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        with srv:
            assert srv.port != taken and srv.alive()
        assert "Address already in use" in (tmp_path / "server.log.attempt1").read_text()
        # with one attempt (or a port the caller fixed) the failure is reported, log tail included
        one = VLLMServer(model, cfg, log_path=tmp_path / "one.log", python=str(_fake_python(tmp_path)),
                         port=taken, start_timeout_s=30, start_attempts=2)
        with pytest.raises(EngineStartError, match="exited with code") as err:
            one.start()
        assert "Address already in use" in str(err.value)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_server_and_its_workers(tmp_path, sig):
    fake = _fake_python(tmp_path)
    (tmp_path / "driver.py").write_text(DRIVER)
    model = tmp_path / "model"
    model.mkdir()
    pidfile = tmp_path / "worker.pid"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    drv = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(fake), str(model),
                            str(tmp_path / "server.log"), str(pidfile)],
                           stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = drv.stdout.readline()
        assert line.startswith("READY"), line
        server_pid = int(line.split()[1])
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text():
                break
            time.sleep(0.05)
        worker_pid = int(pidfile.read_text())
        assert _alive(server_pid) and _alive(worker_pid)
        drv.send_signal(sig)
        drv.wait(timeout=30)
        deadline = time.monotonic() + 10
        while (_alive(server_pid) or _alive(worker_pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(server_pid), "server survived the interrupt"
        assert not _alive(worker_pid), "server's worker survived the interrupt"
    finally:
        if drv.poll() is None:
            drv.kill()


#: the signal watcher reads siginfo (not on macOS, where the server is started directly)
needs_sigwatch = pytest.mark.skipif(not hasattr(signal, "sigwaitinfo"), reason="no sigwaitinfo on this platform")


def _fake_server(tmp_path):
    from servesim.engine.server import EngineConfig, VLLMServer

    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    cfg = EngineConfig(extra_args=("--pidfile", str(tmp_path / "worker.pid")))
    return VLLMServer(model, cfg, log_path=tmp_path / "server.log", python=str(_fake_python(tmp_path)),
                      start_timeout_s=30)


def _wait_for(cond, timeout_s=15.0):
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.05)
    return cond()


@needs_sigwatch
def test_a_kill_from_outside_names_its_sender_in_the_server_log(tmp_path):
    """The signal watcher (the group's leader) logs a group kill's sender: pid, command line and
    parents. The sender stays alive a moment so that /proc still describes it."""
    srv = _fake_server(tmp_path).start()
    try:
        worker = int((tmp_path / "worker.pid").read_text())
        sender = subprocess.Popen(["sh", "-c", f"kill -TERM -{srv.proc.pid}; sleep 3"])
        assert _wait_for(lambda: not srv.alive())
        reason = srv.loss_reason()
        log = (tmp_path / "server.log").read_text()
        assert "servesim-sigwatch:" in log and f"pid {sender.pid} 'sh -c kill -TERM" in log
        assert reason.startswith(time.strftime("%Y-")) and "SIGTERM" in reason and f"{sender.pid}" in reason
        assert f"<- {os.getpid()} " in reason  # the sender's parent chain names this test process
    finally:
        srv.stop()
        sender.wait()
    assert _wait_for(lambda: not _alive(worker)), "server's worker survived"


def test_a_dead_server_stays_unreaped_until_stop_so_its_group_id_cannot_name_another(tmp_path, monkeypatch):
    """alive() and the start-up check look without reaping: the leader stays a zombie, its pid
    (the group id) is not reused, and stop() signals the group only while that holds."""
    from servesim.engine import server as server_mod

    srv = _fake_server(tmp_path).start()
    leader = srv.proc.pid
    os.killpg(leader, signal.SIGKILL)
    assert _wait_for(lambda: not srv.alive())
    assert Path(f"/proc/{leader}/stat").read_text().split()[2] == "Z"  # unreaped: pid still taken
    sent = []
    real = os.killpg
    monkeypatch.setattr(server_mod.os, "killpg", lambda pgid, sig: (sent.append(pgid), real(pgid, sig)))
    srv.stop()
    assert set(sent) == {leader} and not Path(f"/proc/{leader}").exists()  # signalled, then reaped

    # a server whose leader was reaped elsewhere (its pid may already name another process) is
    # not signalled at all
    srv2 = _fake_server(tmp_path).start()
    os.killpg(srv2.proc.pid, signal.SIGKILL)
    srv2.proc.wait(timeout=10)
    sent.clear()
    srv2.stop()
    assert sent == []


@needs_sigwatch
@pytest.mark.parametrize("script, code", [("exit 3", 3), ("kill -KILL $$", -9), ("exit 0", 0)])
def test_sigwatch_ends_as_its_server_does(tmp_path, script, code):
    res = subprocess.run([sys.executable, "-m", "servesim.engine.sigwatch", str(tmp_path / "log"), "--",
                          "sh", "-c", script], timeout=30)
    assert res.returncode == code


@needs_sigwatch
def test_sigwatch_passes_a_signal_aimed_at_it_alone_to_the_server(tmp_path):
    log, started = tmp_path / "log", tmp_path / "started"
    # the server starts only after the watcher has blocked the signals it reads: `started` says so
    p = subprocess.Popen([sys.executable, "-m", "servesim.engine.sigwatch", str(log), "--", "sh", "-c",
                          f"trap 'exit 7' TERM; touch {started}; while :; do sleep 0.05; done"])
    assert _wait_for(started.exists, 60)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 7  # the server got the signal, trapped it, and ended with its code
    assert f"SIGTERM to the server (process group {os.getpgrp()}) from uid {os.getuid()}, pid {os.getpid()} " \
        in log.read_text()
