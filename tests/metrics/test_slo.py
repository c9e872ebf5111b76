import numpy as np
import pandas as pd
import pytest

from servesim.metrics import SLO, summarize
from servesim.metrics.slo import tokens_on_time_recorded, tokens_on_time_uniform

from .hand import table, tokens


def test_deadline_attainment_by_hand():
    s = summarize(table())
    a = s["all"]
    assert (a["with_deadline"], a["deadline_met"], a["deadline_attainment"]) == (5, 2, 0.4)
    t = s["by_tier"]
    assert t["IW-F"]["deadline_attainment"] == pytest.approx(2 / 3)
    assert t["IW-N"]["deadline_attainment"] == 0.0
    assert t["NIW"]["deadline_attainment"] == 0.0    # first token 3.5 <= 9, but completion 10 > 9


def test_per_request_slo_attainment_and_goodput():
    a = summarize(table(), slo=SLO(ttft_s=1.0))["all"]
    assert a["slo_attainment"] == 0.6                 # r0 (1.0 <= 1.0), r1, r3; r4 never ran
    assert a["request_goodput_per_s"] == 0.3          # 3 good requests over 10 s
    assert summarize(table(), slo=SLO(ttft_s=1.0, tpot_s=0.5))["all"]["slo_attainment"] == 0.4
    # a one-token request has TPOT 0 for the bound (vLLM's goodput)
    assert summarize(table(), slo=SLO(tpot_s=0.5))["all"]["slo_attainment"] == 0.6
    assert summarize(table(), slo=SLO(e2el_per_token_s=0.6))["all"]["slo_attainment"] == 0.4
    assert summarize(table(), slo=SLO(e2el_s=4.0))["all"]["slo_attainment"] == 0.6
    assert summarize(table())["all"]["slo_attainment"] is None


def test_per_token_slo_attainment_by_hand():
    # buffered deadlines arrival + 1 + 0.5 k: r0 5/5, r1 3/3, r2 0/1 (first token 1 s late),
    # r3 1/2 (its second token 6.5 s after the first), r4 0/4
    slo = SLO(ttft_s=1.0, tpot_s=0.5)
    uniform = summarize(table(), slo=slo)
    assert uniform["token_times"] == "uniform" and uniform["all"]["token_slo_attainment"] == 9 / 15
    recorded = summarize(table(), slo=slo, tokens=tokens())
    assert recorded["token_times"] == "recorded" and recorded["all"]["token_slo_attainment"] == 9 / 15
    assert summarize(table(), slo=SLO(ttft_s=1.0))["all"]["token_slo_attainment"] is None


def test_tokens_on_time_uniform_cases():
    # late first token caught up: a = 2 - 1 = 1, b = 0.5 - 0.25: tokens k >= 4 are on time
    n = tokens_on_time_uniform(np.array([2.0, 0.5, 0.5, np.nan]), np.array([0.25, 1.0, 0.5, np.nan]),
                               np.array([10, 4, 3, 5]), 1.0, 0.5)
    # r1: early first token, falling behind: k <= 0.5 / 0.5 -> k = 0, 1; r2: exactly on pace; r3: none
    assert n.tolist() == [6, 2, 3, 0]
    times = pd.DataFrame({"request_id": [7] * 10, "time_s": 2.0 + 0.25 * np.arange(10)})
    assert tokens_on_time_recorded(times, np.array([7]), np.array([0.0]), 1.0, 0.5).tolist() == [6]


def test_slo_rejects_bad_bounds():
    with pytest.raises(ValueError, match="ttft_s"):
        SLO(ttft_s=-1.0)
    with pytest.raises(ValueError, match="at least one"):
        SLO()
