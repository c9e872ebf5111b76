"""The one check of a command's input error, shared by the bad-input regression tests."""

from servesim.cli import main
from servesim.errors import EXIT_INPUT


def input_error(capsys, argv, *needles) -> str:
    """``servesim argv`` exits 2 with one stderr error line (warnings aside), no traceback, holding
    every needle; returns that line."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == EXIT_INPUT
    err = [line for line in capsys.readouterr().err.strip().splitlines() if ": warning: " not in line]
    assert len(err) == 1 and "Traceback" not in err[0], err
    for n in needles:
        assert str(n) in err[0], (n, err[0])
    return err[0]
