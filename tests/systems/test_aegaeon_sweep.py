"""Aegaeon Figs 11-13 sweeps: the sweep command on the artifact's workloads and on generated ones,
its input errors, and the analysis that reads sweeps back (goodput per system, MuxServe's rule)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from servesim.errors import EXIT_INPUT

from tests.systems.test_aegaeon_pool import needs_profiles


def _sweep(tmp_path, *args):
    from servesim.systems.aegaeon.sweep import main

    out = tmp_path / "o"
    rc = main([*args, "-o", str(out)])
    return rc, out


@needs_profiles
def test_sweep_on_artifact_workloads_writes_points_and_goodput(tmp_path):
    rc, out = _sweep(tmp_path, "--system", "aegaeon", "--rate", "0.1", "--models", "8", "10")
    assert rc == 0
    pts = pd.read_csv(out / "points.csv")
    assert list(pts.models) == [8, 10] and (pts.rate == 0.1).all()
    assert list(pts.workload) == ["aegaeon/workloads/synth-8-0.1-1.0-1.0.csv", "aegaeon/workloads/synth-10-0.1-1.0-1.0.csv"]
    assert ((pts.attainment_pct >= 0) & (pts.attainment_pct <= 100)).all() and (pts.n_requests > 0).all()
    summ = json.loads((out / "summary.json").read_text())
    assert summ["x"] == "models" and set(summ["goodput"]) == {"largest_meeting", "before_first_miss"}
    from servesim.metrics.slo import goodput_x

    assert summ["goodput"]["largest_meeting"] == pytest.approx(goodput_x(pts.models, pts.attainment_pct / 100)) or \
        np.isnan(summ["goodput"]["largest_meeting"])


@needs_profiles
def test_sweep_generated_workloads_are_seeded_and_repeat(tmp_path):
    args = ["--system", "sllm", "--models", "6", "--rate", "0.2", "0.4", "--workloads", "generated", "--repeats", "2",
            "--seed", "3"]
    rc, out = _sweep(tmp_path, *args)
    assert rc == 0
    a = pd.read_csv(out / "points.csv")
    assert len(a) == 4 and sorted(set(a.repeat)) == [0, 1] and json.loads((out / "summary.json").read_text())["x"] == "rate"
    from servesim.systems.aegaeon.sweep import main

    assert main([*args, "-o", str(tmp_path / "again")]) == 0
    b = pd.read_csv(tmp_path / "again" / "points.csv")
    pd.testing.assert_frame_equal(a.drop(columns="wall_s"), b.drop(columns="wall_s"))  # same seed, same points
    assert a.workload.str.contains("seed=3").any() and a.workload.str.contains("seed=4").any()


@needs_profiles
def test_an_artifact_file_shorter_than_its_sweep_is_drawn_anew_or_kept_or_refused(tmp_path):
    from servesim.systems.aegaeon.sweep import main

    base = ["--system", "sllm", "--rate", "0.1", "--models", "36", "40", "--duration-s", "120"]
    assert main([*base, "-o", str(tmp_path / "gen")]) == 0
    pts = pd.read_csv(tmp_path / "gen" / "points.csv").set_index("models")
    assert pts.workload_kind[36] == "artifact" and pts.workload_kind[40] == "generated-for-short-file"
    assert "synth-40-0.1-1.0-1.0.csv spans 60 s" in pts.workload[40] and "duration=120" in pts.workload[40]
    assert json.loads((tmp_path / "gen" / "summary.json").read_text())["n_points_generated_for_short_file"] == 1
    assert main([*base, "--short-file", "keep", "-o", str(tmp_path / "keep")]) == 0
    assert (pd.read_csv(tmp_path / "keep" / "points.csv").workload_kind == "artifact").all()
    assert main([*base, "--short-file", "error", "-o", str(tmp_path / "err")]) == EXIT_INPUT
    # the 40-model rate sweep's own files are 60 s long: nothing is replaced there
    assert main(["--system", "sllm", "--models", "40", "--rate", "0.05", "0.1", "--duration-s", "60",
                 "-o", str(tmp_path / "m40")]) == 0
    assert (pd.read_csv(tmp_path / "m40" / "points.csv").workload_kind == "artifact").all()


@pytest.mark.parametrize("args, msg", [
    (["--models", "16", "20", "--rate", "0.1", "0.5"], "only one of them"),
    (["--models", "0", "--rate", "0.1"], "--models"),
    (["--models", "16", "--rate", "-0.1"], "--rate"),
    (["--models", "16", "--rate", "0.1", "--slo-scale", "0"], "--slo-scale"),
    (["--models", "16", "--rate", "0.1", "--repeats", "2"], "--repeats"),
    (["--models", "17", "--rate", "0.1"], "no artifact workload for 17 models"),
    (["--models", "16", "--rate", "0.1", "--set", "nope=1"], "unknown setting"),
    (["--models", "16", "--rate", "0.1", "--duration-s", "0"], "--duration-s"),
    (["--models", "16", "--rate", "0.1", "--set", "group_rule=fifo"], "group_rule"),
])
def test_sweep_input_errors_are_one_line(tmp_path, capsys, args, msg):
    rc, out = _sweep(tmp_path, "--system", "aegaeon", *args)
    assert rc == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]
    assert not (out / "points.csv").exists()


def test_analysis_goodput_muxserve_and_readings():
    from servesim.analysis import aegaeon_sweeps as sw

    cur = pd.DataFrame({"panel": "a", "x_name": "models", "system": "aegaeon", "x": [16.0, 24.0, 32.0, 40.0],
                        "attainment_pct": [100.0, 85.0, 95.0, 50.0], "attainment_token_pct": 100.0,
                        "n_failed": 0, "n_requests": 10})
    cur = pd.concat([cur, cur.assign(system="sllm", attainment_pct=[80.0, 70.0, 60.0, 50.0])], ignore_index=True)
    cur = sw.with_muxserve(cur, ["panel", "x_name"])
    mux = cur[cur.system == "muxserve"].set_index("x").attainment_pct
    assert mux[32.0] == 100.0 and np.isnan(mux[40.0])
    gp = sw.goodput(cur, ["panel"]).set_index("system")
    assert gp.loc["aegaeon", "goodput"] == 32 and gp.loc["muxserve", "goodput"] == 32
    assert gp.loc["sllm", "goodput"] == 0 and gp.loc["sllm", "below_grid"]
    first = sw.goodput(cur, ["panel"], "before_first_miss").set_index("system")
    assert first.loc["aegaeon", "goodput"] == 16
    m = sw.metrics_by_reading(cur, ["panel"], "largest_meeting",
                              lambda g: {"r": sw.ratio(g.set_index("system").goodput["aegaeon"], 16)})
    assert m == {"goodput_reading": "largest_meeting", "r": 2.0, "r__before_first_miss": 1.0}
    assert np.isnan(sw.ratio(3, 0))


@needs_profiles
def test_a_goodput_the_grid_censors_makes_its_metrics_bounds():
    """A system still meeting the line at the sweep's last load has a goodput of at least that load:
    every metric computed from it is marked a bound (``<key>__bound``), in the direction it moves,
    per reading and per seed; MuxServe's rule (no placement beyond 32) is not censored."""
    from servesim.analysis import aegaeon_sweeps as sw

    def pts(a_last: float, repeat: int = 0) -> pd.DataFrame:
        a = pd.DataFrame({"panel": "a", "x_name": "models", "system": "aegaeon", "x": [16.0, 32.0, 48.0],
                          "attainment_pct": [100.0, 95.0, a_last], "attainment_token_pct": 100.0,
                          "n_failed": 0, "n_requests": 10, "repeat": repeat})
        return pd.concat([a, a.assign(system="sllm", attainment_pct=[95.0, 60.0, 40.0])], ignore_index=True)

    def of(gp):
        G = gp.set_index("system").goodput
        return {"ratio": sw.ratio(G["aegaeon"], G["sllm"]), "inverse": sw.ratio(G["sllm"], G["aegaeon"]),
                "sllm": float(G["sllm"]), "mux": float(G["muxserve"]), "both": G["aegaeon"] - G["aegaeon"]}

    m = sw.metrics_by_reading(sw.curves(pts(92.0), ["panel"]), ["panel"], "largest_meeting", of)
    assert m["ratio"] == 3.0 and m["ratio__bound"] == "lower" and m["inverse__bound"] == "upper"
    assert "sllm__bound" not in m and "mux__bound" not in m and m["mux"] == 32
    assert m["ratio__before_first_miss__bound"] == "lower"
    m = sw.metrics_by_reading(sw.curves(pts(50.0), ["panel"]), ["panel"], "largest_meeting", of)
    assert m["ratio"] == 2.0 and not any(k.endswith("__bound") for k in m)   # measured: Aegaeon misses at 48
    seeds = pd.concat([pts(92.0, 0), pts(50.0, 1)], ignore_index=True)
    s = sw.seed_metrics(seeds, ["panel"], "largest_meeting", of)
    assert (s["ratio__seed_min"], s["ratio__seed_max"]) == (2.0, 3.0)
    assert s["ratio__seed_mean__bound"] == s["ratio__seed_max__bound"] == "lower"   # one seed censored
    assert "sllm__seed_mean__bound" not in s


def test_a_censored_goodput_line_is_drawn_as_a_bound():
    """The attainment panel marks a goodput the sweep's end censors ("≥" at its vertical line) and
    only that one."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from servesim.analysis import aegaeon_sweeps as sw

    cur = pd.DataFrame({"panel": "a", "x_name": "rate", "system": "aegaeon", "x": [0.1, 0.2, 0.3],
                        "attainment_pct": [100.0, 99.0, 95.0], "attainment_token_pct": 100.0,
                        "n_failed": 0, "n_requests": 10})
    cur = pd.concat([cur, cur.assign(system="sllm", attainment_pct=[95.0, 60.0, 40.0])], ignore_index=True)
    gp = sw.goodput(cur, ["panel"])
    fig, ax = plt.subplots()
    sw.plot(ax, cur, gp, systems=("aegaeon", "sllm"))
    marks = [t for t in ax.texts if t.get_text() == "≥"]
    assert len(marks) == 1 and marks[0].xy[0] == 0.3   # Aegaeon's, at the grid's last load; not SLLM's 0.1
    plt.close(fig)
