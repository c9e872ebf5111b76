"""The Aegaeon artifact's ShareGPT pairs as read from its workload CSVs (needs the data mirror)."""

import pytest

from servesim.analysis.aegaeon_workloads import sharegpt_pairs


def test_pairs_match_the_artifacts_dataset(mirror):
    p = sharegpt_pairs(1.0, 1.0)
    assert list(p.columns) == ["input_len", "output_len"]
    assert len(p) == 8294 and not p.duplicated().any()          # the spec's count of distinct pairs
    assert p.input_len.median() == 598 and p.output_len.min() >= 16   # outputs >= 16 tokens by construction
    ox2 = sharegpt_pairs(1.0, 2.0)
    assert ox2.output_len.median() > p.output_len.median()


def test_unknown_variant_is_an_error(mirror):
    with pytest.raises(FileNotFoundError, match="3.0-3.0"):
        sharegpt_pairs(3.0, 3.0)
