"""The Aegaeon artifact's ShareGPT request lengths (``aegaeon/workloads/synth-{M}-{rps}-{in}-{out}.csv``).

Each file is one generated workload (columns ``Request Time, Model Name, Input Length, Output
Length``; lengths already tokenized). ``in``/``out`` are the length scales of the ShareGPT-ix2 /
-ox2 variants (2.0) or the plain dataset (1.0). The distinct (input, output) pairs over all files of
one variant are the dataset's pairs as the artifact sampled them.
"""

from __future__ import annotations

import pandas as pd

COLUMNS = ("Request Time", "Model Name", "Input Length", "Output Length")


def sharegpt_pairs(in_scale: float = 1.0, out_scale: float = 1.0) -> pd.DataFrame:
    """Distinct (input_len, output_len) pairs over the artifact's workloads of one length variant."""
    from ..data import locate

    d = locate("aegaeon/workloads")
    files = sorted(d.glob(f"synth-*-*-{in_scale:.1f}-{out_scale:.1f}.csv"))
    if not files:
        raise FileNotFoundError(f"{d}: no synth-*-*-{in_scale:.1f}-{out_scale:.1f}.csv workloads")
    frames = []
    for f in files:
        df = pd.read_csv(f)
        missing = [c for c in COLUMNS if c not in df.columns]
        if missing:
            raise ValueError(f"{f}: missing column(s) {missing}")
        frames.append(df[["Input Length", "Output Length"]])
    pairs = pd.concat(frames).drop_duplicates().rename(columns={"Input Length": "input_len", "Output Length": "output_len"})
    return pairs.sort_values(["input_len", "output_len"]).reset_index(drop=True)
