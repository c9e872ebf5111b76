"""Regressions from the bad-input probe of issue 34: a file the system cannot open or write is one
line naming the file, never a traceback. A path that does not resolve (here a symlink loop) is bad
input (exit status 2); a write the system fails (a full disk, ENOSPC) is exit status 4 (not 3, which
the workflow accepts), saying what is left of the outputs: a results folder keeps what was written,
marked _FAILED.json; a single output file is not written; fetch keeps the files it verified.

The full disk is simulated: a write raises OSError(ENOSPC), or pyarrow writes to /dev/full."""

import errno
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from servesim.cli import main
from servesim.errors import EXIT_INPUT, EXIT_IO, EXIT_PARTIAL
from servesim.output_dir import FAILED_MARKER, MARKER, atomic_file, staged_output_dir
from tests.data_marks import needs_azure_code
from tests.foundation.cli_checks import input_error as _input_error

EX = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
SMALL = (EX / "one_region.yaml").read_text().replace("duration_s: 15min", "duration_s: 1min")


def _loop(tmp_path, name):
    p = tmp_path / name
    p.symlink_to(name)  # a symlink to itself: ELOOP on open, exists() is False
    return p


def _io_error(capsys, argv, *needles) -> str:
    """``servesim argv`` exits EXIT_IO with one stderr line (no traceback) holding every needle."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == EXIT_IO
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    for n in needles:
        assert str(n) in err[0], (n, err[0])
    return err[0]


def test_exit_statuses_are_distinct():
    assert len({EXIT_INPUT, EXIT_PARTIAL, EXIT_IO}) == 3


# ------------------------------------------------------------------ symlink loops: exit 2
def test_scenario_that_is_a_symlink_loop(tmp_path, capsys):
    # was an OSError traceback (Errno 40) from reading the scenario
    loop = _loop(tmp_path, "loop.yaml")
    line = _input_error(capsys, ["simulate", loop, "-o", tmp_path / "o"], "loop.yaml", "Too many levels of symbolic links")
    assert line.startswith("servesim simulate: error: ")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv", [
    ["calibrate", "{loop}", "-o", "{tmp}/m.yaml"],
    ["workload", "convert", "azure", "{loop}", "-o", "{tmp}/w.parquet"],
])
def test_table_inputs_that_are_symlink_loops_are_not_called_missing(tmp_path, capsys, argv):
    loop = _loop(tmp_path, "loop.csv")
    _input_error(capsys, [a.format(loop=loop, tmp=tmp_path) for a in argv], "loop.csv", "symlink loop")


# ------------------------------------------------------------------ a full disk: exit 4
def _disk_full_on(monkeypatch, needle, *, named=True):
    """DataFrame.to_parquet raises ENOSPC for paths containing ``needle``: with the file name
    (``named``) or, as pyarrow does, without one."""
    real = pd.DataFrame.to_parquet

    def to_parquet(self, path, *a, **k):
        if needle in str(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), *([str(path)] if named else []))
        return real(self, path, *a, **k)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", to_parquet)


@pytest.mark.parametrize("named", [True, False])
def test_simulate_disk_full_keeps_what_it_wrote_marked_failed(tmp_path, capsys, monkeypatch, named):
    sc = tmp_path / "s.yaml"
    sc.write_text(SMALL)
    out = tmp_path / "out"
    _disk_full_on(monkeypatch, "timeseries", named=named)
    line = _io_error(capsys, ["simulate", sc, "-o", out, "--no-progress"],
                     f"{out}/timeseries.parquet: No space left on device",  # where it is now, not the staging folder
                     f"what it wrote is kept in {out}/, marked {FAILED_MARKER} (not complete)")
    assert ".part-" not in line
    assert sorted(p.name for p in out.iterdir()) == [FAILED_MARKER, "requests.parquet"]
    marker = json.loads((out / FAILED_MARKER).read_text())
    assert marker["complete"] is False and "No space left on device" in marker["error"]
    assert set(marker["files"]) == {"requests.parquet"}
    assert not list(tmp_path.glob("out.part-*"))


def test_simulate_with_pyarrow_writing_to_a_full_device(tmp_path, capsys, monkeypatch):
    """A real ENOSPC, as pyarrow raises it (no file name), from /dev/full: no disk is filled."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    real = pd.DataFrame.to_parquet
    monkeypatch.setattr(pd.DataFrame, "to_parquet", lambda self, path, *a, **k:
                        real(self, "/dev/full" if "instance_hours" in str(path) else path, *a, **k))
    sc = tmp_path / "s.yaml"
    sc.write_text(SMALL)
    out = tmp_path / "out"
    _io_error(capsys, ["simulate", sc, "-o", out, "--no-progress"], f"{out}/instance_hours.parquet:",
              "No space left on device", FAILED_MARKER)
    assert (out / FAILED_MARKER).exists() and not (out / MARKER).exists()


def test_disk_full_while_marking_failure_keeps_nothing_unmarked(tmp_path, monkeypatch):
    real = Path.write_text

    def refuse(self, *a, **k):
        if self.name == FAILED_MARKER:  # the failure marker cannot be written either
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", refuse)
    out = tmp_path / "out"
    with pytest.raises(OSError) as e, staged_output_dir(out) as tmp:
        (tmp / "a.txt").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp / "a.txt"))
    assert e.value.filename == str(out / "a.txt")
    assert any(n.startswith(f"nothing kept in {out}/") for n in e.value.__notes__)
    assert not out.exists() and not list(tmp_path.glob("out.part-*"))  # no unmarked folder left


def test_disk_full_writing_the_completion_marker(tmp_path, monkeypatch):
    real = Path.write_text

    def refuse(self, *a, **k):
        if self.name == MARKER:
            real(self, "{")  # cut short
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", refuse)
    out = tmp_path / "out"
    with pytest.raises(OSError) as e, staged_output_dir(out) as tmp:
        (tmp / "a.txt").write_text("1")
    assert e.value.filename == str(out / MARKER)
    assert sorted(p.name for p in out.iterdir()) == [FAILED_MARKER, "a.txt"]  # no half completion marker


@needs_azure_code
def test_workload_generate_disk_full_writes_nothing(tmp_path, capsys, monkeypatch):
    out = tmp_path / "w.parquet"
    _disk_full_on(monkeypatch, "w.parquet", named=False)
    _io_error(capsys, ["workload", "generate", "oserve", "-o", out], f"{out}: No space left on device",
              "not written (its partial file removed)")
    assert list(tmp_path.iterdir()) == []


def test_atomic_file_disk_full_names_the_output(tmp_path):
    out = tmp_path / "p.json"
    with pytest.raises(OSError) as e, atomic_file(out) as tmp:
        tmp.write_text("{")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
    assert e.value.filename == str(out) and "not written" in e.value.__notes__[0]
    assert list(tmp_path.iterdir()) == []


def test_fetch_disk_full_names_the_file_and_keeps_verified_ones(tmp_path, capsys, monkeypatch):
    import hashlib
    import shutil

    (tmp_path / "traces").mkdir()
    (tmp_path / "Snakefile").write_text("")
    (tmp_path / "pyproject.toml").write_text("")
    mirror = tmp_path / "mirror"
    (mirror / "ds").mkdir(parents=True)
    rows = "dataset\tpath\tsha256\tbytes\tlicence\turl\tused_by\n"
    for name in ("a.csv", "b.csv"):
        body = f"{name}\n".encode()
        (mirror / "ds" / name).write_bytes(body)
        rows += f"ds\t{name}\t{hashlib.sha256(body).hexdigest()}\t{len(body)}\tMIT\thttp://127.0.0.1:9/x\tt\n"
    (tmp_path / "traces" / "MANIFEST").write_text(rows)
    real = shutil.copyfile

    def copyfile(src, dst, **k):
        if Path(src).name == "b.csv":
            Path(dst).write_text("b")  # half copied, then the disk fills (copyfile names the source)
            err = OSError(errno.ENOSPC, "No space left on device", str(src))
            err.filename2 = str(dst)
            raise err
        return real(src, dst, **k)

    monkeypatch.setattr(shutil, "copyfile", copyfile)
    data = tmp_path / "traces" / "data" / "ds"
    _io_error(capsys, ["fetch", "--root", tmp_path, "--mirror", mirror, "--no-download"],
              f"{data / 'b.csv'}: No space left on device", "ds/b.csv not fetched", "1 file(s) fetched before it")
    assert sorted(p.name for p in data.iterdir()) == ["a.csv"]  # verified; no b.csv.part left


@pytest.mark.parametrize("exc, status", [
    (OSError(errno.ELOOP, "Too many levels of symbolic links", "x"), EXIT_INPUT),
    (OSError(errno.ENAMETOOLONG, "File name too long", "x"), EXIT_INPUT),
    (OSError(errno.ENOSPC, "No space left on device", "x"), EXIT_IO),
    (OSError(errno.ENOSPC, "No space left on device"), EXIT_IO),
    (OSError(errno.EIO, "Input/output error", "x"), EXIT_IO),
    (OSError(errno.EBUSY, "Device or resource busy", "x"), EXIT_IO),
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), None),  # no file: left to the command
])
def test_os_error_status(exc, status):
    from servesim.cli_errors import os_error_status

    assert os_error_status(exc) == status


def test_an_os_error_naming_no_file_is_still_a_bug(tmp_path, monkeypatch):
    import servesim.fleet.cli as fleet_cli

    def boom(args):
        raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")

    monkeypatch.setattr(fleet_cli, "handle", boom)
    with pytest.raises(ConnectionResetError):  # a traceback, status 1
        main(["simulate", str(EX / "one_region.yaml"), "-o", str(tmp_path / "o")])
