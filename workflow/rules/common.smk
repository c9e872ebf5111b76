# Shared helpers: figure discovery, per-figure parameters, declared runs (workflow/runs/), inputs.
import json
import os
import re
import shlex
import sys
from functools import lru_cache

import yaml
from servesim.analysis.jsonschema_lite import Draft202012Validator

ROOT = Path(workflow.basedir).resolve()
# shell prefix: every job imports this checkout's package
# (and finds the configured data mirror, for notebooks opened before a fetch)
RUN_ENV = (
    f"PYTHONPATH={shlex.quote(str(ROOT / 'src'))}${{PYTHONPATH:+:$PYTHONPATH}} MPLBACKEND=Agg"
    f" SERVESIM_DATA_MIRROR={shlex.quote(str((ROOT / config['data_mirror']).resolve()))}"
)
SEED = int(config["seed"])
CONDA_ENV = "../envs/servesim.yaml"  # relative to the rule files
ENGINE_CONDA_ENV = "../envs/engine.yaml"
SRC = ROOT / "src"
if str(SRC) not in sys.path:  # the workflow always runs this checkout's package
    sys.path.insert(0, str(SRC))
from servesim._imports import closure, module_closure  # noqa: E402
from servesim._yaml import StrictYAMLError, strict_yaml_load  # noqa: E402
from servesim.analysis import runs as runs_api  # noqa: E402
from servesim.analysis.job_interpreter import job_interpreter  # noqa: E402

# the interpreter running Snakemake (a venv need not be activated), under one name however it was started
PY = shlex.quote(job_interpreter())


def check_groups():
    """A misspelt paper or group selected no figure and the run "succeeded" doing nothing: each name
    of the config's ``papers`` and ``groups`` must be a folder of notebooks/ (the known papers are
    those with claims in workflow/claims/, the known groups the other folders)."""
    folders = sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.is_dir())
    claims = {p.stem for p in (ROOT / "workflow" / "claims").glob("*.yaml")}
    for key in ("papers", "groups"):
        unknown = [n for n in config[key] if n not in folders]
        if unknown:
            known = [f for f in folders if (f in claims) == (key == "papers")]
            raise WorkflowError(f"config {key}: unknown {key[:-1]}(s) {', '.join(map(repr, unknown))} (no folder "
                                f"notebooks/<name>/; workflow/config.yaml or --config); known {key}: {', '.join(known)}")


check_groups()
GROUPS = list(config["papers"]) + list(config["groups"])
SCALES = list(runs_api.SCALES)  # quick, full, and test (the small scale the test suite runs)
SCALE_RE = "|".join(SCALES)
_PARAMS_SCHEMA = Draft202012Validator(yaml.safe_load((ROOT / "workflow/schemas/params.schema.yaml").read_text()))


def discover_figures():
    """{group: [figure, ...]} for every notebooks/<group>/<figure>.ipynb."""
    figs = {}
    for g in GROUPS:
        figs[g] = sorted(p.stem for p in (ROOT / "notebooks" / g).glob("*.ipynb"))
    return figs


def load_params(group):
    """workflow/params/<group>.yaml, validated; an unknown figure or key is an error naming it."""
    path = ROOT / "workflow" / "params" / f"{group}.yaml"
    if not path.exists():
        return {}
    try:  # strict: a repeated figure or key is an error, not the last one winning
        data = strict_yaml_load(path.read_text(encoding="utf-8-sig"), source=str(path)) or {}
    except StrictYAMLError as exc:
        raise WorkflowError(str(exc)) from None
    errors = sorted(_PARAMS_SCHEMA.iter_errors(data), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        raise WorkflowError(f"{path}: at {runs_api.error_path(e)}: {e.message}")
    unknown = [f for f in data if f not in FIGURES.get(group, [])]
    if unknown:
        raise WorkflowError(f"{path}: entries {unknown} name no notebook in notebooks/{group}/")
    return data


FIGURES = discover_figures()
PARAMS = {g: load_params(g) for g in GROUPS}
DATASETS = sorted({line.split("\t", 1)[0] for line in (ROOT / "traces/MANIFEST").read_text().splitlines()[1:] if line})


def fig_params(group, fig):
    return PARAMS.get(group, {}).get(fig, {})


def declared_runs(paper, scale):
    """workflow/runs/<paper>.yaml at one scale ({name: servesim.analysis.runs.Run}); errors name the file and key."""
    try:
        return runs_api.declared(paper, scale, ROOT)
    except runs_api.RunsError as e:
        raise WorkflowError(str(e)) from None


def figure_runs(group, fig, scale):
    """The runs a figure reads (its params' `runs:`, names or patterns of workflow/runs/<group>.yaml)."""
    pats = fig_params(group, fig).get("runs", [])
    if not pats:
        return []
    declared_runs(group, scale)  # validates the file first
    try:
        return runs_api.select(group, pats, scale, ROOT)
    except runs_api.RunsError as e:
        raise WorkflowError(f"workflow/params/{group}.yaml: {fig}: runs: {e}") from None


def newest_source(files):
    """[the most recently modified of ``files``]: a job's declared source input.

    A job re-runs when any file it imports is newer than its outputs, which depends only on the
    newest of them; declaring just that one keeps the trigger exact and the scheduler cheap; Snakemake
    sizes every input of every ready job once a second (its job-rate re-evaluation), and with the
    whole closure declared (~110 files for each of ~200 ready runs) that alone took half a core of
    the 2-core quick target. Ties go to the first path, so the choice is stable."""
    files = sorted(files)
    if not files:
        return []
    stamps = [os.stat(f).st_mtime_ns for f in files]
    return [str(Path(files[stamps.index(max(stamps))]).relative_to(ROOT))]


@lru_cache(maxsize=None)
def module_sources(module):
    """The newest of the servesim files `python -m <module>` imports, transitively (`newest_source`)."""
    return newest_source(str(f) for f in module_closure(module, SRC))


# {(paper, module, command, outputs, out_file, kind): [run name, ...]} over every scale: one rule each
RUN_GROUPS = {}
for _paper in runs_api.papers(ROOT):
    for _scale in SCALES:
        for _r in declared_runs(_paper, _scale).values():
            if _r.same_as is None:
                _key = (_paper, _r.kind, _r.module, _r.command, _r.outputs, _r.out_file)
                RUN_GROUPS.setdefault(_key, [])
                if _r.name not in RUN_GROUPS[_key]:
                    RUN_GROUPS[_key].append(_r.name)


def figure_outputs(scale, group, fig):
    return [
        f"figures/{scale}/{group}/{fig}.pdf",
        f"figures/{scale}/{group}/{fig}.png",
        f"results/{scale}/{group}/{fig}/data.csv",
        f"results/{scale}/{group}/{fig}/metrics.json",
    ]


def all_figure_outputs(scale, groups=None):
    out = []
    for g in groups or GROUPS:
        for fig in FIGURES.get(g, []):
            out += figure_outputs(scale, g, fig)
    return out


def dataset_marker(ds):
    return f"traces/data/{ds}/.verified"


def papermill_params(wc):
    """The notebook's parameters at this scale, as JSON for papermill -y (`test` falls back to `quick`)."""
    fp = fig_params(wc.group, wc.fig)
    p = dict(fp.get(wc.scale, fp.get("quick", {}) if wc.scale == "test" else {}))
    p.update(scale=wc.scale, root=str(ROOT), seed=int(config["seed"]))
    return json.dumps(p, sort_keys=True)


def figure_inputs(wc):
    """A figure's inputs: the notebook, the newest of the servesim files it imports (transitively), its datasets
    and the outputs of the runs it names."""
    nb = ROOT / "notebooks" / wc.group / f"{wc.fig}.ipynb"
    p = fig_params(wc.group, wc.fig)
    return {
        "notebook": str(nb.relative_to(ROOT)),
        "src": newest_source(str(f) for f in closure(nb, SRC)),
        "data": [dataset_marker(ds) for ds in p.get("datasets", [])],
        # one output per run stands for the job that writes them all (the scheduler's cost, newest_source)
        "runs": [r.files[0] for r in figure_runs(wc.group, wc.fig, wc.scale)],
        "params": f"workflow/params/{wc.group}.yaml" if (ROOT / "workflow/params" / f"{wc.group}.yaml").exists() else [],
    }


# ---- declared runs (rules in runs.smk)
def run_spec(paper, wc):
    r = declared_runs(paper, wc.scale).get(wc.job)
    if r is None or r.same_as is not None:
        raise WorkflowError(f"workflow/runs/{paper}.yaml declares no job {wc.job!r} at {wc.scale} scale")
    return r


def run_inputs(paper, wc):
    r = run_spec(paper, wc)
    runs = declared_runs(paper, wc.scale)
    return {
        "src": module_sources(r.module),
        "data": [dataset_marker(ds) for ds in r.data],
        "runs": [f"{runs[n].dir}/summary.json" for n in r.collects],
    }


def run_command(paper, wc):
    """The job's command line after `python -m` (quoted)."""
    r = run_spec(paper, wc)
    runs = declared_runs(paper, wc.scale)
    out = f"{r.dir}/{r.out_file}" if r.out_file else r.dir
    words = [r.module] + ([r.command] if r.command else []) + [f"{runs[n].dir}/summary.json" for n in r.collects]
    words += list(r.args) + (["--seed", str(SEED)] if r.seeded else []) + ["-o", out]
    return " ".join(shlex.quote(w) for w in words)


def run_rule_name(key, taken):
    """run_<paper>_<module>[_<command>], unique."""
    paper, kind, module, command = key[:4]
    base = re.sub(r"\W+", "_", f"run_{paper}_{module.rsplit('.', 1)[-1]}" + (f"_{command}" if command else ""))
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


# ---- the real engine (rules in engine.smk; settings from the environment, see there)
_ENGINE_PYTHON = os.environ.get("SERVESIM_ENGINE_PYTHON")  # default: the jobs' interpreter
ENGINE_PY = shlex.quote(_ENGINE_PYTHON) if _ENGINE_PYTHON else PY
ENGINE_MODEL = os.environ.get("SERVESIM_ENGINE_MODEL")
ENGINE_ARGS = os.environ.get(
    "SERVESIM_ENGINE_ARGS",
    "--max-num-seqs 32 --max-num-batched-tokens 512 --block-size 32 --kv-blocks 512 --max-model-len 2048"
    " --enforce-eager --start-timeout 900",
)
ENGINE_PAPER, ENGINE_RUN = "calibration", "engine"
ENGINE = f"results/{{scale}}/{ENGINE_PAPER}/{ENGINE_RUN}"
ENGINE_OUTPUTS = declared_runs(ENGINE_PAPER, "quick")[ENGINE_RUN].outputs


def engine_run(wc):
    return declared_runs(ENGINE_PAPER, wc.scale)[ENGINE_RUN]


# Whether the calibration holds only its pinned core while the other jobs run on the rest
# (servesim.engine.core_claim): the engine run's `beside_jobs` at the scale (workflow/runs/calibration.yaml
# says which scales and why), or SERVESIM_ENGINE_BESIDE_JOBS=1 / 0 for every scale.
_beside = os.environ.get("SERVESIM_ENGINE_BESIDE_JOBS", "")
if _beside.strip() not in ("", "0", "1"):
    raise ValueError(f"SERVESIM_ENGINE_BESIDE_JOBS={_beside!r}: 1 (beside the other jobs), 0 (alone) or unset "
                     "(the engine run's beside_jobs at the scale)")
ENGINE_BESIDE_JOBS = {"1": True, "0": False}.get(_beside.strip())


def engine_beside_jobs(wc):
    """Whether the calibration runs beside other jobs: asked for (the run's `beside_jobs`, or
    ENGINE_BESIDE_JOBS) and its engine pinned (in-process replays with --cpus), so there is a core
    to claim."""
    run = engine_run(wc)
    if not (run.beside_jobs if ENGINE_BESIDE_JOBS is None else ENGINE_BESIDE_JOBS):
        return False
    args = list(run.args)
    mode = args[args.index("--replay-mode") + 1] if "--replay-mode" in args[:-1] else "http"
    return mode == "in-process" and "--cpus" in args


# The HTML report (workflow/rules/html_report.smk)
def _report_pages(scale):
    return [f"results/{scale}/report/{p}.html" for p in ("claims", "provenance", "runtimes")]


def _report_config(wc):
    """--config for the inner `snakemake --report`: this run's settings, so it sees the same jobs."""
    keys = [k for k in ("seed", "data_mirror", "allow_download") if k in config]
    return " ".join(shlex.quote(f"{k}={config[k]}") for k in keys) + f" scale={wc.scale}"
