"""docs/timings.md is generated (servesim.analysis.timings): its records, their errors, and which
claims each benchmarked job feeds."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from servesim.analysis import timings


def _load_script(project_root, name):
    spec = importlib.util.spec_from_file_location(name, project_root / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bad_records_name_their_file_and_line(tmp_path):
    f = tmp_path / "r.jsonl"
    good = {"date": "2026-01-01", "commit": "a" * 40, "commands": [{"command": "x", "wall_s": 1.0}]}
    for bad, msg in (("{not json", ":2: not JSON"), (json.dumps({"date": "d"}), ":2: a record needs"),
                     (json.dumps({**good, "commands": [{"command": "x"}]}), ":2: commands must be")):
        f.write_text(json.dumps(good) + "\n" + bad + "\n")
        with pytest.raises(timings.TimingsError, match=msg):
            timings.read_records(f)


def test_records_newest_first(tmp_path):
    f = tmp_path / "r.jsonl"
    recs = [{"date": d, "commit": c * 40, "commands": []} for d, c in (("2026-01-02", "a"), ("2026-01-01", "b"),
                                                                       ("2026-01-02", "c"))]
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert [r["commit"][0] for r in timings.read_records(f)] == ["c", "a", "b"]


def test_jobs_feed_the_claims_of_the_figures_that_read_them(project_root):
    feeds = timings.job_claims(project_root, "full")
    # a figure: the claims on its metrics; a run: those of every figure reading it, also through
    # a run that collects it (Fig 9's routing sweeps replay Table 2's predicted lengths)
    assert "preserve-27a-preserve-mae" in feeds["preserve/tab02_length_prediction"]
    assert "preserve-27a-preserve-mae" in feeds["preserve/tab02"]
    assert "preserve-35a-ttft-reduction-71p1" in feeds["preserve/tab02"]
    assert "preserve-35a-ttft-reduction-71p1" in feeds["preserve/fig09/7b/lr"]
    assert "preserve-27a-preserve-mae" not in feeds["preserve/fig09/7b/lr"]
    # quick scale leaves out the claims judged at paper scale only
    quick = timings.job_claims(project_root, "quick")
    assert "preserve-35b-lr-ttft-7p6" in feeds["preserve/tab02"] and "preserve-35b-lr-ttft-7p6" not in quick["preserve/tab02"]


def test_page_is_current_with_its_records(project_root):
    """The records' sections of docs/timings.md are what `servesim timings` renders from them (the
    per-job section depends on the machine's last quick run, so it is not compared)."""
    page = (project_root / "docs" / "timings.md").read_text()
    cut = "## Where the quick target's time goes"
    want = timings.render(project_root, "quick").split(cut)[0]
    assert page.split(cut)[0] == want, "docs/timings.md is stale: run `servesim timings --md docs/timings.md`"


def test_fresh_clone_reads_the_readme_commands_and_pytest_counts(project_root):
    fc = _load_script(project_root, "fresh_clone")
    cmds = fc.quickstart_commands(project_root)
    assert len(cmds) == 2 and "pytest" in cmds[1]
    line = "==== 1 failed, 1656 passed, 86 skipped, 6 warnings in 606.65s (0:10:06) ===="
    assert fc.pytest_counts("noise\n" + line) == {"passed": 1656, "skipped": 86, "failed": 1, "wall_s": 606.65}


def test_recorded_results_render_nested_and_per_configuration_lines():
    nested = {"benchmark": "b", "results": {"rr": {"10": 0.3}}, "skipped": {}, "flag": True}
    assert timings._result_text(nested) == "benchmark b, results.rr.10 0.3"
    lines = {"lines": [{"size": "4x3x1", "solve_s": 0.0038}, {"size": "20x20x5", "solve_s": 33.0}]}
    assert timings._result_text(lines) == "size 4x3x1, solve_s 0.0038 / size 20x20x5, solve_s 33"
    assert timings._result_text({"measured": "typed by an earlier session"}) == "typed by an earlier session"


def test_fresh_clone_cold_points_every_user_cache_beside_the_clone(project_root, tmp_path, monkeypatch):
    """--cold: every per-user cache a run fills starts empty in DEST.cold-cache (none inside the
    clone, so its git status stays clean), the OServe capacity cache included (it follows
    XDG_CACHE_HOME unless SERVESIM_OSERVE_CACHE names it, which the cold run drops)."""
    fc = _load_script(project_root, "fresh_clone")
    monkeypatch.setenv("SERVESIM_OSERVE_CACHE", "/somewhere/warm")
    monkeypatch.setenv("SERVESIM_FORECAST_CACHE", "/somewhere/warm")
    dest = tmp_path / "clone"
    env = fc.cold_env(dest)
    root = tmp_path / "clone.cold-cache"
    assert "SERVESIM_OSERVE_CACHE" not in env and "SERVESIM_FORECAST_CACHE" not in env
    assert set(fc.COLD_ENV) <= set(env) and all(env[k].startswith(str(root)) for k in fc.COLD_ENV)
    root.mkdir()
    with pytest.raises(SystemExit, match="cold-cache: exists"):
        fc.cold_env(dest)


def test_fresh_clone_refuses_a_place_without_the_data_mirror(project_root, tmp_path, monkeypatch):
    """A clone that would not find the mirror this checkout finds would measure downloads (or fail offline)."""
    fc = _load_script(project_root, "fresh_clone")
    monkeypatch.delenv("SERVESIM_DATA_MIRROR", raising=False)
    checkout = tmp_path / "work" / "repo"
    (tmp_path / "work" / "shared" / "data").mkdir(parents=True)
    checkout.mkdir(parents=True)
    fc.check_mirror(tmp_path / "work" / "clone", checkout)  # ../shared/data resolves for both
    with pytest.raises(SystemExit, match="no data mirror"):
        fc.check_mirror(tmp_path / "elsewhere" / "deeper" / "clone", checkout)
    monkeypatch.setenv("SERVESIM_DATA_MIRROR", str(tmp_path / "work" / "shared" / "data"))
    fc.check_mirror(tmp_path / "elsewhere" / "deeper" / "clone", checkout)


@pytest.mark.parametrize("module, var, name", [("servesim.systems.oserve.profiler", "SERVESIM_OSERVE_CACHE", "oserve_capacity"),
                                              ("servesim.forecast.cache", "SERVESIM_FORECAST_CACHE", "forecasts")])
def test_servesim_caches_follow_xdg_cache_home(tmp_path, module, var, name):
    import subprocess
    import sys
    code = f"from {module} import DEFAULT_CACHE; print(DEFAULT_CACHE)"
    env = {k: v for k, v in os.environ.items() if k != var}
    out = subprocess.run([sys.executable, "-c", code], env={**env, "XDG_CACHE_HOME": str(tmp_path)},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(tmp_path / "servesim" / name)


def test_fresh_clone_reads_the_schedulers_cpu_from_the_runs_last_lines(project_root, tmp_path):
    """The line the workflow prints at its end (slowest_summary) is the one fresh_clone.py parses."""
    from servesim.analysis.benchmarks import slowest_summary

    fc = _load_script(project_root, "fresh_clone")
    bench = tmp_path / "results" / "quick" / "benchmarks" / "a.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\n3.0\t0:00:03\n")
    log = "...\n" + slowest_summary(tmp_path / "results", scheduler=(123.4, 900.0)) + "\n"
    assert fc.scheduler_cpu_s(log) == 123.0 and fc.quick_target_wall_s(log) == 900.0
    assert fc.scheduler_cpu_s("no such line") is None and fc.quick_target_wall_s("no such line") is None


def test_write_page_writes_what_render_renders(project_root, tmp_path):
    """The writers of records (benchmarks/record.py, fresh_clone.py) rewrite the page through
    write_page after appending, so it never lags them (a stale page once failed a fresh clone)."""
    md = timings.write_page(project_root, tmp_path / "t.md")
    assert md == tmp_path / "t.md" and md.read_text() == timings.render(project_root, "quick")
    for script in ("record", "fresh_clone"):
        assert "write_page(ROOT)" in (project_root / "benchmarks" / f"{script}.py").read_text()


def test_a_record_names_no_scratch_path_of_the_machine_that_ran_it(project_root, tmp_path):
    """benchmarks/record.py keeps a script's arguments, but an absolute path outside the checkout
    (a clone or work folder on that machine) becomes a placeholder named after its option."""
    rec = _load_script(project_root, "record")
    argv = ["benchmarks/paper_quick.py", "oserve", str(tmp_path / "clone"), "--bound-s", "240",
            "--work", str(tmp_path / "w"), "--frontend", str(project_root / "benchmarks" / "records" / "x.json")]
    assert rec.portable(argv) == ["benchmarks/paper_quick.py", "oserve", "DEST", "--bound-s", "240", "--work", "WORK",
                                  "--frontend", str(project_root / "benchmarks" / "records" / "x.json")]
