import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    # tests that start a vLLM engine (marked `engine`, the workflow runs that include the engine rule
    # among them): one xdist worker runs them one after another, so no two engines share the cores
    for item in items:
        if item.get_closest_marker("engine"):
            item.add_marker(pytest.mark.xdist_group("vllm-engine"))


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The local data mirror; tests that need real data skip (never download) without it."""
    from servesim.data import mirror_dir

    m = mirror_dir(ROOT)
    if m is None:
        pytest.skip("no local data mirror (set SERVESIM_DATA_MIRROR or place ../shared/data)")
    return m


def pythonpath_env() -> dict:
    """Environment in which subprocesses (papermill kernels, snakemake) import this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MPLBACKEND", "Agg")
    return env
