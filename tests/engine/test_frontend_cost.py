"""The front end's cost fit (servesim.engine.frontend_cost.fit) on synthetic cases; the real
server's measurement is in test_vllm_real.py."""

import numpy as np
import pandas as pd
import pytest

from servesim.engine.frontend_cost import CASES, fit
from servesim.errors import InputError


def cases_with(idle, req, ptok, otok, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    rows = [{"wall_s": 10.0, "requests": 0, "prompt_tokens": 0, "output_tokens": 0}]
    for c in CASES:
        rows.append({"wall_s": c.n / c.rate, "requests": c.n, "prompt_tokens": c.n * c.prompt,
                     "output_tokens": c.n * c.output})
    df = pd.DataFrame(rows)
    cpu = idle * df.wall_s + req * df.requests + ptok * df.prompt_tokens + otok * df.output_tokens
    df["api_cpu_s"] = cpu * (1 + noise * rng.standard_normal(len(df)))
    return df


def test_the_default_cases_tell_every_cost_apart():
    costs, pred = fit(cases_with(0.01, 0.003, 2e-6, 1.6e-4))
    assert costs["idle_s_per_s"] == pytest.approx(0.01, rel=1e-6)
    assert costs["request_s"] == pytest.approx(0.003, rel=1e-6)
    assert costs["prompt_token_s"] == pytest.approx(2e-6, rel=1e-6)
    assert costs["output_token_s"] == pytest.approx(1.6e-4, rel=1e-6)


def test_noise_moves_the_costs_little_and_none_goes_negative():
    costs, _ = fit(cases_with(0.0, 0.003, 0.0, 1.6e-4, noise=0.05, seed=3))
    assert all(v >= 0 for v in costs.values())
    assert costs["output_token_s"] == pytest.approx(1.6e-4, rel=0.15)
    assert costs["request_s"] == pytest.approx(0.003, rel=0.5)


def test_too_few_or_incomplete_cases_are_named():
    with pytest.raises(InputError, match="at least 4"):
        fit(cases_with(0, 0.003, 0, 1e-4).head(3))
    with pytest.raises(InputError, match="api_cpu_s"):
        fit(cases_with(0, 0.003, 0, 1e-4).drop(columns="api_cpu_s"))
