"""Shared fixtures: the project root (for servesim.data.locate) and the data mirror."""

import os
from pathlib import Path

import pytest

from tests.data_marks import has_data

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    # A worktree without the root Snakefile cannot find its root by markers: point locate() at it.
    if not (ROOT / "Snakefile").exists():
        os.environ.setdefault("SERVESIM_ROOT", str(ROOT))


@pytest.fixture(scope="session")
def azure_mirror():
    if not has_data("azure-llm-2023/AzureLLMInferenceTrace_code.csv"):
        pytest.skip("azure-llm-2023 not fetched and no data mirror (run `snakemake fetch`)")


@pytest.fixture(scope="session")
def aegaeon_mirror():
    if not has_data("aegaeon/workloads"):
        pytest.skip("aegaeon workloads not fetched and no data mirror (run `snakemake fetch`)")
