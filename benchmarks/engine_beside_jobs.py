"""Whether the quick engine calibration measures as well beside another job as alone: the workflow's
own quick calibration command, run in pairs (alone, then with a simulation pinned to the other
cores), each judged by the sim_vs_vllm notebook. One JSON line per run, then a summary line.

Why: the quick scale runs the calibration beside the other jobs (`beside_jobs` in
workflow/runs/calibration.yaml: it holds only its pinned core, servesim.engine.core_claim), which
saves the newcomer's first run the minutes a core would idle; that is only right if a neighbour on
the other core does not make the measurement worse. The neighbour stands in for the workflow's
other jobs: a quick SageServe run, over and over, pinned off the engine's core as the core claim
pins them. Run it with nothing else on the machine (latencies are measured in real time).

    python benchmarks/engine_beside_jobs.py --pairs 3 [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = "results/quick/calibration/engine/profile/fit.json"
METRICS = ("max_abs_rel_err_p50_p90_ttft_e2e_below_saturation",
           "speed_matched_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation",
           "steps_max_abs_rel_err_p50_p90_ttft_e2e_below_saturation", "capacity_rel_err")
NEIGHBOUR = ["-m", "servesim.systems.sageserve.runs", "--preset", "quick", "--volume-scale", "1.0", "--days", "2",
             "--models", "llama-2-70b", "--regions", "eastus", "--window-h", "36.0", "40.0", "--strategy", "lt_ua",
             "--seed", "0"]


def workflow_command(kind: str) -> str:
    """The workflow's shell command of rule ``kind`` (engine_model / engine_calibration) at quick
    scale, from a dry run (alone: SERVESIM_ENGINE_BESIDE_JOBS=0, so no core claim in it)."""
    env = {**os.environ, "SERVESIM_ENGINE_BESIDE_JOBS": "0"}
    p = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "2", TARGET, "--forcerun", TARGET,
                        "results/quick/calibration/engine/model"], cwd=ROOT, capture_output=True, text=True, env=env)
    text = p.stdout + p.stderr
    for block in text.split(f"rule {kind}:")[1:]:
        for ln in block.splitlines():
            if ln.startswith("Shell command: "):
                return ln[len("Shell command: "):]
    raise SystemExit(f"no shell command of rule {kind} in the workflow's dry run (exit {p.returncode}):\n{text[-2000:]}")


def retarget(cmd: str, out: Path, model: Path | None = None) -> str:
    """``cmd`` writing to ``out`` (its ``-o`` / output folder) and logging to ``out``.log."""
    cmd = cmd.replace("results/quick/calibration/engine/model", str(model) if model else "MODEL")
    head, _, _ = cmd.partition(" > ")
    if " -o " in head:
        head = head.split(" -o ")[0] + f" -o {shlex.quote(str(out))}"
    else:  # make-tiny-model takes the folder as its first argument (already replaced)
        head = head.replace("MODEL", shlex.quote(str(out)))
    return f"{head} > {shlex.quote(str(out))}.log 2>&1"


def metrics(run: Path, work: Path) -> dict:
    """The sim_vs_vllm notebook's verdict metrics on one calibration output folder."""
    root = work / f"root-{run.name}"
    (root / "results" / "quick" / "calibration").mkdir(parents=True, exist_ok=True)
    link = root / "results" / "quick" / "calibration" / "engine"
    if not link.exists():
        link.symlink_to(run.resolve())
    for d in ("workflow", "src", "profiles"):  # what the notebook reads from its project root
        if not (root / d).exists():
            (root / d).symlink_to(ROOT / d)
    params = json.dumps({"loads": [0.3, 0.6, 0.9, 1.2], "root": str(root), "scale": "quick", "seed": 0, "shapes": []})
    p = subprocess.run([sys.executable, "-m", "servesim.analysis.papermill_run", "-k", "python3", "--cwd",
                        str(ROOT / "notebooks" / "calibration"), "--no-progress-bar", "--log-level", "WARNING",
                        str(ROOT / "notebooks" / "calibration" / "sim_vs_vllm.ipynb"), str(root / "executed.ipynb"),
                        "-y", params], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"the notebook failed on {run}:\n{(p.stdout + p.stderr)[-2000:]}")
    m = json.loads((root / "results" / "quick" / "calibration" / "sim_vs_vllm" / "metrics.json").read_text())
    return {k: m.get(k) for k in METRICS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    a = ap.parse_args(argv)
    if a.pairs < 1:
        raise SystemExit("--pairs must be >= 1")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("needs two cores: the engine's and the neighbour's")
    work = a.work or Path(tempfile.mkdtemp(prefix="beside-"))
    work.mkdir(parents=True, exist_ok=True)
    model = work / "model"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if not model.exists():
        subprocess.run(retarget(workflow_command("engine_model"), model), shell=True, check=True, cwd=ROOT, env=env)
    cal = workflow_command("engine_calibration")
    runs = []
    for i in range(a.pairs):
        for mode in ("alone", "beside"):
            out = work / f"{mode}{i}"
            neighbour = None
            if mode == "beside":  # the other jobs, as the core claim pins them: off the engine's (last) core
                loop = (f"while :; do {shlex.quote(sys.executable)} {shlex.join(NEIGHBOUR)} "
                        f"-o {shlex.quote(str(work / 'neighbour'))} > /dev/null 2>&1; done")
                neighbour = subprocess.Popen(["bash", "-c", loop], cwd=ROOT, env=env, start_new_session=True,
                                             preexec_fn=lambda: os.sched_setaffinity(0, cpus[:-1]))
            t = time.perf_counter()
            try:
                rc = subprocess.run(retarget(cal, out, model), shell=True, cwd=ROOT, env=env).returncode
            finally:
                if neighbour is not None:
                    os.killpg(neighbour.pid, 15)
                    neighbour.wait()
            if rc not in (0, 3):
                raise SystemExit(f"the calibration exited {rc} (log {out}.log)")
            rec = {"pair": i, "mode": mode, "wall_s": round(time.perf_counter() - t, 1), **metrics(out, work)}
            runs.append(rec)
            print(json.dumps(rec), flush=True)
    summary = {"pairs": a.pairs, "cpus": len(cpus)}
    for mode in ("alone", "beside"):  # each reading's worst P50/P90 TTFT/E2E error below saturation, per run
        for reading, k in zip(("profile", "speed_matched", "steps"), METRICS):
            summary[f"{mode}_{reading}_worst"] = [round(r[k], 4) for r in runs if r["mode"] == mode and r[k] is not None]
    print(json.dumps({"summary": summary}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
