"""Fixtures shared by the systems' tests."""

import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def oserve_tiny_trace(monkeypatch, tmp_path):
    """OServe's online CLI on a hand-sized trace: a 400-request type pool (4 types), a flat base
    rate, OPT-30B on 4 GPUs, T1 every 16th minute, the oracle λ (no LSTM to train); returns the common
    arguments (add -o, --systems)."""
    from servesim.workload import gen_oserve as G

    rng = np.random.default_rng(1)
    pool = pd.DataFrame({"prompt_tokens": rng.integers(50, 800, 400), "output_tokens": rng.integers(2, 300, 400),
                         "type": np.repeat(np.arange(4), 100)})
    monkeypatch.setattr(G, "type_pool", lambda *a, **k: pool)
    monkeypatch.setattr(G, "_base_rate", lambda minutes, lead_in=0: np.ones(minutes + lead_in))
    return ["--model", "opt-30b", "--gpus", "4", "--name", "T1", "--minute-stride", "16", "--search", "exhaustive",
            "--n-requests", "60", "--cache-dir", str(tmp_path / "c"), "--predictor", "oracle"]
