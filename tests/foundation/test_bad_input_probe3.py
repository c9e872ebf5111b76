"""Regressions from a third bad-input probe of issue 12 (a 400-case probe of every command): each
case was a traceback, a silent acceptance, a runaway or a misleading result before; now it is one
line naming the file and the row, key or option (exit status 2)."""

from pathlib import Path

import numpy as np
import pytest

from tests.foundation.cli_checks import input_error as _input_error

EX = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
BASE = (EX / "one_region.yaml").read_text().replace("duration_s: 15min", "duration_s: 1min")
COLS = "request_id,arrival_s,prompt_tokens,output_tokens,model,region,tier,app,deadline_s\n"


def _scenario(tmp_path, text):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def _with_file(tmp_path, rows: str, name="w.csv"):
    (tmp_path / name).write_text(COLS + rows)
    start, end = BASE.index("workload:"), BASE.index("regions:")
    return _scenario(tmp_path, BASE[:start] + f"workload: {{file: {name}}}\n" + BASE[end:])


@pytest.mark.parametrize("rows, needles", [
    # 1.5 prompt tokens were truncated to 1 and simulated
    ("0,0.0,1.5,10,llama-2-7b,westus,IW-F,a,\n", ("w.csv", "row 0", "prompt_tokens=1.5", "whole number")),
    # a deadline before the arrival (an offset written as an absolute time) was always missed, silently
    ("0,5.0,100,10,llama-2-7b,westus,IW-F,a,1.0\n", ("w.csv", "row 0", "deadline_s=1", "before arrival_s=5")),
    # a header without rows simulated 0 requests and exited 0
    ("", ("w.csv", "no requests")),
])
def test_workload_file_holes(tmp_path, capsys, rows, needles):
    out = tmp_path / "o"
    _input_error(capsys, ["simulate", _with_file(tmp_path, rows), "-o", out], *needles)
    assert not out.exists()


def test_schema_whole_numbers_and_deadlines_still_accept_valid_tables():
    from servesim.workload.schema import make

    df = make(np.array([0.0, 1.0]), np.array([3.0, 4.0]), [1, 0], deadline_s=np.array([0.0, np.nan]))
    assert df["prompt_tokens"].tolist() == [3, 4] and str(df["prompt_tokens"].dtype) == "int64"


def test_horizon_errors_name_the_scenario_file_and_the_last_arrival(tmp_path, capsys):
    # named only the scenario's `name:` before (neither the file nor why the horizon was 1e15 s)
    sc = _with_file(tmp_path, "0,0.0,100,10,llama-2-7b,westus,IW-F,a,\n1,1e15,100,10,llama-2-7b,westus,IW-F,a,\n")
    _input_error(capsys, ["simulate", sc, "-o", tmp_path / "o"], "s.yaml", "output.sample_s", "last arrival at 1e+15 s")


def test_autoscaler_period_that_would_tick_without_bound_is_refused(tmp_path, capsys):
    # period_s: 1e-9 ran until killed (about 1e14 autoscaler calls over the default drain horizon)
    sc = _scenario(tmp_path, BASE.replace("period_s: 5s", "period_s: 1.0e-9"))
    _input_error(capsys, ["simulate", sc, "-o", tmp_path / "o"], "s.yaml", "autoscaler.period_s=1e-09", "calls")


def test_period_check_covers_actors_given_in_code():
    from servesim.fleet.run import run_scenario
    from servesim.fleet.scenario import ScenarioError, load_scenario

    class Busy:
        period_s = 1e-9

        def act(self, view):
            return []

    with pytest.raises(ScenarioError, match="Busy.period_s"):
        run_scenario(load_scenario(EX / "one_region.yaml"), actors=[Busy()])


def test_linear_step_time_that_is_zero_for_a_batch_is_a_scenario_error(tmp_path, capsys):
    # all-zero coefficients ended in a SimulationError traceback mid-run
    zero = "c0: 0, c_pt: 0, c_pc: 0, c_ds: 0, c_dc: 0"
    text = BASE.replace("c0: 5.0e-3, c_pt: 1.0e-4, c_pc: 0.0, c_ds: 2.0e-5, c_dc: 1.0e-8", zero)
    _input_error(capsys, ["simulate", _scenario(tmp_path, text), "-o", tmp_path / "o"], "s.yaml", "step_time", "0 s")
    # c0 = 0 with per-token costs on both sides is fine
    from servesim.fleet.scenario import StepTimeCfg

    StepTimeCfg(c0=0, c_pt=1e-4, c_ds=2e-5)


def test_aegaeon_market_with_no_models(tmp_path, capsys):
    # n_models: 0 was a numpy broadcasting traceback
    _input_error(capsys, ["workload", "generate", "aegaeon_market", "--options", "{n_models: 0}",
                          "-o", tmp_path / "g.parquet"], "n_models=0")


# ------------------------------------------------------------------ engine commands (no server needed)
DEAD = "http://127.0.0.1:9"  # nothing listens: refused at once


def _wl(tmp_path, rows="0,0.0,100,10,m,r,IW-F,a,\n"):
    p = tmp_path / "w.csv"
    p.write_text(COLS + rows)
    return p


@pytest.mark.parametrize("opts, needles", [
    # every request ended `unfinished` and the command exited 0 (or 3): read as a run, not a typo
    ([], ("--url http://127.0.0.1:9", "no server answers")),
    (["--url", "not a url"], ("--url not a url", "http")),
    (["--vocab-size", "0"], ("--vocab-size 0",)),
    (["--first-token-id", "-5"], ("--first-token-id -5",)),
    (["--seed", "-1"], ("--seed -1",)),
])
def test_replay_options_and_server_checked_before_work(tmp_path, capsys, opts, needles):
    out = tmp_path / "r"
    _input_error(capsys, ["replay", "--url", DEAD, "--workload", _wl(tmp_path), "-o", out, *opts], *needles)
    assert not out.exists()


def test_replay_of_an_empty_workload_is_an_error(tmp_path, capsys):
    # 0 requests replayed, exit 0
    _input_error(capsys, ["replay", "--url", DEAD, "--workload", _wl(tmp_path, ""), "-o", tmp_path / "r"],
                 "w.csv", "no requests")


def test_profile_engine_and_engine_calibrate_check_folder_and_server_first(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    # were a FileExistsError / a RuntimeError traceback after the output folder was created
    _input_error(capsys, ["profile-engine", "--url", DEAD, "-o", f], "is a file")
    _input_error(capsys, ["profile-engine", "--url", DEAD, "-o", tmp_path / "p"], "--url", "no server answers")
    _input_error(capsys, ["profile-engine", "--url", DEAD, "-o", tmp_path / "p", "--max-num-seqs", "0"],
                 "--max-num-seqs 0")
    assert not (tmp_path / "p").exists()
    # engine-calibrate writes in place (the workflow keeps the model folder inside -o): a dead
    # --url was a RuntimeError traceback after profile/ had been created
    _input_error(capsys, ["engine-calibrate", "--url", DEAD, "-o", tmp_path / "c", "--tiny"], "no server answers")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("fit, opts, needles", [
    ("{not json", [], ("fit.json", "not a readable JSON")),          # JSONDecodeError traceback
    ("[1, 2]", [], ("fit.json", "JSON object")),                      # ValueError traceback
    ("{}", [], ("fit.json", "prompt_range")),
    ('{"prompt_range": [16, 64], "output_range": [8, 32]}', [], ("fit.json", "capacity_req_s")),
    ('{"prompt_range": [16, 64], "output_range": [8, 32], "capacity_req_s": -1}', [], ("capacity_req_s=-1",)),
    ('{"prompt_range": [16, 64], "output_range": [8, 32], "capacity_req_s": 2}', ["--load", "inf"], ("--load inf",)),
    ('{"prompt_range": [16, 64], "output_range": [8, 32], "capacity_req_s": 2}', ["-n", "10000000000"], ("-n",)),
])
def test_engine_workload_fit_and_options(tmp_path, capsys, fit, opts, needles):
    (tmp_path / "fit.json").write_text(fit)
    argv = ["engine-workload", "--fit", tmp_path / "fit.json", "-o", tmp_path / "w.parquet", "--load", "0.5", *opts]
    _input_error(capsys, argv, *needles)
    assert not (tmp_path / "w.parquet").exists()


def test_load_fitted_names_the_file(tmp_path):
    from servesim.engine.profile import load_fitted
    from servesim.errors import InputError

    (tmp_path / "fit.json").write_text('{"coefficients": {}}')
    with pytest.raises(InputError, match="fit.json: no frontend_overhead_s"):
        load_fitted(tmp_path / "fit.json")


def test_make_tiny_model_checks_its_folder_and_length(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    _input_error(capsys, ["make-tiny-model", f], "is a file")                        # FileExistsError traceback
    _input_error(capsys, ["make-tiny-model", tmp_path / "m", "--max-model-len", "0"], "--max-model-len 0")  # accepted
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("opts, needle", [
    (["--seed", "-1"], "--seed -1"),            # a numpy traceback
    (["--days", "100000"], "--days 100000"),    # named only the generator's option
    (["--volume-scale", "1e9"], "--volume-scale 1e+09"),  # named only the generator
    # a reactive scaler checking every 1e-9 s: refused by the fleet's bound, named by its option
    (["--strategy", "reactive", "--scaling-interval", "1e-9"], "--scaling-interval 1e-09"),
])
def test_sageserve_run_seed_and_days(tmp_path, capsys, opts, needle):
    window = ["--models", "llama-2-70b", "--regions", "eastus", "--window-h", "36", "37", "--days", "2",
              "--volume-scale", "0.1"]
    _input_error(capsys, ["sageserve-run", "--strategy", "lt_i", *window, *opts, "-o", tmp_path / "o"], needle)


# ------------------------------------------------------------------ loaders and provenance
def _sharegpt(n=3):
    import json

    return "[\n" + ",\n".join(json.dumps({"id": str(i), "conversations": [
        {"from": "human", "value": f"hello {i}"}, {"from": "gpt", "value": "hi " * (i + 1)}]}) for i in range(n)) + "\n]\n"


def test_sharegpt_bom_is_accepted_and_bad_bytes_name_the_file(tmp_path):
    from servesim.workload.schema import WorkloadError
    from servesim.workload.sharegpt import load_sharegpt

    p = tmp_path / "sg.json"
    p.write_text("\ufeff" + _sharegpt(), encoding="utf-8")  # was "not a JSON array (first character '\ufeff')"
    assert len(load_sharegpt(p, tokenizer="words")) == 3
    raw = _sharegpt().encode()
    p.write_bytes(raw[:40] + b"\xff\xfe" + raw[40:])  # was a UnicodeDecodeError traceback
    with pytest.raises(WorkloadError, match="sg.json: not UTF-8"):
        load_sharegpt(p, tokenizer="words")
    p.write_text(_sharegpt())
    with pytest.raises(WorkloadError, match="max_conversations=-1"):  # was an islice ValueError
        load_sharegpt(p, tokenizer="words", max_conversations=-1)


def test_sageserve_loader_deadlines_must_be_finite(tmp_path):
    from servesim.workload.loaders import SAGESERVE_COLUMNS, load_sageserve
    from servesim.workload.schema import WorkloadError

    p = tmp_path / "t.csv"
    p.write_text(",".join(SAGESERVE_COLUMNS) + "\n0,-1,t,chat,s,1,1,0,A,dev,app,1.0,1,100,10\n")
    with pytest.raises(WorkloadError, match="t.csv: niw_deadline_s=nan"):  # NaN deadlines passed silently
        load_sageserve(p, niw_deadline_s=float("nan"))
    assert len(load_sageserve(p)) == 1


def test_provenance_output_checked_first(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    root = Path(__file__).resolve().parents[2]
    # a FileExistsError traceback (after the git and MANIFEST work)
    _input_error(capsys, ["provenance", "--root", root, "-o", f / "p.json"], "is a file")
    _input_error(capsys, ["provenance", "--root", tmp_path, "-o", tmp_path / "p.json"], "--root", "traces/MANIFEST")
    assert not (tmp_path / "p.json").exists()


def test_step_time_model_file_that_is_not_yaml_is_a_scenario_error(tmp_path, capsys):
    # a yaml.ScannerError traceback from the perf backend's reader
    (tmp_path / "m.yaml").write_text("backend: fitted\ncoefficients: [1, 2\n")
    linear = "step_time: {backend: linear, c0: 5.0e-3, c_pt: 1.0e-4, c_pc: 0.0, c_ds: 2.0e-5, c_dc: 1.0e-8}"
    text = BASE.replace(linear, f"step_time: {{backend: file, path: {tmp_path / 'm.yaml'}}}")
    _input_error(capsys, ["simulate", _scenario(tmp_path, text), "-o", tmp_path / "o"], "s.yaml",
                 "models.llama-2-7b.step_time")


def test_workload_output_must_be_named_parquet(tmp_path, capsys):
    # `-o out.xlsx` wrote a Parquet file under a spreadsheet's name
    az = tmp_path / "a.csv"
    az.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n")
    _input_error(capsys, ["workload", "convert", "azure", az, "-o", tmp_path / "out.xlsx"], "out.xlsx", ".parquet")
    assert not (tmp_path / "out.xlsx").exists()
