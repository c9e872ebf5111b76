import pytest

from servesim.perf import measurements as M
from servesim.perf.profile_gpu import shrunk


def test_shrunk_model_keeps_head_structure():
    m = shrunk("llama-2-70b", 32)
    assert m.hidden == 256 and m.heads % m.kv_heads == 0 and m.kv_heads >= 1


def test_profile_gpu_cpu_small(tmp_path):
    pytest.importorskip("torch")
    import argparse

    from servesim.perf import TableStepTime, profile_gpu

    parser = argparse.ArgumentParser()
    profile_gpu.add_parser(parser.add_subparsers(dest="command"))
    out = tmp_path / "steps.csv"
    args = parser.parse_args(["profile-gpu", "--model", "llama-2-7b", "--shrink", "32", "--layers", "2", "--quick",
                              "--device", "cpu", "-o", str(out), "--ops-output", str(tmp_path / "ops.csv")])
    assert args.func(args) == 0
    df = M.read(out)
    assert set(df.regime) == {"prefill-heavy", "decode-heavy"} and (df.step_s > 0).all()
    t = TableStepTime(df)
    row = df.iloc[0]
    assert t.step_time(row.prefill_tokens, row.prefill_ctx, row.decode_seqs, row.decode_ctx) == row.step_s
