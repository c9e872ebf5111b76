"""Regressions from a third bad-input probe of issue 12 (a 400-case probe of every command): each
case was a traceback, a silent acceptance, a runaway or a misleading result before; now it is one
line naming the file and the row, key or option (exit status 2)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from servesim.cli import main
from servesim.errors import EXIT_INPUT

EX = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
BASE = (EX / "one_region.yaml").read_text().replace("duration_s: 15min", "duration_s: 1min")
COLS = "request_id,arrival_s,prompt_tokens,output_tokens,model,region,tier,app,deadline_s\n"


def _input_error(capsys, argv, *needles):
    """``servesim argv`` exits 2 with one stderr error line (warnings aside) holding every needle."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == EXIT_INPUT
    err = [line for line in capsys.readouterr().err.strip().splitlines() if ": warning: " not in line]
    assert len(err) == 1 and "Traceback" not in err[0], err
    for n in needles:
        assert str(n) in err[0], (n, err[0])
    return err[0]


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
