# Shared helpers: figure discovery, per-figure parameters, declared runs (workflow/runs/), inputs.
import json
import re
import shlex
import sys
from functools import lru_cache

import yaml
from jsonschema import Draft202012Validator

ROOT = Path(workflow.basedir).resolve()
PY = shlex.quote(sys.executable)  # the interpreter running Snakemake (a venv need not be activated)
# shell prefix: every job imports this checkout's package
# (and finds the configured data mirror, for notebooks opened before a fetch)
RUN_ENV = (
    "PYTHONPATH=" + shlex.quote(str(ROOT / "src")) + "${PYTHONPATH:+:$PYTHONPATH} MPLBACKEND=Agg"
    + " SERVESIM_DATA_MIRROR=" + shlex.quote(str((ROOT / config["data_mirror"]).resolve()))
)
SRC = ROOT / "src"
if str(SRC) not in sys.path:  # the workflow always runs this checkout's package
    sys.path.insert(0, str(SRC))
from servesim._imports import closure, module_closure  # noqa: E402
from servesim.analysis import runs as runs_api  # noqa: E402

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
    data = yaml.safe_load(path.read_text()) or {}
    errors = sorted(_PARAMS_SCHEMA.iter_errors(data), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        raise WorkflowError(f"{path}: at {'/'.join(map(str, e.path)) or '<top>'}: {e.message}")
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


@lru_cache(maxsize=None)
def module_sources(module):
    """The servesim files `python -m <module>` imports, transitively (the job's source inputs)."""
    return [str(f.relative_to(ROOT)) for f in module_closure(module, SRC)]


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
