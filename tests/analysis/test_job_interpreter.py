"""The jobs' interpreter has one name per environment (servesim.analysis.job_interpreter)."""

import os
import sys

import pytest

from servesim.analysis.job_interpreter import job_interpreter


def _venv(tmp_path, names):
    """A bin/ folder whose `names` all point at this interpreter, as a venv's do."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name in names:
        (bin_ / name).symlink_to(sys.executable)
    return bin_


@pytest.mark.parametrize("started_as", ["python", "python3", "python3.11"])
def test_every_name_of_one_environment_gives_the_same_interpreter(tmp_path, started_as):
    bin_ = _venv(tmp_path, ["python", "python3", "python3.11"])
    assert job_interpreter(str(bin_ / started_as)) == str(bin_ / "python3")


def test_the_name_is_not_resolved_out_of_the_environment(tmp_path):
    # a venv is found from the path it is started by: the symlink's target would leave it
    bin_ = _venv(tmp_path, ["python"])
    assert job_interpreter(str(bin_ / "python")) == str(bin_ / "python")
    assert os.path.realpath(bin_ / "python") != str(bin_ / "python")


def test_another_interpreter_beside_it_is_not_taken(tmp_path):
    bin_ = _venv(tmp_path, ["python3.11"])
    other = tmp_path / "other"
    other.write_text("#!/bin/sh\n")
    (bin_ / "python3").symlink_to(other)
    assert job_interpreter(str(bin_ / "python3.11")) == str(bin_ / "python3.11")


def test_the_running_interpreter_by_default():
    assert os.path.samefile(job_interpreter(), sys.executable)


def test_no_interpreter_path_is_a_clear_error():
    with pytest.raises(RuntimeError, match="sys.executable is empty"):
        job_interpreter("")
