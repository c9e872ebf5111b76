import numpy as np
import pandas as pd
import pytest
import yaml

import servesim.perf as P
from servesim.perf import calibrate, measurements as M
from servesim.perf.fitted import FittedStepTime


def _write_table(path, n=120, seed=0):
    rng = np.random.default_rng(seed)
    truth = FittedStepTime(a_p=0.005, a_d=0.007, b_pt=3e-5, c_pc=1e-10, b_ds=2e-4, c_dc=5e-8)
    kind = rng.integers(0, 3, n)
    L = rng.integers(32, 2048, n).astype(float)
    S = rng.integers(1, 64, n).astype(float)
    pt = np.where(kind != 1, L, 0.0)
    ds = np.where(kind != 0, S, 0.0)
    df = pd.DataFrame(dict(prefill_tokens=pt, prefill_ctx=pt * L, decode_seqs=ds, decode_ctx=ds * 700.0))
    df["step_s"] = truth.step_time(*(df[c].to_numpy() for c in M.AGGREGATES)) * (1 + 0.01 * rng.standard_normal(n))
    df["model"], df["hardware"], df["tp"] = "llama-2-7b", "a10", 1
    df.to_csv(path, index=False)
    return truth


def _run(argv):
    import argparse

    parser = argparse.ArgumentParser(prog="servesim")
    calibrate.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize("backend", ["fitted", "roofline"])
def test_calibrate_end_to_end(tmp_path, capsys, backend):
    table = tmp_path / "meas.csv"
    truth = _write_table(table)
    out, rep = tmp_path / "model.yaml", tmp_path / "err.csv"
    assert _run(["calibrate", str(table), "-o", str(out), "--backend", backend, "--report", str(rep)]) == 0
    text = capsys.readouterr().out
    assert "held-out" in text and "decode-heavy" in text and "mixed" in text
    err = pd.read_csv(rep)
    assert set(err.regime) == {"all", "prefill-heavy", "decode-heavy", "mixed"}
    doc = yaml.safe_load(out.read_text())
    assert doc["backend"] == backend and doc["holdout_errors"]
    m = P.build(str(out))
    if backend == "fitted":  # 1% noise: the fit is close and its held-out MAPE small
        held = err[(err.split == "held-out") & (err.regime == "all")].iloc[0]
        assert held.mape_pct < 3 and held.r2 > 0.99
        assert m.step_time(500, 500 * 500, 0, 0) == pytest.approx(truth.step_time(500, 500 * 500, 0, 0), rel=0.03)


@pytest.mark.parametrize("step_s", [1e12, 3600.5])
def test_calibrate_refuses_an_implausible_step_time(tmp_path, capsys, step_s):
    # issue 34: one step of 1e12 s was fitted without a word
    from servesim.cli import main

    table = tmp_path / "meas.csv"
    _write_table(table)
    df = pd.read_csv(table)
    df.loc[7, "step_s"] = step_s
    df.to_csv(table, index=False)
    capsys.readouterr()
    assert main(["calibrate", str(table), "-o", str(tmp_path / "m.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "meas.csv: row 7: step_s=" in err[0] and "at most 3600 s" in err[0], err
    assert not (tmp_path / "m.yaml").exists()
    df.loc[7, "step_s"] = M.MAX_STEP_S  # the bound itself is accepted
    M.validate(df, "t")


def test_calibrate_bad_table_names_file(tmp_path):
    p = tmp_path / "broken.csv"
    pd.DataFrame({"prefill_tokens": [1]}).to_csv(p, index=False)
    with pytest.raises(M.MeasurementError, match="broken.csv"):
        _run(["calibrate", str(p), "-o", str(tmp_path / "m.yaml")])


def test_cli_registers_calibrate():
    from servesim import cli

    p = cli.build_parser()
    a = p.parse_args(["calibrate", "x.csv", "-o", "y.yaml"])
    assert a.func is calibrate.run
