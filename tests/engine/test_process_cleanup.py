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
