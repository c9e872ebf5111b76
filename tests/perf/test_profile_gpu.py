import ast
import re
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from servesim.perf import measurements as M
from servesim.perf import profile_gpu
from servesim.perf.profile_gpu import grid, shrunk


def test_shrunk_model_keeps_head_structure():
    m = shrunk("llama-2-70b", 32)
    assert m.hidden == 256 and m.heads % m.kv_heads == 0 and m.kv_heads >= 1


def test_aegaeon_grid_is_the_readers_valid_steps():
    g = grid("aegaeon")
    assert all(L * B <= 4096 for L, B in g["prefill"]) and all(L < 4096 for L, _ in g["decode"])
    assert [16, 200] in g["prefill"] and [2048, 2] in g["prefill"] and [128, 40] not in g["prefill"]
    with pytest.raises(ValueError, match="unknown grid"):
        grid("nope")


def _cli(argv):
    import argparse

    parser = argparse.ArgumentParser()
    profile_gpu.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_profile_gpu_cpu_small(tmp_path):
    pytest.importorskip("torch")
    from servesim.perf import TableStepTime

    out = tmp_path / "steps.csv"
    assert _cli(["profile-gpu", "--model", "llama-2-7b", "--shrink", "32", "--layers", "2", "--grid", "quick",
                 "--device", "cpu", "-o", str(out)]) == 0
    df = M.read(out)
    assert set(df.regime) == {"prefill-heavy", "decode-heavy", "mixed"} and (df.step_s > 0).all()
    assert df.source.str.contains("shrink32").all() and (df.layers_built == 2).all()
    pure = df[df.regime != "mixed"]
    t = TableStepTime(pure)
    row = pure.iloc[0]
    assert t.step_time(row.prefill_tokens, row.prefill_ctx, row.decode_seqs, row.decode_ctx) == row.step_s


def test_plan_names_bad_spec_and_covers_the_grid(tmp_path):
    with pytest.raises(ValueError, match="model:tp:grid"):
        profile_gpu.plan(["llama-2-7b:x"])
    p = tmp_path / "plan.json"
    assert _cli(["profile-gpu", "--plan-out", str(p), "--models", "qwen2.5-7b:1:aegaeon,llama-2-70b:8:splitwise"]) == 0
    plan = json.loads(p.read_text())
    assert [m["shape"]["key"] for m in plan["models"]] == ["qwen2.5-7b", "llama-2-70b"]
    assert plan["models"][0]["grid"] == grid("aegaeon") and plan["models"][1]["tp"] == 8


def test_gpu_bench_is_standalone():
    """The node-side script imports only the standard library and torch (the GPU node has no servesim deps)."""
    import sys

    src = Path(profile_gpu.__file__).with_name("gpu_bench.py")
    mods = set()
    for node in ast.walk(ast.parse(src.read_text())):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import in gpu_bench.py"
            mods.add(node.module.split(".")[0])
    assert mods - set(sys.stdlib_module_names) == {"torch"}


def _tiny_plan(n_models=2):
    shape = {"key": "tiny", "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "ffn": 96,
             "vocab": 128, "gated_mlp": True}
    return {"hardware": None, "dtype": "float32", "reps": 2, "warmup": 1, "bandwidth": True,
            "models": [{"shape": dict(shape, key=f"tiny{i}"), "tp": 1, "grid": grid("quick")} for i in range(n_models)]}


def test_run_plan_writes_tables_and_provenance(tmp_path):
    torch = pytest.importorskip("torch")
    from servesim.perf import gpu_bench

    done = gpu_bench.run_plan(_tiny_plan(), str(tmp_path), device="cpu", log=lambda s: None)
    assert done["complete"] and done["skipped"] == []
    for i in range(2):
        df = M.read(tmp_path / f"tiny{i}-tp1.csv")
        assert len(df) == 5 and (df.step_s == df.eager_s).all()  # no CUDA graphs on CPU
    bw = pd.read_csv(tmp_path / "bandwidth.csv")
    assert bw.kind.str.startswith("gemm").all() and (bw.bytes_per_s > 0).all()
    prov = json.loads((tmp_path / "provenance.json").read_text())
    assert prov["environment"]["torch"] == torch.__version__


def test_run_plan_past_its_budget_keeps_what_it_measured(tmp_path):
    pytest.importorskip("torch")
    from servesim.perf import gpu_bench

    done = gpu_bench.run_plan(_tiny_plan(), str(tmp_path), budget_s=0.0, device="cpu", log=lambda s: None)
    assert not done["complete"] and done["skipped"] == ["tiny0-tp1.csv", "tiny1-tp1.csv"]
    assert (tmp_path / "bandwidth.csv").exists() and not list(tmp_path.glob("tiny*.csv"))
    assert json.loads((tmp_path / "provenance.json").read_text())["complete"] is False


def test_decode_attention_matches_repeated_kv_heads():
    """The grouped decode attention (each KV head read once) equals attention over repeated KV heads."""
    torch = pytest.importorskip("torch")
    from servesim.perf import gpu_bench

    sh = gpu_bench.Shard(torch, {"key": "t", "layers": 1, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16,
                                 "ffn": 32, "vocab": 32, "gated_mlp": True}, 1, torch.device("cpu"), torch.float64)
    B, C = 3, 5
    q = torch.randn(B, 4 * 16, dtype=torch.float64)
    kc, vc = torch.randn(B, 2, C, 16, dtype=torch.float64), torch.randn(B, 2, C, 16, dtype=torch.float64)
    got = sh._decode_attn(q, kc, vc, B)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.view(B, 4, 1, 16), kc.repeat_interleave(2, 1), vc.repeat_interleave(2, 1)).reshape(B, 64)
    assert np.allclose(got.numpy(), ref.numpy())


@pytest.mark.parametrize("argv, match", [
    (["--model", "llama-2-7b", "--tp", "3", "--grid", "quick", "-o", "x.csv"], "do not split over 3"),
    (["--plan-out", "p.json", "--models", "llama-2-7b:x"], "model:tp:grid"),
    (["--plan-out", "p.json", "--models", "llama-2-7b:1:nogrid"], "unknown grid"),
    (["--plan-out", "p.json", "--models", "qwen1.5-moe-a2.7b-chat:1:quick"], "mixture-of-experts"),
    (["--model", "llama-2-7b"], "needs --model and -o"),
    # checked before any model is built (a 7B build on CPU allocates GBs first)
    (["--model", "llama-2-7b", "--shrink", "0", "-o", "x.csv"], "--shrink 0"),
    (["--model", "llama-2-7b", "--reps", "0", "-o", "x.csv"], "--reps 0"),
    (["--model", "llama-2-7b", "--layers", "0", "-o", "x.csv"], "--layers 0"),
    (["--model", "llama-2-7b", "--device", "tpu9", "-o", "x.csv"], "--device 'tpu9'"),
    (["--model", "llama-2-7b", "--dtype", "float7", "-o", "x.csv"], "--dtype 'float7'"),
    (["--model", "llama-2-7b", "-o", "x.xlsx"], ".csv or .parquet"),
])
def test_profile_gpu_bad_input_is_an_input_error(tmp_path, monkeypatch, argv, match):
    from servesim.errors import InputError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=match):
        _cli(["profile-gpu", *argv])
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("plan, match", [
    ({"models": "x"}, "'models' list"),
    ({"models": [], "graphs": "some"}, "graphs='some'"),
    ({"models": [{"shape": {"key": "t"}, "tp": 1, "grid": {}}]}, r"models\[0\].shape: missing layers"),
    ({"models": [{"shape": _tiny_plan(1)["models"][0]["shape"], "tp": 0, "grid": {}}]}, r"models\[0\].tp"),
    ({"models": [{"shape": _tiny_plan(1)["models"][0]["shape"], "tp": 1, "grid": {"decode": [[16]]}}]}, "2 integers"),
])
def test_gpu_bench_script_rejects_a_bad_plan_in_one_line(tmp_path, capsys, plan, match):
    from servesim.perf import gpu_bench

    p = tmp_path / "plan.json"
    p.write_text(json.dumps(plan))
    assert gpu_bench.main(["--plan", str(p), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(match, err)
    assert not (tmp_path / "out").exists()
