"""Regressions from re-probing bad input (issue 12): each case was a traceback, a silent
acceptance, a memory runaway or a misleading result before; now it is one line naming the
file and the row, line, key or option (exit status 2), or the valid handling of a benign variant."""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from servesim.cli import main
from tests.foundation.cli_checks import input_error as _input_error

EX = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


# ------------------------------------------------------------------ workload convert
AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
    f"2023-11-16 18:15:{i:02d}.0000000,{100 + i},{10 + i}\n" for i in range(6))


def test_convert_refuses_repeated_columns_and_hex_counts(tmp_path, capsys):
    out = tmp_path / "o.parquet"
    dup = tmp_path / "dup.csv"
    dup.write_text(AZ.replace("GeneratedTokens\n", "GeneratedTokens,GeneratedTokens\n", 1).replace("\n2023", ",1\n2023"))
    _input_error(capsys, ["workload", "convert", "azure", dup, "-o", out], "dup.csv", "line 1", "GeneratedTokens")
    ae = tmp_path / "ae.csv"
    ae.write_text("Request Time,Model Name,Input Length,Output Length,Output Length\n00:00:01,m,5,1,2\n")
    _input_error(capsys, ["workload", "convert", "aegaeon", ae, "-o", out], "ae.csv", "Output Length")
    hexed = tmp_path / "hex.csv"  # Arrow's typed reader took "0x10" for 16
    hexed.write_text(AZ.replace(",103,", ",0x10,"))
    _input_error(capsys, ["workload", "convert", "azure", hexed, "-o", out], "hex.csv", "line 5", "ContextTokens")
    assert not out.exists()


def test_lenient_all_bad_names_lines_and_warnings_are_one_line(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "allbad.csv"
    bad.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\nnope,1,1\nnever,2,2\n")
    # a process of its own: pytest records warnings instead of printing them
    p = subprocess.run([sys.executable, "-m", "servesim.cli", "workload", "convert", "azure", str(bad), "--lenient",
                        "-o", str(tmp_path / "o.parquet")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    err = p.stderr.strip().splitlines()
    assert len(err) == 2, err  # the drop warning and the error, one line each (no quoted source line)
    assert err[0].startswith("servesim workload: warning:") and "dropped 2 bad row(s)" in err[0]
    assert "allbad.csv: no valid rows (2 bad, first at line 2)" in err[1]


# ------------------------------------------------------------------ workload generate
@pytest.mark.parametrize("argv, needle", [
    (["--scale", "1e12"], "requests"),                    # was a 171 PiB allocation
    (["--seed", "-1"], "--seed -1"),                      # was a numpy traceback
    (["--options", "{rate_rps: .nan}"], "rate_rps=nan"),
    (["--options", "{rate_rps: -5}"], "rate_rps=-5"),
])
def test_generate_bounds_checked_before_work(tmp_path, capsys, argv, needle):
    out = tmp_path / "g.parquet"
    _input_error(capsys, ["workload", "generate", "oserve", *argv, "-o", out], needle)
    assert not out.exists()


@pytest.mark.parametrize("opts, needle", [
    ("{days: .nan}", "days=nan"), ("{days: -1}", "days=-1"), ("{days: 1.5}", "whole number"),
    ("{days: 1000000000}", "days"), ("{growth: 1.0e+9}", "requests"), ("{growth: 1.0e9}", "must be a number"),
])
def test_generate_week_options(tmp_path, capsys, opts, needle):
    _input_error(capsys, ["workload", "generate", "sageserve_week", "--scale", "0.001", "--options", opts, "-o",
                          tmp_path / "g.parquet"], "sageserve_week", needle)


def test_check_generate_accepts_the_defaults():
    from servesim.workload import GENERATORS, check_generate

    for name in GENERATORS:
        check_generate(name, 1.0, 0, {})


# ------------------------------------------------------------------ simulate
def _scenario(tmp_path, mutate, name="s.yaml") -> Path:
    d = yaml.safe_load((EX / "one_region.yaml").read_text())
    d["workload"]["duration_s"] = "60s"
    d["workload"]["streams"][0].update(rate_rps=2, steps=[])
    mutate(d)
    p = tmp_path / name
    p.write_text(yaml.safe_dump(d, sort_keys=False).replace("__INF__", ".inf"))
    return p


def _set(path, value):
    def m(d):
        *head, last = path.split(".")
        for k in head:
            d = d[int(k)] if isinstance(d, list) else d[k]
        d[int(last) if isinstance(d, list) else last] = value
    return m


@pytest.mark.parametrize("key, value, needle", [
    ("workload.duration_s", "__INF__", "duration_s"),               # was a numpy traceback
    ("workload.duration_s", "1e12s", "requests"),                   # was a 14.6 TiB allocation
    ("workload.streams.0.rate_rps", 1e9, "requests"),               # was a 447 GiB allocation
    ("workload.streams.0.rate_rps", "__INF__", "rate_rps"),
    ("output.window_s", "__INF__", "window_s"),                     # were accepted
    ("models.llama-2-7b.step_time.c0", "__INF__", "c0"),
    ("models.llama-2-7b.lead.load_s", "__INF__", "load_s"),
    ("autoscaler.period_s", "__INF__", "period_s"),
    ("workload.streams.0.prompt_tokens.mean", 1e30, "mean"),        # a mean above max was clipped silently
    ("workload.streams.0.prompt_tokens", {"mean": 10, "min": 100, "max": 50}, "min=100 is above max=50"),
    ("workload.streams.0.prompt_tokens.cv", "__INF__", "cv"),
    ("seed", -1, "seed"),                                           # was a numpy traceback
    ("workload", {"generator": "oserve", "scale": 1e9}, "requests"),
    ("workload", {"generator": "sageserve_week", "scale": 0.001, "options": {"bursts": "maybe"}}, "bursts"),
])
def test_simulate_scenario_holes(tmp_path, capsys, key, value, needle):
    sc = _scenario(tmp_path, _set(key, value))
    out = tmp_path / "out"
    _input_error(capsys, ["simulate", sc, "-o", out], needle)
    assert not out.exists()


def test_simulate_binary_scenario_and_negative_seed_option(tmp_path, capsys):
    b = tmp_path / "b.yaml"
    b.write_bytes(b"\xb2\x00\xff garbage")
    _input_error(capsys, ["simulate", b, "-o", tmp_path / "o"], "b.yaml", "UTF-8")
    _input_error(capsys, ["simulate", EX / "one_region.yaml", "-o", tmp_path / "o", "--seed", "-3"], "--seed -3")


@pytest.mark.parametrize("col, value", [("model", "llama-2-70b"), ("region", "eastus")])
def test_workload_rows_nothing_can_serve_are_errors(tmp_path, capsys, col, value):
    from servesim.workload.schema import make, write

    wl = tmp_path / "w.parquet"
    kw = {"model": "llama-2-7b", "region": "westus"} | {col: np.array(["llama-2-7b" if col == "model" else "westus",
                                                                        value])}
    write(make(np.array([0.0, 1.0]), [100, 100], [10, 10], **kw), wl)
    sc = _scenario(tmp_path, _set("workload", {"file": str(wl)}))
    _input_error(capsys, ["simulate", sc, "-o", tmp_path / "out"], "workload row 1", col, value)


# ------------------------------------------------------------------ calibrate
def _meas(n=30):
    rng = np.random.default_rng(0)
    pt = rng.integers(0, 2, n) * rng.integers(32, 2048, n)
    ds = np.where(pt == 0, rng.integers(1, 64, n), rng.integers(0, 8, n))
    df = pd.DataFrame(dict(prefill_tokens=pt, prefill_ctx=pt * pt, decode_seqs=ds, decode_ctx=ds * 700))
    df["step_s"] = 0.005 + 3e-5 * pt + 2e-4 * ds
    return df


def test_calibrate_repeated_column_unknown_names_and_empty_table(tmp_path, capsys):
    out = tmp_path / "m.yaml"
    p = tmp_path / "dup.csv"
    text = _meas().to_csv(index=False).splitlines()
    p.write_text("\n".join([text[0] + ",step_s"] + [t + ",1" for t in text[1:]]) + "\n")
    _input_error(capsys, ["calibrate", p, "-o", out], "dup.csv", "step_s", "more than once")
    ok = tmp_path / "ok.csv"
    _meas().to_csv(ok, index=False)
    _input_error(capsys, ["calibrate", ok, "-o", out, "--model", "no-such-model"], "--model no-such-model")
    _input_error(capsys, ["calibrate", ok, "-o", out, "--hardware", "no-such-gpu"], "--hardware no-such-gpu")
    hdr = tmp_path / "hdr.csv"
    hdr.write_text(text[0] + "\n")
    _input_error(capsys, ["calibrate", hdr, "-o", out], "hdr.csv", "0 usable row(s)")
    assert not out.exists()


# ------------------------------------------------------------------ claims
CLAIM = {"id": "demo-01a-x", "source": "paper", "kind": "measured", "where": "Fig 1", "claim": "x", "figure": "fig1",
         "metric": "m", "check": "gt", "expected": 1.0, "null_system": {"none": "a plain measurement of the demo"}}


def _claims_root(tmp_path, metrics_text, claim=CLAIM):
    root = tmp_path / "proj"
    (root / "workflow/claims").mkdir(parents=True)
    (root / "notebooks/demo").mkdir(parents=True)
    (root / "notebooks/demo/fig1.ipynb").write_text("{}")
    (root / "workflow/claims/demo.yaml").write_text(yaml.safe_dump({"paper": "demo", "claims": [claim]}))
    (root / "results/quick/demo/fig1").mkdir(parents=True)
    (root / "results/quick/demo/fig1/metrics.json").write_text(metrics_text)
    return root


@pytest.mark.parametrize("value, status", [("Infinity", "FAIL"), ("-Infinity", "FAIL"), ("2.0", "PASS"),
                                           ("NaN", "NOT-CHECKED")])
def test_claims_infinite_metric_never_passes(tmp_path, capsys, value, status):
    root = _claims_root(tmp_path, '{"m": %s}' % value)
    csv = tmp_path / "r.csv"
    assert main(["claims", "--root", str(root), "--md", str(tmp_path / "r.md"), "--csv", str(csv)]) == 0
    assert pd.read_csv(csv)["status"].tolist() == [status]


def test_claims_outputs_and_root_checked_before_work(tmp_path, capsys):
    root = _claims_root(tmp_path, '{"m": 2.0}')
    blocker = tmp_path / "file"
    blocker.write_text("x")
    md = ["--md", str(tmp_path / "r.md")]
    _input_error(capsys, ["claims", "--root", root, *md, "--csv", blocker / "r.csv"], "--csv", "is a file")
    _input_error(capsys, ["claims", "--root", root, "--md", tmp_path, "--csv", tmp_path / "r.csv"], "--md", "folder")
    _input_error(capsys, ["claims", "--root", tmp_path / "nowhere", *md, "--csv", tmp_path / "r.csv"],
                 "--root", "no claims files")  # was exit 0 with an empty report
    assert not (tmp_path / "r.csv").exists()


# ------------------------------------------------------------------ fetch
HEADER = "dataset\tpath\tsha256\tbytes\tlicence\turl\tused_by\n"


def _fetch_project(tmp_path, manifest: bytes):
    (tmp_path / "traces").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "mirror/ds").mkdir(parents=True)
    (tmp_path / "mirror/ds/a.csv").write_bytes(b"a,b\n1,2\n")
    (tmp_path / "traces/MANIFEST").write_bytes(manifest)
    return ["fetch", "--root", str(tmp_path), "--mirror", str(tmp_path / "mirror"), "--no-download"]


def test_fetch_manifest_with_bom_works_binary_is_one_line(tmp_path, capsys):
    sha = hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    row = f"ds\ta.csv\t{sha}\t8\tMIT\thttp://127.0.0.1:9/a\tt\n"
    argv = _fetch_project(tmp_path / "bom", ("\ufeff" + HEADER + row).replace("\n", "\r\n").encode())
    assert main(argv) == 0
    assert (tmp_path / "bom/traces/data/ds/a.csv").read_bytes() == b"a,b\n1,2\n"
    argv = _fetch_project(tmp_path / "bin", b"\xa1\xff\x00 not text\n")
    _input_error(capsys, argv, "MANIFEST", "UTF-8")


def test_fetch_mirror_that_is_a_file_or_missing(tmp_path, capsys):
    argv = _fetch_project(tmp_path, HEADER.encode())
    blocker = tmp_path / "f"
    blocker.write_text("x")
    argv[argv.index("--mirror") + 1] = str(blocker)
    _input_error(capsys, argv, "--mirror", "is a file")
    argv[argv.index("--mirror") + 1] = str(tmp_path / "none")
    _input_error(capsys, argv, "--mirror", "--no-download")


# ------------------------------------------------------------------ workflow declarations
def test_runs_file_with_a_repeated_key_is_an_error(tmp_path):
    from servesim.analysis import runs as runs_api

    root = tmp_path / "proj"
    (root / "workflow/runs").mkdir(parents=True)
    (root / "workflow/schemas").mkdir()
    schema = Path(__file__).resolve().parents[2] / "workflow/schemas/runs.schema.yaml"
    (root / "workflow/schemas/runs.schema.yaml").write_text(schema.read_text())
    (root / "workflow/runs/demo.yaml").write_text(
        "paper: demo\nruns:\n  base:\n    module: servesim.fleet.cli\n    outputs: [summary.json]\n"
        "    quick: {args: {n: 1}}\n    quick: {args: {n: 2}}\n")  # was: the second quick silently won
    with pytest.raises(runs_api.RunsError, match=r"demo.yaml.*line 7.*duplicate key 'quick'"):
        runs_api.declared("demo", "quick", root)


@pytest.mark.parametrize("call, needle", [
    (lambda: __import__("servesim.workload", fromlist=["x"]).sageserve_week(1e9), "requests"),  # was 51 PiB
    (lambda: __import__("servesim.workload", fromlist=["x"]).sageserve_week(0.001, days=0), "days=0"),
    (lambda: __import__("servesim.workload", fromlist=["x"]).azure_week("code", float("inf")), "requests"),
    (lambda: __import__("servesim.workload", fromlist=["x"]).azure_week("code", 0.01, days=10**9), "days"),
])
def test_week_generators_bound_their_volume_for_every_caller(call, needle):
    """The paper systems call the week generators directly (not through generate())."""
    from servesim.workload import WorkloadError

    with pytest.raises(WorkloadError, match=needle):
        call()
