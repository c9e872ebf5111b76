"""The Llama-3.x step-time coefficients of `MODEL_DEFAULTS` are re-derived from the profiles."""

import numpy as np
import pytest

from servesim.systems.sageserve.instance_models import (SCALED_COEFS, _relative_line,
                                                        derive_scaled_coefficients)
from servesim.systems.sageserve.strategies import MODEL_DEFAULTS

#: what the rule gives for Bloom, quoted in the MODEL_DEFAULTS comment (its own entry is 0.055 /
#: 3.5e-4 / 1.2e-6): the check that the rule lands near a model's independently quoted numbers
BLOOM_BY_RULE = {"c0": 0.044, "c_pt": 3.7e-4, "c_ds": 1.6e-6}


def _sig2(x: float) -> float:
    return float(f"{x:.2g}")


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.2-3b"])
def test_llama3_defaults_are_the_derived_coefficients(mirror, model):
    derived = derive_scaled_coefficients(model)
    table = MODEL_DEFAULTS[model]["step_time"]
    assert {k: _sig2(v) for k, v in derived.items()} == {k: table[k] for k in SCALED_COEFS}
    assert table["c_pc"] == table["c_dc"] == 0.0


def test_rule_on_bloom_gives_the_quoted_check_values(mirror):
    derived = derive_scaled_coefficients("bloom-176b")
    assert {k: _sig2(v) for k, v in derived.items()} == BLOOM_BY_RULE
    own = MODEL_DEFAULTS["bloom-176b"]["step_time"]
    assert all(0.75 < derived[k] / own[k] < 1.35 for k in SCALED_COEFS)


def test_reference_maps_to_itself_and_unknown_models_are_named(mirror):
    ref = MODEL_DEFAULTS["llama-2-70b"]["step_time"]
    assert derive_scaled_coefficients("llama-2-70b") == pytest.approx({k: ref[k] for k in SCALED_COEFS}, rel=1e-12)
    with pytest.raises(ValueError, match="qwen-7b"):
        derive_scaled_coefficients("qwen-7b")


def test_relative_line_recovers_a_line_and_weights_by_relative_error():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    assert _relative_line(x, 0.5 + 0.25 * x) == pytest.approx((0.5, 0.25))
    # one 10% outlier on a small value pulls a relative fit more than on a large value
    y = 1.0 + x
    lo, hi = y.copy(), y.copy()
    lo[0] *= 1.1
    hi[-1] *= 1.1
    assert abs(_relative_line(x, lo)[0] - 1.0) > abs(_relative_line(x, hi)[0] - 1.0)
