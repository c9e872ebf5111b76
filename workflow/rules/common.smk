# Shared helpers: figure discovery, per-figure parameters, declared inputs.
import json
import shlex
import sys

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
from servesim._imports import closure  # noqa: E402

CORE_RULE_FILES = {"common.smk", "data.smk", "notebooks.smk", "report.smk"}
GROUPS = list(config["papers"]) + list(config["groups"])
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
    """The notebook's parameters at this scale, as JSON for papermill -y."""
    fp = fig_params(wc.group, wc.fig)
    # `--config tiny=true` runs every notebook on its tiny `test` parameters (pipeline tests)
    p = dict(fp.get("test", fp.get(wc.scale, {})) if config.get("tiny") else fp.get(wc.scale, {}))
    p.update(scale=wc.scale, root=str(ROOT), seed=int(config["seed"]))
    return json.dumps(p, sort_keys=True)
