"""Aegaeon App. A.2 latency model: the fit recovers known constants, the screens and Eq. 4."""

import numpy as np
import pandas as pd
import pytest

from servesim.analysis.latency_model import fit_phase, phase_table, score, screen, switch_time_s
from servesim.catalog import get_hardware, get_model


def _profiles(model="llama-2-13b", noise=0.0, seed=0):
    """A synthetic measurement table generated from Eq. 5/6 (+ batch term) with known constants."""
    h, m = get_model(model).hidden, get_model(model).ffn
    rng = np.random.default_rng(seed)
    rows = []
    for L in (16, 64, 256, 1024, 2048):
        for B in (1, 2, 4, 8, 16):
            t, t2 = L * B, L * L * B
            pre = 1e-13 * t * (4 * h * h + 2 * h * m) + 2e-12 * 3 * h * t2 / 128 + 0.02
            dec = 5e-11 * (4 * h * h + 2 * h * m) + 1e-11 * 3 * h * t + 1e-4 * B
            rows.append((t, t2, 0, 0, pre * (1 + noise * rng.standard_normal())))
            rows.append((0, 0, B, t, dec * (1 + noise * rng.standard_normal())))
    return pd.DataFrame(rows, columns=["prefill_tokens", "prefill_ctx", "decode_seqs", "decode_ctx", "step_s"])


def test_fit_recovers_constants_exactly_without_noise():
    df = _profiles()
    pre = fit_phase(phase_table(df, "prefill"), "llama-2-13b", "prefill")
    assert pre.constants == pytest.approx({"C1": 1e-13, "C2": 2e-12, "C3": 0.02}, rel=1e-6)
    dec = fit_phase(phase_table(df, "decode"), "llama-2-13b", "decode", batch_term=True)
    assert dec.constants == pytest.approx({"C4": 5e-11, "C5": 1e-11, "C6": 1e-4}, rel=1e-6)
    assert score(dec, phase_table(df, "decode")) == pytest.approx(1.0)


def test_printed_eq6_cannot_express_a_batch_term():
    df = _profiles()
    dec = fit_phase(phase_table(df, "decode"), "llama-2-13b", "decode", batch_term=False)
    assert dec.names == ("C4", "C5")
    assert score(dec, phase_table(df, "decode")) < 0.999


def test_screen_flags_impossible_decode_and_capped_prefill():
    df = _profiles()
    floor = get_model("llama-2-13b").param_bytes / get_hardware("h800").mem_bw
    df.loc[(df.decode_seqs == 2) & (df.decode_ctx == 2048), "step_s"] = floor / 10
    out = screen(df, "llama-2-13b", "h800", prefill_token_cap=4096)
    assert (out.dropped.str.startswith("decode faster")).sum() == 1
    assert set(out[out.dropped.str.startswith("prefill over")].prefill_tokens) == {8192, 16384, 32768}
    assert (screen(df, "llama-2-13b", "h800").dropped.str.startswith("prefill")).sum() == 0


def test_phase_table_and_bad_phase():
    t = phase_table(_profiles(), "prefill")
    assert list(t.columns) == ["t", "t2", "batch", "step_s"] and len(t) == 25
    with pytest.raises(ValueError, match="phase"):
        phase_table(_profiles(), "both")


def test_switch_time_eq4():
    assert switch_time_s(26e9, 32e9, 1.0) == pytest.approx(0.8125)
    assert switch_time_s(26e9, 32e9, 0.625) == pytest.approx(0.8125 * 0.625)
    with pytest.raises(ValueError):
        switch_time_s(26e9, 0, 0.625)
