"""One error path for every command: input errors print one line naming the file / option and exit
with status 2 (before any work); --debug shows the exception; outputs are complete or marked."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from servesim.cli import main
from tests.foundation.cli_checks import input_error as _input_error
from servesim.errors import EXIT_INPUT
from servesim.output_dir import FAILED_MARKER, MARKER, staged_output_dir

EX = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def _scenario(tmp_path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def test_simulate_input_errors(tmp_path, capsys):
    out = tmp_path / "out"
    _input_error(capsys, ["simulate", str(tmp_path / "missing.yaml"), "-o", str(out)], "missing.yaml")
    dup = _scenario(tmp_path, (EX / "one_region.yaml").read_text() + "seed: 2\n")
    _input_error(capsys, ["simulate", str(dup), "-o", str(out)], "s.yaml", "duplicate key 'seed'")
    # a sampler that would allocate without bound: refused before the run
    tiny = (EX / "one_region.yaml").read_text().replace("output: {sample_s: 10s}", "output: {sample_s: 1.0e-6}")
    _input_error(capsys, ["simulate", str(_scenario(tmp_path, tiny)), "-o", str(out)], "output.sample_s")
    # a workload file with an infinite arrival: named with its row
    wl = tmp_path / "w.parquet"
    pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, np.inf], "prompt_tokens": [5, 5], "output_tokens": [1, 1],
                  "model": "llama-2-7b", "region": "westus", "tier": "IW-F", "app": "a",
                  "deadline_s": np.nan}).to_parquet(wl)
    text = (EX / "one_region.yaml").read_text()
    start, end = text.index("workload:"), text.index("regions:")
    fromfile = text[:start] + f"workload: {{file: {wl}}}\n" + text[end:]
    _input_error(capsys, ["simulate", str(_scenario(tmp_path, fromfile)), "-o", str(out)], "w.parquet", "row 1",
                 "arrival_s=inf")
    assert not out.exists()  # nothing written for an input error
    # -o naming a file, and a foreign non-empty folder: before the run
    f = tmp_path / "file"
    f.write_text("x")
    _input_error(capsys, ["simulate", str(EX / "one_region.yaml"), "-o", str(f)], "is a file")
    (out / "keep").mkdir(parents=True)
    _input_error(capsys, ["simulate", str(EX / "one_region.yaml"), "-o", str(out)], "not empty", "--force")


def test_debug_shows_the_exception(tmp_path):
    from servesim.fleet.scenario import ScenarioError

    with pytest.raises(ScenarioError):
        main(["simulate", str(_scenario(tmp_path, "name: a\nname: b\n")), "-o", str(tmp_path / "o"), "--debug"])


@pytest.mark.parametrize("opts,needle", [
    (["--max-instances", "0"], "--max-instances 0"),
    (["--models", "gpt-9"], "--models: unknown ['gpt-9']"),
    (["--regions", "mars"], "--regions: unknown ['mars']"),
    (["--window-h", "38", "36"], "--window-h 38 36"),
    (["--volume-scale", "nan"], "--volume-scale nan"),
])
def test_sageserve_run_options_checked_before_work(tmp_path, capsys, opts, needle):
    window = ["--models", "llama-2-70b", "--regions", "eastus", "--window-h", "36", "37", "--days", "2",
              "--volume-scale", "0.1"]  # a valid tiny window; `opts` (given after it) override one option
    _input_error(capsys, ["sageserve-run", "--strategy", "lt_i", *window, *opts, "-o", str(tmp_path / "o")],
                 needle)
    assert not (tmp_path / "o").exists()


def test_workload_commands(tmp_path, capsys):
    out = tmp_path / "w.parquet"
    _input_error(capsys, ["workload", "generate", "nope", "-o", str(out)], "unknown generator 'nope'")
    _input_error(capsys, ["workload", "generate", "oserve", "--scale", "-1", "-o", str(out)], "--scale")
    _input_error(capsys, ["workload", "generate", "oserve", "--options", "{a: 1, a: 2}", "-o", str(out)],
                 "duplicate key 'a'")
    _input_error(capsys, ["workload", "generate", "oserve", "--options", "{no_such_option: 1}", "-o", str(out)],
                 "unknown option(s) ['no_such_option']")
    _input_error(capsys, ["workload", "generate", "sageserve_week", "--options", "{bursts: maybe}", "-o", str(out)],
                 "bursts='maybe': expected a boolean")  # not coerced to True
    _input_error(capsys, ["workload", "generate", "oserve", "-o", str(tmp_path)], "is a folder")
    bad = tmp_path / "t.csv"
    bad.write_text('Request Time,Model Name,Input Length,Output Length\n00:00:01,m,5,1\n"unclosed,m,5,1\n')
    _input_error(capsys, ["workload", "convert", "aegaeon", str(bad), "-o", str(out)], "t.csv")
    assert not out.exists()


def test_calibrate_and_replay_inputs(tmp_path, capsys):
    _input_error(capsys, ["calibrate", str(tmp_path / "m.csv"), "-o", str(tmp_path / "m.yaml")], "m.csv")
    _input_error(capsys, ["calibrate", str(tmp_path / "m.csv"), "-o", str(tmp_path / "m.yaml"), "--test-frac", "2"],
                 "--test-frac")
    wl = tmp_path / "w.parquet"
    from servesim.workload.schema import make, write

    write(make(np.array([0.0, 1.0]), [100, 3000], [10, 10]), wl)
    url = ["--url", "http://127.0.0.1:9"]  # never contacted: the checks come first
    _input_error(capsys, ["replay", *url, "--workload", str(wl), "-o", str(tmp_path / "r"), "--max-num-seqs", "0"],
                 "--max-num-seqs 0")
    _input_error(capsys, ["replay", *url, "--workload", str(wl), "-o", str(tmp_path / "r")],
                 "w.parquet", "row 1", "--max-model-len 2048")
    corrupt = tmp_path / "c.parquet"
    corrupt.write_bytes(b"PAR1 not really")
    _input_error(capsys, ["replay", *url, "--workload", str(corrupt), "-o", str(tmp_path / "r")], "c.parquet")
    ok = tmp_path / "ok.parquet"
    write(make(np.array([0.0]), [100], [10]), ok)
    _input_error(capsys, ["replay", *url, "--workload", str(ok), "-o", str(tmp_path / "r"), "--clock", "engine"],
                 "--clock engine", "only with --in-process")
    (tmp_path / "m").mkdir()  # never loaded: the clock is checked first
    model = ["--model", str(tmp_path / "m"), "--in-process", "--workload", str(ok), "-o", str(tmp_path / "r")]
    _input_error(capsys, ["replay", *model, "--clock", "engine"], "--clock engine", "pinned to one core", "--cpus last")
    _input_error(capsys, ["engine-calibrate", *url, "-o", str(tmp_path / "r"), "--clock", "engine"],
                 "--clock engine", "only with --replay-mode in-process")
    live = ["engine-calibrate", "--model", str(tmp_path / "m"), "--replay-mode", "in-process", "-o", str(tmp_path / "r")]
    _input_error(capsys, [*live, "--live-envelope", "0.25"], "--live-envelope 0.25", "--live-requests")
    _input_error(capsys, [*live, "--live-requests", "10", "--live-envelope", "1"], "--live-envelope 1", "[0, 1)")
    _input_error(capsys, [*live, "--live-requests", "10", "--live-envelope", "0.25", "--max-model-len", "600"],
                 "--max-model-len 600", "no room beyond the mix's longest request (640 tokens)")
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------ output folders
def test_staged_output_dir_success_failure_and_rerun(tmp_path):
    out = tmp_path / "run"
    with staged_output_dir(out, command="t") as tmp:
        assert tmp != out and not out.exists()
        (tmp / "a.txt").write_text("1")
    marker = json.loads((out / MARKER).read_text())
    assert marker["complete"] and marker["files"] == {"a.txt": 1}
    # a failing re-run that wrote nothing leaves the folder as it was
    with pytest.raises(RuntimeError), staged_output_dir(out) as tmp:
        raise RuntimeError("boom")
    assert (out / "a.txt").exists() and (out / MARKER).exists()
    # a failing re-run that kept partial results replaces it, marked failed (no stale complete marker)
    with pytest.raises(RuntimeError), staged_output_dir(out) as tmp:
        (tmp / "partial").mkdir()
        (tmp / "partial" / "summary.json").write_text("{}")
        raise RuntimeError("boom")
    assert (out / FAILED_MARKER).exists() and not (out / MARKER).exists() and not (out / "a.txt").exists()
    assert "boom" in json.loads((out / FAILED_MARKER).read_text())["error"]
    # a good run after it: no old partial/ beside the new results
    with staged_output_dir(out) as tmp:
        (tmp / "b.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "b.txt"]
    assert not list(tmp_path.glob("*.part-*"))  # no staging leftovers


def test_staging_left_by_a_killed_run_is_removed_by_the_next_run(tmp_path):
    """SIGKILL runs no handler: its ``<out>.part-<pid>`` stays. The next run removes it (its
    process is gone) and keeps one whose process still runs."""
    import subprocess
    import sys

    out = tmp_path / "o"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    (tmp_path / f"o.part-{dead_pid}").mkdir()
    (tmp_path / f"o.part-{dead_pid}" / "requests.parquet").write_bytes(b"half")
    (tmp_path / f"o.part-old-{dead_pid}").mkdir()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / f"o.part-{running.pid}").mkdir()
        (tmp_path / "o.part-notes").mkdir()  # not a staging name: not ours to remove
        with staged_output_dir(out) as tmp:
            (tmp / "a.txt").write_text("x")
        left = sorted(d.name for d in tmp_path.iterdir())
        assert left == sorted(["o", f"o.part-{running.pid}", "o.part-notes"])
    finally:
        running.kill()
        running.wait()


def test_staged_output_dir_refuses_foreign_folder_unless_forced(tmp_path):
    from servesim.errors import InputError

    out = tmp_path / "mine"
    out.mkdir()
    with staged_output_dir(out) as tmp:  # an empty folder (as a workflow engine makes) is fine
        (tmp / "x").write_text("")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="not empty"), staged_output_dir(other):
        pass
    assert (other / "notes.txt").exists()
    with staged_output_dir(other, force=True) as tmp:
        (tmp / "x").write_text("")
    assert not (other / "notes.txt").exists() and (other / MARKER).exists()


def test_simulate_writes_complete_marker_and_reruns_cleanly(tmp_path, capsys):
    small = (EX / "one_region.yaml").read_text().replace("duration_s: 15min", "duration_s: 2min")
    sc = _scenario(tmp_path, small)
    out = tmp_path / "out"
    (out / "partial").mkdir(parents=True)  # a stale failed run's leftovers, with its failure marker
    (out / FAILED_MARKER).write_text("{}")
    assert main(["simulate", str(sc), "-o", str(out), "--no-progress"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([MARKER, "summary.json", "requests.parquet", "timeseries.parquet",
                            "instance_hours.parquet", "lifecycle.parquet"])
    files = json.loads((out / MARKER).read_text())["files"]
    assert files["requests.parquet"] == (out / "requests.parquet").stat().st_size


def test_corrupt_workload_file_is_one_line(tmp_path, capsys):
    wl = tmp_path / "w.parquet"
    wl.write_text("not parquet")
    text = (EX / "one_region.yaml").read_text()
    start, end = text.index("workload:"), text.index("regions:")
    s = _scenario(tmp_path, text[:start] + f"workload: {{file: {wl}}}\n" + text[end:])
    _input_error(capsys, ["simulate", str(s), "-o", str(tmp_path / "out")], "workload.file", "w.parquet",
                 "not a readable parquet")


def test_read_table_names_the_file(tmp_path):
    from servesim.errors import InputError
    from servesim.tables import read_table

    (tmp_path / "t.json").write_text("{}")
    with pytest.raises(InputError, match=r"t\.json: unknown table format '\.json'"):
        read_table(tmp_path / "t.json")
    with pytest.raises(InputError, match=r"gone\.csv: table file does not exist"):
        read_table(tmp_path / "gone.csv")
    (tmp_path / "ok.csv").write_text("a,b\n1,2\n")
    assert read_table(tmp_path / "ok.csv").to_dict("records") == [{"a": 1, "b": 2}]


@pytest.mark.parametrize("module,argv,needle", [
    ("servesim.forecast.evaluate", ["--days", "0", "-o", "{tmp}/x.csv"], "--days 0"),
    ("servesim.systems.sageserve.sensitivity", ["collect", "{tmp}/none/summary.json", "-o", "{tmp}/r.csv"],
     "summary.json does not exist"),
])
def test_workflow_modules_share_the_error_path(tmp_path, capsys, module, argv, needle):
    import importlib

    main_ = importlib.import_module(module).main
    capsys.readouterr()
    assert main_([a.format(tmp=tmp_path) for a in argv]) == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
