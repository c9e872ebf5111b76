"""A temporary copy of the project with only a few notebooks, so the workflow's report targets run in
seconds (the parameter files keep only those notebooks' entries)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import ROOT

# cheap notebooks: arithmetic and a minute-by-minute illustration, no dataset, no upstream rule
FEW_NOTEBOOKS = {"sageserve": ["fig01_reactive_vs_ideal"], "aegaeon": ["sec5_scaling_arithmetic"]}


def copy_project(dst: Path, notebooks: dict[str, list[str]] = FEW_NOTEBOOKS) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dst / name)
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for d in ("src", "workflow"):
        shutil.copytree(ROOT / d, dst / d, ignore=ignore)
    (dst / "traces").mkdir()
    for f in ("MANIFEST", "datasets.yaml"):
        shutil.copy(ROOT / "traces" / f, dst / "traces" / f)
    for group in sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.is_dir()):
        (dst / "notebooks" / group).mkdir(parents=True)
        for fig in notebooks.get(group, []):
            for ext in (".ipynb", ".py"):
                shutil.copy(ROOT / "notebooks" / group / f"{fig}{ext}", dst / "notebooks" / group / f"{fig}{ext}")
    for params in (dst / "workflow" / "params").glob("*.yaml"):
        data = yaml.safe_load(params.read_text()) or {}
        kept = {k: v for k, v in data.items() if k in notebooks.get(params.stem, [])}
        params.write_text(yaml.safe_dump(kept, sort_keys=True))
    return dst
