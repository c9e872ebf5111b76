"""A five-request result table whose metrics are worked out by hand in the tests."""

import numpy as np
import pandas as pd

NAN = np.nan


def table() -> pd.DataFrame:
    """r0-r3 finished, r4 rejected. TTFT 1, .5, 2, .5; E2E 3, 1.5, 4, 7; TPOT .5, .5, -, 6.5;
    deadlines: r0 (IW-F, first token 1.0 <= 1.0) and r1 met; r2 (IW-N) late; r3 is NIW, so its
    completion (10 > 9) counts, not its first token; r4 never ran."""
    arrival = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    first = np.array([1.0, 1.5, 4.0, 3.5, NAN])
    finish = np.array([3.0, 2.5, 6.0, 10.0, NAN])
    out = np.array([5, 3, 1, 2, 4])
    df = pd.DataFrame({
        "request_id": np.arange(5, dtype=np.int64),
        "tier": pd.array(["IW-F", "IW-F", "IW-N", "NIW", "IW-F"], dtype="string"),
        "state": pd.array(["finished"] * 4 + ["rejected"], dtype="string"),
        "arrival_s": arrival,
        "scheduled_s": np.array([0.25, 1.25, 3.0, 3.5, NAN]),
        "first_token_s": first,
        "finish_s": finish,
        "ttft_s": first - arrival,
        "e2e_s": finish - arrival,
        "tbt_mean_s": np.array([0.5, 0.5, NAN, 6.5, NAN]),
        "prompt_tokens": np.array([10, 20, 30, 40, 50], dtype=np.int64),
        "output_tokens": out.astype(np.int64),
        "deadline_s": np.array([1.0, 2.0, 3.0, 9.0, 5.0]),
        "partial": np.zeros(5, dtype=bool),
    })
    return df


def tokens() -> pd.DataFrame:
    """Every token of the finished requests, evenly spaced at their TPOT."""
    rows = [(0, [1.0, 1.5, 2.0, 2.5, 3.0]), (1, [1.5, 2.0, 2.5]), (2, [4.0]), (3, [3.5, 10.0])]
    return pd.DataFrame({"request_id": [r for r, t in rows for _ in t],
                         "time_s": [x for _, t in rows for x in t]})
