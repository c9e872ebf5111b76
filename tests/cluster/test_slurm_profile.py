"""The Slurm profile (`workflow/profiles/slurm`), run for real: a single-node Slurm started from
Debian's packages (tests/cluster/slurm.py), every job submitted with `sbatch` by Snakemake's Slurm
executor, the outputs compared with a local run of the same targets, and the partition each job
landed on read from Slurm's own records.

Skipped, with the reason, where a Slurm is configured on the host already (the fixture points
the node's clients at its config through /etc/slurm/slurm.conf and removes it after), where Slurm's daemons or the executor plugin are not installed or the
test does not run as root (slurmd needs it); `.ci/run` installs them, and with
SERVESIM_REQUIRE_SLURM=1 (set there) a missing piece fails the test instead.
"""

from __future__ import annotations

import csv
import filecmp
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.cluster.slurm import missing_tools, single_node_slurm, system_conf_taken
from tests.conftest import pythonpath_env
from tests.foundation.test_workflow import _copy_project

# a notebook, a simulation run and the vLLM engine rule (resources: gpu=1) of the test scale
CPU_TARGETS = ["figures/test/aegaeon/fig07_scaling_breakdown.png",
               "results/test/aegaeon/fig17/q72b/normal/aegaeon/summary.json"]
GPU_RULE = "engine_calibration"
COMPARED = ["results/test/aegaeon/fig07_scaling_breakdown/metrics.json",
            "results/test/aegaeon/fig07_scaling_breakdown/data.csv",
            "results/test/aegaeon/fig17/q72b/normal/aegaeon/summary.json",
            "results/test/aegaeon/fig17/q72b/normal/aegaeon/points.csv"]


def _without_wall_times(x):
    """A JSON value without the keys that time our own code (`*wall*`): they differ run to run."""
    if isinstance(x, dict):
        return {k: _without_wall_times(v) for k, v in x.items() if "wall" not in k}
    if isinstance(x, list):
        return [_without_wall_times(v) for v in x]
    return x


def _same(a, b) -> bool:
    if a.suffix == ".json":
        return _without_wall_times(json.loads(a.read_text())) == _without_wall_times(json.loads(b.read_text()))
    if a.suffix == ".csv":
        rows = [list(csv.DictReader(f.open(newline=""))) for f in (a, b)]
        return [_without_wall_times(r) for r in rows[0]] == [_without_wall_times(r) for r in rows[1]]
    return filecmp.cmp(a, b, shallow=False)


def _why_not() -> str | None:
    missing = missing_tools()
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing: apt-get install slurmctld slurmd munge slurm-client)"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "the Slurm executor plugin is not installed (pip install -e .[slurm])"
    if os.geteuid() != 0:
        return "slurmd needs root"
    if system_conf_taken():
        return "a Slurm is configured on this host already (/etc/slurm/slurm.conf): not touching it"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (the GPU-partition job is the engine rule)"
    return None


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    why = _why_not()
    if why:
        if os.environ.get("SERVESIM_REQUIRE_SLURM") == "1":
            pytest.fail(f"SERVESIM_REQUIRE_SLURM=1 but {why}")
        pytest.skip(why)
    with single_node_slurm(tmp_path_factory.mktemp("slurm")) as s:
        yield s


def _snakemake(proj, mirror, extra, env) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", *extra, "--config", "scale=test", f"data_mirror={mirror}",
           "allow_download=false"]
    return subprocess.run(cmd, cwd=proj, capture_output=True, text=True, env=env)


def _engine_target(proj) -> str:
    """The engine rule's first output at the test scale (as the workflow declares it)."""
    from servesim.analysis import runs as runs_api

    run = runs_api.run("calibration", "engine", "test", proj)
    return f"results/test/calibration/engine/{run.outputs[0]}"


def _small_node_profile(proj):
    """The project's Slurm profile with only its sizes cut to this node (its CPUs; jobs of at most
    6 GB): partitions, executor and every other setting as shipped. (A `--set-resources` on the
    command line would replace the profile's whole per-rule block, partitions included.)"""
    import yaml

    doc = yaml.safe_load((proj / "workflow/profiles/slurm/config.yaml").read_text())
    ncpu = os.cpu_count() or 1
    doc["cores"] = min(doc["cores"], ncpu)
    for res in [doc["default-resources"], *doc["set-resources"].values()]:
        if "cpus_per_task" in res:
            res["cpus_per_task"] = min(res["cpus_per_task"], ncpu)
        if "mem_mb" in res:
            res["mem_mb"] = min(res["mem_mb"], 6000)
    out = proj / "small-node-profile"
    out.mkdir()
    (out / "config.yaml").write_text(yaml.safe_dump(doc))
    return out


def _rule_partitions(slurm) -> dict[str, set[str]]:
    """{rule: partitions its jobs ran on}, from Slurm's own job table (the executor puts
    `rule_<name>[_wildcards_...]` in each job's comment; MinJobAge keeps finished jobs listed)."""
    out: dict[str, set[str]] = {}
    for line in slurm.run("squeue", "-h", "-t", "all", "-o", "%i|%P|%k|%T").splitlines():
        _, part, comment, _ = line.split("|", 3)
        rule = comment.removeprefix("rule_").split("_wildcards_")[0]
        out.setdefault(rule, set()).add(part)
    return out


@pytest.mark.slow
@pytest.mark.engine  # its GPU-partition job is the engine rule (vLLM)
def test_slurm_profile_runs_jobs_on_their_partitions(slurm, tmp_path, mirror):
    local, cluster = tmp_path / "local", tmp_path / "cluster"
    for p in (local, cluster):
        p.mkdir()
        _copy_project(p)
    env = pythonpath_env()

    r = _snakemake(local, mirror, ["--cores", "2", *CPU_TARGETS], {**env, "PYTHONPATH": str(local / "src")})
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]

    engine = _engine_target(cluster)
    senv = {**slurm.env, **env, "PYTHONPATH": str(cluster / "src")}
    profile = _small_node_profile(cluster)
    r = _snakemake(cluster, mirror, [*CPU_TARGETS, engine, "--profile", str(profile), "--slurm-status-command", "squeue",
                                     "--slurm-init-seconds-before-status-checks", "5", "--jobs", "2"], senv)
    assert r.returncode == 0, slurm.logs(600) + "\n===== snakemake =====\n" + (r.stdout + r.stderr)[-6000:]

    # every job went through sbatch and completed; each rule landed on its partition
    jobs = slurm.finished_jobs()
    assert jobs and all(j["JobState"] == "COMPLETED" for j in jobs), jobs
    parts = _rule_partitions(slurm)
    assert parts.get(GPU_RULE) == {"gpu"}, parts
    assert parts.get("figure") == {"cpu"} and any(r.startswith("run_aegaeon") for r in parts), parts
    assert all(p == {"cpu"} for r, p in parts.items() if r != GPU_RULE), parts
    assert sum(j["Partition"] == "gpu" for j in jobs) == 1, jobs  # the engine job, and only it
    assert (cluster / engine).is_file()

    # the same outputs as the local run
    for rel in COMPARED:
        assert _same(local / rel, cluster / rel), f"{rel} differs between local and Slurm"
