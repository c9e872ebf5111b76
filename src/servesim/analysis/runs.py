"""The heavy jobs of each paper, as declared in ``workflow/runs/<paper>.yaml``, and where their outputs live.

One declaration serves both sides: the workflow builds one job per run from it, and notebooks
find a run's outputs through it (`run_dir`, `run_dirs`, `load_summary`), so no results path is
spelled twice. A run named ``runs/lt_ua`` of paper ``sageserve`` at scale ``quick`` writes under
``results/quick/sageserve/runs/lt_ua/``. The file's schema is ``workflow/schemas/runs.schema.yaml``;
``docs`` of the format are at the top of each declaration.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import string
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import yaml

from .outputs import project_root

SCALES = ("quick", "full", "test")


class RunsError(ValueError):
    """A run declaration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Run:
    """One job at one scale (matrix expanded). ``same_as``: this run *is* that run's outputs."""

    paper: str
    name: str
    scale: str
    kind: str
    module: str | None
    command: str | None
    args: tuple[str, ...]
    outputs: tuple[str, ...]
    out_file: str | None
    data: tuple[str, ...]
    same_as: str | None
    seeded: bool = True  # the job takes ``--seed``
    collects: tuple[str, ...] = ()  # names of the runs whose summary.json this job gathers
    model: str | None = None  # engine runs: the size of the locally built model
    beside_jobs: bool = False  # engine runs: hold only the engine's pinned core, other jobs beside it

    @property
    def dir(self) -> str:
        """The run's output folder, relative to the project root."""
        return f"results/{self.scale}/{self.paper}/{self.same_as or self.name}"

    @property
    def files(self) -> list[str]:
        return [f"{self.dir}/{f}" for f in self.outputs]


def argv(args: dict) -> list[str]:
    """``{strategy: lt_ua, window-h: [36, 40], bursts: true, x: null}`` ->
    ``["--strategy", "lt_ua", "--window-h", "36", "40", "--bursts"]`` (one-letter keys: ``-n``;
    ``false`` / ``null`` leave the option out)."""
    out: list[str] = []
    for k, v in args.items():
        if v is None or v is False:
            continue
        out.append(("-" if len(k) == 1 else "--") + k)
        if v is True:
            continue
        out += [str(x) for x in v] if isinstance(v, list) else [str(v)]
    return out


def error_path(e) -> str:
    """Where in the document a jsonschema error is: the keys joined by '/'."""
    return "/".join(map(str, e.path)) or "<top>"


def _schema(root: Path):
    from .jsonschema_lite import Draft202012Validator  # without the 1-s format-checker imports

    return Draft202012Validator(yaml.safe_load((root / "workflow/schemas/runs.schema.yaml").read_text()))


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def _subst(v, values: dict):
    if isinstance(v, str):
        return v.format(**values) if "{" in v else v
    if isinstance(v, list):
        return [_subst(x, values) for x in v]
    return v


def _expand(path: Path, paper: str, template: str, spec: dict, scale: str) -> list[Run]:
    where = f"{path}: runs/{template}"
    per = spec.get(scale)
    if per is None:
        return []
    matrix = {**spec.get("matrix", {}), **per.get("matrix", {})}
    missing = _fields(template) - set(matrix)
    if missing:
        raise RunsError(f"{where}: name fields {sorted(missing)} are not in this scale's `matrix`")
    unused = set(matrix) - _fields(template)
    if unused:
        raise RunsError(f"{where}: matrix keys {sorted(unused)} do not appear in the name (runs would collide)")
    keys = list(matrix)
    runs = []
    for combo in itertools.product(*(list(matrix[k]) for k in keys)):
        values = dict(zip(keys, combo))
        args = {**spec.get("args", {}), **per.get("args", {})}
        for k in keys:  # a matrix given as a mapping adds (or replaces) the chosen value's own options
            if isinstance(matrix[k], dict):
                args.update(matrix[k][values[k]] or {})
        name = template.format(**values)
        args = {k: _subst(v, values) for k, v in args.items()}
        same_as = per["same_as"].format(**values) if "same_as" in per else None
        runs.append(Run(paper=paper, name=name, scale=scale, kind=spec.get("kind", "run"), module=spec.get("module"),
                        command=spec.get("command"), args=tuple(argv(args)), outputs=tuple(spec["outputs"]),
                        out_file=spec.get("out_file"), data=tuple(spec.get("data", [])), same_as=same_as,
                        collects=tuple(spec.get("collects", ())), model=per.get("model"),
                        beside_jobs=bool(per.get("beside_jobs", False)), seeded=spec.get("seeded", True)))
    return runs


@lru_cache(maxsize=None)
def _declared(root: Path, paper: str, mtime: float) -> dict[str, dict[str, Run]]:
    path = root / "workflow" / "runs" / f"{paper}.yaml"
    from servesim._yaml import StrictYAMLError, strict_yaml_load

    try:  # strict: a repeated key (a copy-pasted run or arg) is an error, not the last one winning
        doc = strict_yaml_load(path.read_text(encoding="utf-8-sig"), source=str(path)) or {}
    except (StrictYAMLError, UnicodeDecodeError) as exc:
        raise RunsError(str(exc) if isinstance(exc, StrictYAMLError) else f"{path}: not UTF-8 text") from None
    errors = sorted(_schema(root).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        raise RunsError(f"{path}: at {error_path(e)}: {e.message}")
    if doc["paper"] != paper:
        raise RunsError(f"{path}: at paper: {doc['paper']!r} is not {paper!r} (the file's name)")
    out: dict[str, dict[str, Run]] = {}
    for scale in SCALES:
        runs: dict[str, Run] = {}
        for template, spec in doc.get("runs", {}).items():
            for r in _expand(path, paper, template, spec, scale):
                if r.name in runs:
                    raise RunsError(f"{path}: runs/{template}: run {r.name!r} is declared twice at {scale} scale")
                runs[r.name] = r
        for r in runs.values():
            if r.same_as is not None and (r.same_as not in runs or runs[r.same_as].same_as is not None):
                raise RunsError(f"{path}: run {r.name!r} at {scale}: same_as {r.same_as!r} names no run of this scale")
            if r.same_as is not None and set(r.outputs) - set(runs[r.same_as].outputs):
                raise RunsError(f"{path}: run {r.name!r} at {scale}: outputs {sorted(set(r.outputs) - set(runs[r.same_as].outputs))}"
                                f" are not outputs of {r.same_as!r}")
            if r.collects:  # patterns -> the names they match at this scale, in declaration order
                names = [n for n in runs if n != r.name and any(fnmatch.fnmatchcase(n, pat) for pat in r.collects)]
                if not names:
                    raise RunsError(f"{path}: run {r.name!r} at {scale}: collects {list(r.collects)} match no run")
                runs[r.name] = replace(r, collects=tuple(names))
        out[scale] = runs
    return out


def declared(paper: str, scale: str, root: str | Path | None = None) -> dict[str, Run]:
    """Every run of ``paper`` at ``scale`` by name (an empty dict when the paper declares none)."""
    if scale not in SCALES:
        raise RunsError(f"scale must be one of {SCALES}, got {scale!r}")
    root = _decl_root(root)
    path = root / "workflow" / "runs" / f"{paper}.yaml"
    if not path.exists():
        return {}
    return _declared(root, paper, path.stat().st_mtime)[scale]


def _decl_root(root) -> Path:
    """Where the declarations are: ``root`` when it is a project, else the project around the working
    directory (tests write results to a scratch ``root``)."""
    if root is not None and (Path(root) / "workflow" / "runs").is_dir():
        return Path(root).resolve()
    return project_root().resolve()


def _results_root(root) -> Path:
    return Path(root) if root else project_root()


def papers(root: str | Path | None = None) -> list[str]:
    """The papers (and groups) with a run declaration."""
    return sorted(p.stem for p in (_decl_root(root) / "workflow" / "runs").glob("*.yaml"))


def run(paper: str, name: str, scale: str, root: str | Path | None = None) -> Run:
    runs = declared(paper, scale, root)
    if name not in runs:
        raise RunsError(f"workflow/runs/{paper}.yaml declares no run {name!r} at {scale} scale"
                        f" (runs there: {', '.join(sorted(runs)) or 'none'})")
    return runs[name]


def select(paper: str, patterns, scale: str, root: str | Path | None = None) -> list[Run]:
    """The runs whose names match any of ``patterns`` (fnmatch, e.g. ``ablations/appa/*``) at this
    scale. A pattern that matches no run at any scale is an error naming it (a typo); one whose runs
    are declared at other scales only (a named reading run at paper scale, say) selects nothing."""
    runs = declared(paper, scale, root)
    out: dict[str, Run] = {}
    for pat in [patterns] if isinstance(patterns, str) else patterns:
        hit = [r for n, r in runs.items() if fnmatch.fnmatchcase(n, pat)]
        if not hit and not any(fnmatch.fnmatchcase(n, pat) for sc in SCALES for n in declared(paper, sc, root)):
            raise RunsError(f"workflow/runs/{paper}.yaml: no run matches {pat!r} at any scale")
        out.update((r.name, r) for r in hit)
    return list(out.values())


@lru_cache(maxsize=None)
def _params_doc(path: Path, mtime: float) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def figure_params(paper: str, root: str | Path | None = None) -> dict:
    """``{figure: its parameters}`` from workflow/params/<paper>.yaml (empty when there is none);
    read once per edit of the file."""
    path = _decl_root(root) / "workflow" / "params" / f"{paper}.yaml"
    return _params_doc(path, path.stat().st_mtime) if path.is_file() else {}


def figure_runs(paper: str, figure: str, scale: str, root: str | Path | None = None) -> list[str]:
    """The runs one figure reads at this scale: those its parameters name (``runs:`` in
    workflow/params/<paper>.yaml) and, transitively, the runs they collect."""
    pats = (figure_params(paper, root).get(figure) or {}).get("runs", [])
    if not pats:
        return []
    runs = declared(paper, scale, root)
    todo = [r.name for r in select(paper, pats, scale, root)]
    seen: list[str] = []
    while todo:
        name = todo.pop(0)
        if name not in seen:
            seen.append(name)
            todo += list(runs[name].collects)
    return seen


def run_dir(paper: str, name: str, scale: str, root: str | Path | None = None) -> Path:
    """The folder holding run ``name``'s outputs (a ``same_as`` run resolves to its source)."""
    return _results_root(root) / run(paper, name, scale, root).dir


def run_dirs(paper: str, prefix: str, scale: str, root: str | Path | None = None) -> dict[str, Path]:
    """``{point: folder}`` for every run named ``<prefix>/<point>`` at this scale, in declaration order."""
    base = _results_root(root)
    return {r.name[len(prefix) + 1:]: base / r.dir for r in select(paper, f"{prefix}/*", scale, root)}


def load_summary(paper: str, name: str, scale: str, root: str | Path | None = None) -> dict:
    """The run's ``summary.json``."""
    return json.loads((run_dir(paper, name, scale, root) / "summary.json").read_text())
