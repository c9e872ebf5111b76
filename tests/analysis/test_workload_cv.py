import numpy as np
import pytest

from servesim.analysis.workload_cv import (LevelsError, load_oserve_levels, population_cv, spatial_cv,
                                           spatial_cv_table, temporal_cv, temporal_cv_table)


def test_population_cv_of_known_vectors():
    # [1, 3]: mean 2, population std 1 -> 0.5 (the sample std would give 0.707).
    assert population_cv([1, 3]) == pytest.approx(0.5)
    assert spatial_cv([25, 25, 25, 25]) == 0.0
    # Scale-free: percentages and fractions give the same CV.
    assert spatial_cv([10, 20, 30, 40]) == pytest.approx(spatial_cv([0.1, 0.2, 0.3, 0.4]))
    assert spatial_cv([10, 20, 30, 40]) == pytest.approx(np.sqrt(125) / 25)
    with pytest.raises(ValueError):
        population_cv([0, 0])


def test_temporal_cv_averages_per_type_cvs():
    # Type A: [1, 3] -> 0.5; type B: [2, 2] -> 0: mean 0.25.
    assert temporal_cv([[1, 2], [3, 2]]) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        temporal_cv([[1, 2, 3]])


def test_packaged_levels_reproduce_the_stated_cvs_to_three_decimals():
    levels = load_oserve_levels()
    s = spatial_cv_table(levels)
    assert list(s["level"]) == ["S1", "S2", "S3", "S4", "S5"]
    np.testing.assert_allclose(s["cv"], s["paper_cv"], atol=5e-4)
    t = temporal_cv_table(levels)
    assert list(t["trace"]) == ["S1\u2192S2\u2192S1", "S1\u2192S3\u2192S2", "S2\u2192S4\u2192S3", "S1\u2192S4\u2192S5"]
    np.testing.assert_allclose(t["cv"], t["paper_cv"], atol=5e-4)


def test_bad_levels_files_name_the_key(tmp_path):
    p = tmp_path / "levels.yaml"
    p.write_text("types: [A, B]\nspatial:\n  S1: {proportions_pct: [50, 40]}\ntemporal: {}\n")
    with pytest.raises(LevelsError, match=r"levels.yaml: spatial.S1.proportions_pct must be >= 0 and sum to 100"):
        load_oserve_levels(p)
    p.write_text("types: [A, B]\nspatial:\n  S1: {proportions_pct: [50, 50]}\ntemporal:\n  T1: {spans: [S1, S9]}\n")
    with pytest.raises(LevelsError, match=r"temporal.T1.spans"):
        load_oserve_levels(p)
    p.write_text("types: [A, B]\nspatial: {}\n")
    with pytest.raises(LevelsError, match="missing key 'temporal'"):
        load_oserve_levels(p)
