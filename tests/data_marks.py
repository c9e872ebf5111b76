"""Skip marks for tests that read a dataset from the local mirror (tests never download), and the
small Aegaeon market workload the pool tests share."""

from __future__ import annotations

import pytest


def has_data(key: str) -> bool:
    """Whether dataset file/folder ``key`` (as `servesim.data.locate` names it) is fetched or mirrored."""
    from servesim.data import DataError, locate

    try:
        locate(key)
        return True
    except DataError:
        return False


def needs_data(key: str, what: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not has_data(key), reason=f"{what} not fetched / no mirror")


needs_aegaeon_profiles = needs_data("aegaeon/profiles/qwen2_5_7b/H800", "aegaeon profiles")
needs_aegaeon_workloads = needs_data("aegaeon/workloads", "aegaeon workloads")
needs_azure_code = needs_data("azure-llm-2023/AzureLLMInferenceTrace_code.csv", "azure-llm-2023 code trace")
needs_a40_profile = needs_data("vidur-profiling/compute/a40", "vidur A40 profiles")
needs_sageserve_perf = needs_data("sageserve/perf_model.csv", "sageserve perf model")


def aegaeon_market(n_models: int, rate: float, duration: float = 30.0, seed: int = 3):
    """The artifact's market arrival rule over a five-pair length pool (short to long prompts/outputs)."""
    import pandas as pd

    from servesim.workload.gen_aegaeon import market

    pool = pd.DataFrame({"prompt_tokens": [50, 300, 700, 1500, 2500], "output_tokens": [20, 120, 300, 500, 80]})
    return market(n_models, rate, duration, seed, lengths=pool)
