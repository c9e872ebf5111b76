"""The front end's costs, measured on a real vLLM server (issue 33 item 3).

`servesim engine-frontend --model M -o DIR` starts ``vllm serve`` on M, replays a few workloads of
different shapes (one-token answers to short and long prompts, long streamed answers, a mix) and
reads the CPU time of the server's API process (the OpenAI front end; the engine core and its
worker are other processes) before and after each. A non-negative least-squares fit of

    API CPU s = idle_s_per_s x wall s + request_s x requests
                + prompt_token_s x prompt tokens + output_token_s x output tokens

gives :class:`servesim.sim.frontend.FrontEnd`'s service times (``frontend.json``, its ``fit``
block; ``cases.csv`` holds each case's measured and fitted CPU). CPU time is the work; on a host
whose cores are shared with the engine the front end also waits for a core, which the replay
comparison (HTTP against in-process, ``compare-engine --frontend``) shows. The profile records the
vLLM version, the CPU model and count it was measured on: another version or host is another
profile. The server must run here (the API process's CPU is read locally): on a GPU node, run the
command there.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from servesim.engine.client import ReplayOptions, replay_async
from servesim.engine.server import EngineConfig, VLLMServer, vllm_version
from servesim.errors import InputError


@dataclass(frozen=True)
class Case:
    """``n`` requests of ``prompt`` / ``output`` tokens at Poisson ``rate`` per second."""

    name: str
    n: int
    prompt: int
    output: int
    rate: float


#: the default cases (about 2.5 minutes on the 2-core host with the quick engine's small model):
#: each cost is the larger share of at least one case, so the fit can tell them apart
CASES = (
    Case("short-one-token", 300, 16, 1, 30.0),
    Case("long-prompt-one-token", 150, 512, 1, 8.0),
    Case("short-64-tokens", 150, 16, 64, 6.0),
    Case("short-256-tokens", 60, 16, 256, 1.5),
    Case("mixed-256-32", 150, 256, 32, 6.0),
    Case("short-8-tokens", 300, 16, 8, 20.0),
)
IDLE_S = 10.0


def scaled_cases(scale: float) -> list[Case]:
    """`CASES` with each case's requests x ``scale`` (at least 4)."""
    from dataclasses import replace

    return [replace(c, n=max(4, int(round(c.n * scale)))) for c in CASES]


def api_process(server: VLLMServer):
    """The server's API (front-end) process: the descendant running vLLM's OpenAI api_server."""
    import psutil

    if server.proc is None:
        raise RuntimeError("front-end cost: the server is not running")
    root = psutil.Process(server.proc.pid)
    for p in [root, *root.children(recursive=True)]:
        try:
            cmd = p.cmdline()
        except psutil.NoSuchProcess:
            continue
        # the interpreter running the module itself (the signal watcher above it names it in its arguments)
        if cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]:
            return p
    raise RuntimeError("front-end cost: no API-server process under the vLLM server "
                       f"(pid {server.proc.pid}); the command line may have changed in this vLLM version")


def _cpu_s(proc) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


def fit(cases: pd.DataFrame) -> tuple[dict, np.ndarray]:
    """NNLS fit of the API CPU seconds (columns wall_s, requests, prompt_tokens, output_tokens,
    api_cpu_s); returns the costs and the fitted CPU per case."""
    from scipy.optimize import nnls

    need = ["wall_s", "requests", "prompt_tokens", "output_tokens", "api_cpu_s"]
    missing = [c for c in need if c not in cases]
    if missing:
        raise InputError(f"front-end cost fit: cases lack {missing}")
    if len(cases) < 4:
        raise InputError(f"front-end cost fit: {len(cases)} cases for 4 unknowns; give at least 4")
    A = cases[need[:4]].to_numpy(np.float64)
    b = cases["api_cpu_s"].to_numpy(np.float64)
    x, _ = nnls(A, b)
    return ({"idle_s_per_s": float(x[0]), "request_s": float(x[1]), "prompt_token_s": float(x[2]),
             "output_token_s": float(x[3])}, A @ x)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure(model: str | Path, out_dir: str | Path, config: EngineConfig = EngineConfig(), *,
            cases=CASES, seed: int = 0, opts: ReplayOptions | None = None, idle_s: float = IDLE_S,
            start_timeout_s: float = 300.0) -> dict:
    """Run the cases on a fresh server of ``model``; write ``frontend.json`` and ``cases.csv``."""
    from servesim.engine.replay import model_options

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    opts = opts or model_options(model, seed)
    server = VLLMServer(model, config, log_path=out / "server.log", start_timeout_s=start_timeout_s).start()
    try:
        return measure_on(server, out, opts, cases=cases, seed=seed, idle_s=idle_s)
    finally:
        server.stop()


def measure_on(server: VLLMServer, out_dir: str | Path, opts: ReplayOptions, *, cases=CASES, seed: int = 0,
               idle_s: float = IDLE_S) -> dict:
    """The cases on a running local ``server`` (one of this process's children)."""
    from servesim.workload import schema

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = []
    api = api_process(server)
    asyncio.run(replay_async(server.url, schema.make(np.zeros(4), np.full(4, 16), np.full(4, 4)), opts))  # warm-up
    plan = ([Case("idle", 0, 0, 0, 0.0)] if idle_s > 0 else []) + list(cases)
    for c in plan:
        c0, t0 = _cpu_s(api), time.perf_counter()
        done = 0
        if c.n == 0:
            time.sleep(idle_s)
        else:
            wl = schema.make(np.cumsum(rng.exponential(1.0 / c.rate, c.n)), np.full(c.n, c.prompt), np.full(c.n, c.output))
            recs: dict = {}
            asyncio.run(replay_async(server.url, wl, opts, alive=server.alive, records=recs))
            done = sum(1 for r in recs.values() if r.state == "finished")
        rows.append({"case": c.name, "requests": c.n, "prompt_tokens": c.n * c.prompt,
                     "output_tokens": c.n * c.output, "rate_per_s": c.rate, "completed": done,
                     "wall_s": time.perf_counter() - t0, "api_cpu_s": _cpu_s(api) - c0})
        print(f"front end: {c.name}: {rows[-1]['api_cpu_s']:.2f} CPU s in {rows[-1]['wall_s']:.1f} s", flush=True)
    df = pd.DataFrame(rows)
    costs, pred = fit(df)
    df["api_cpu_fit_s"] = pred
    df.to_csv(out / "cases.csv", index=False)
    busy = df["requests"] > 0
    rel = (df.loc[busy, "api_cpu_fit_s"] / df.loc[busy, "api_cpu_s"] - 1).abs()
    prof = {"fit": costs, "fit_max_rel_err": float(rel.max()) if len(rel) else float("nan"),
            "vllm": vllm_version(), "cpu_model": _cpu_model(), "cpus": os.cpu_count(),
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "engine": server.config.to_dict(), "model": Path(server.model).name, "seed": seed,
            "what": "CPU seconds of vLLM's API-server process per request, prompt token and output token "
                    "(servesim.engine.frontend_cost); servesim.sim.frontend.FrontEnd reads the fit block"}
    (out / "frontend.json").write_text(json.dumps(prof, indent=1) + "\n")
    return prof
