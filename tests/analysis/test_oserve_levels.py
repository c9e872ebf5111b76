"""Tables 1-2's readers: a named reading's level runs pair with the level run's own vLLM static,
and never leak into the default's numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from servesim.analysis import oserve_online as OO


@pytest.fixture
def levels(tmp_path: Path, monkeypatch):
    """Level runs on disk: S1 and S2 with OServe and static; S1's `uniform` reading (OServe only)."""
    runs = {
        "levels/spatial-S1": {"oserve": 2.0, "static": 4.0},
        "levels/spatial-S2": {"oserve": 5.0, "static": 5.0},
        "levels/spatial-S1-uniform": {"oserve": 1.0},
    }
    for name, p99 in runs.items():
        d = tmp_path / name
        d.mkdir(parents=True)
        level = name.split("-")[1]
        (d / "summary.json").write_text(json.dumps({"model": "m", "gpus": 16, "name": level, "kind": "spatial"}))
        pd.DataFrame({"system": list(p99), "e2e_p99_s": list(p99.values())}).to_csv(d / "systems.csv", index=False)
    monkeypatch.setattr(OO.runs_api, "declared", lambda paper, scale, root: {n: SimpleNamespace(name=n) for n in runs})
    monkeypatch.setattr(OO.runs_api, "run_dir", lambda paper, name, scale, root: tmp_path / name)
    return tmp_path


def test_the_default_reads_only_the_level_runs(levels):
    sysdf, m = OO.level_speedups("spatial", ["S1", "S2", "S3"], "full")
    assert m["speedup_s1"] == 2.0 and m["speedup_s2"] == 1.0 and math.isnan(m["speedup_s3"])
    assert set(sysdf.run) == {"levels/spatial-S1", "levels/spatial-S2"}  # not the reading's run


def test_a_reading_pairs_with_the_level_runs_static(levels):
    _, m = OO.level_speedups("spatial", ["S1", "S2"], "full", reading="uniform")
    assert m == {"uniform_speedup_s1": 4.0, "uniform_speedup_s2": pytest.approx(float("nan"), nan_ok=True)}


def test_level_metrics_holds_the_default_the_null_and_every_reading(levels):
    sysdf, m = OO.level_metrics("spatial", ["S1", "S2"], "full", null="static")
    assert m["speedup_s1"] == 2.0 and m["speedup_s1_static"] == 1.0 and m["uniform_speedup_s1"] == 4.0
    assert all(math.isnan(m[f"{rd}_speedup_s1"]) for rd in ("balanced", "xnode"))  # not run: NaN, not absent
    assert sorted(sysdf.system) == ["oserve", "oserve", "oserve_uniform", "static", "static"]
