"""PreServe Tier 2: oversampling arithmetic, synonym replacement rate, the length predictor's
freezing and training (on a tiny random BERT: a fake allowed inside unit tests), Table 2 metrics."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from servesim.systems.preserve import length_predictor as lp_mod  # noqa: E402
from servesim.systems.preserve.length_data import (LengthDataError, SynonymReplacer, bucket_plan,  # noqa: E402
                                                   oversample, split)
from servesim.systems.preserve.length_predictor import (LengthPredictor, LengthSettings, length_metrics,  # noqa: E402
                                                        museve_buckets)


def test_bucket_plan_arithmetic():
    # 4 buckets of width 100 on [0, 400): counts 8, 3, 0, 1 -> S = 8, mu*S = 2 (mu = 0.25)
    labels = [1, 5, 10, 20, 30, 50, 70, 99, 100, 150, 199, 399]
    plan = bucket_plan(labels, n_buckets=4, mu=0.25, hi=400)
    assert plan["count"].tolist() == [8, 3, 0, 1]
    assert plan["extra"].tolist() == [0, 0, 0, 1]          # only bucket 3 is below 2; empty stays empty
    assert plan["target"].tolist() == [8, 3, 0, 2]
    # mu*S not an integer: ceil(0.25 * 9) = 3
    plan = bucket_plan([1] * 9 + [150], n_buckets=4, mu=0.25, hi=400)
    assert plan["extra"].tolist() == [0, 2, 0, 0]
    with pytest.raises(LengthDataError):
        bucket_plan([], 4)


def _replacer():
    # vocabulary: pairs of near-identical embeddings (each word's neighbour is its partner)
    words = ["alpha", "alphas", "beta", "betas", "gamma", "gammas", "delta", "deltas"]
    rng = np.random.default_rng(0)
    base = rng.normal(size=(4, 8))
    emb = np.repeat(base, 2, axis=0) + 0.01 * rng.normal(size=(8, 8))
    vocab = {w: i for i, w in enumerate(words)} | {"##x": 8, "[CLS]": 9}
    emb = np.vstack([emb, rng.normal(size=(2, 8))])
    return SynonymReplacer(emb, vocab), words


def test_synonym_neighbours_and_replacement_rate():
    r, words = _replacer()
    assert r.neighbour("alpha") == "alphas" and r.neighbour("Betas") == "beta"
    assert r.neighbour("zzz") is None and r.neighbour("##x") is None
    text = " ".join(words[i % 8] for i in range(200))
    new, n, total = r.replace(text, 0.15, np.random.default_rng(1))
    changed = sum(a != b for a, b in zip(text.split(), new.split()))
    assert (n, total, changed) == (30, 200, 30)
    # ineligible words are never touched, so the count is capped by the eligible ones
    new, n, total = r.replace("alpha foo bar baz qux quux corge grault garply waldo", 0.5, np.random.default_rng(1))
    assert (n, total) == (1, 10) and new.startswith("alphas ")


def test_oversample_copies_keep_labels_and_are_augmented():
    r, words = _replacer()
    train = pd.DataFrame({"prompt": [" ".join(words)] * 9 + ["alpha beta gamma delta " * 5],
                          "output_tokens": [10] * 9 + [3000]})
    out, plan = oversample(train, r, n_buckets=4, mu=0.25, fraction=0.15, seed=0)
    copies = out[out["augmented"]]
    assert len(copies) == int(plan["extra"].sum()) == 2          # ceil(0.25 * 9) - 1
    assert (copies["output_tokens"] == 3000).all()
    assert (copies["prompt"] != train["prompt"].iloc[-1]).all()   # 3 of 20 words replaced
    a, _ = oversample(train, r, n_buckets=4, seed=0)
    assert a.equals(out)                                          # seeded


def test_split_7_3_is_seeded_and_disjoint():
    df = pd.DataFrame({"x": np.arange(100)})
    tr, te = split(df, 0.7, seed=3)
    assert (len(tr), len(te)) == (70, 30) and set(tr.x).isdisjoint(te.x)
    assert split(df, 0.7, seed=3)[0].equals(tr)


def test_museve_buckets_and_metrics():
    y = np.arange(1, 101, dtype=float)
    edges, med = museve_buckets(y)
    assert len(edges) == 4 and len(med) == 5
    assert med[0] == np.median(y[y < edges[0]])
    m = length_metrics([100, 200, 300, 400], [110, 260, 150, 400])
    assert m["mae"] == pytest.approx((10 + 60 + 150 + 0) / 4)
    assert (m["acc25_pct"], m["acc50_pct"], m["acc100_pct"]) == (50.0, 50.0, 75.0)


@pytest.fixture
def tiny_encoder(monkeypatch):
    """A 2-layer random BERT with a word-level tokenizer, in place of MiniLM."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import BertConfig, BertModel

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"w{i}" for i in range(40)]
    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    cfg = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)
    torch.manual_seed(0)
    model = BertModel(cfg, add_pooling_layer=False).eval()
    monkeypatch.setattr(lp_mod, "load_encoder", lambda: (model, tok, cfg))
    return model


def _toy_data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(n):
        k = int(rng.integers(1, 12))
        texts.append(" ".join(f"w{int(rng.integers(0, 40))}" for _ in range(k)))
        labels.append(30.0 * k)  # length grows with the prompt: learnable
    return texts, np.array(labels)


def test_prompt_tuning_trains_only_prompt_last_layer_and_head(tiny_encoder):
    texts, y = _toy_data()
    before = {k: v.clone() for k, v in tiny_encoder.state_dict().items()}
    lp = LengthPredictor(LengthSettings(mode="prompt_tuning", n_prompt=3, max_len=24, epochs=6, batch_size=8,
                                        lr=1e-3, head_lr=1e-2, label_scale=100.0))
    lp.fit(texts, y, "preserve")
    h = lp.loss_history["preserve"]
    assert h[-1] < h[0]
    model = lp._preserve_model
    after = model.encoder.state_dict()
    frozen = [k for k in after if not k.startswith("encoder.layer.1.")]
    assert all(torch.equal(after[k], before[k]) for k in frozen)                    # layers 0, embeddings
    assert any(not torch.equal(after[k], before[k]) for k in after if k.startswith("encoder.layer.1."))
    assert model.prompt.shape == (3, 16) and model.prompt.requires_grad
    pred = lp.predict(texts[:5])
    assert pred.shape == (5,) and ((pred >= 1) & (pred <= 4096)).all()
    # the soft prompt is in the input: the [CLS] state depends on it (a random change: a constant
    # shift would vanish in the embedding LayerNorm)
    ids, mask = lp_mod._pad(lp_mod.tokenize(lp.tok, texts[:2], 24, 3))
    with torch.no_grad():
        a = model(ids, mask)
        model.prompt.add_(torch.randn(model.prompt.shape, generator=torch.Generator().manual_seed(0)))
        assert not torch.allclose(a, model(ids, mask))


def test_same_seed_same_predictions_and_museve(tiny_encoder):
    texts, y = _toy_data()
    s = LengthSettings(mode="frozen", max_len=16, epochs=30, batch_size=16)
    a = LengthPredictor(s).fit(texts, y, "preserve").fit(texts, y, "museve")
    b = LengthPredictor(s).fit(texts, y, "preserve").fit(texts, y, "museve")
    assert np.array_equal(a.predict(texts), b.predict(texts))
    assert np.array_equal(a.predict(texts, "museve"), b.predict(texts, "museve"))
    assert set(a.predict(texts, "museve")) <= set(a.medians)
    assert a.loss_history["museve"][-1] < a.loss_history["museve"][0]


def test_share_encoder_reuses_the_model_and_only_a_compatible_cache(tiny_encoder, monkeypatch):
    """A predictor sharing another's encoder loads nothing, predicts what an unshared one predicts,
    and reads the other's cached states only where pooling and truncation agree."""
    texts, y = _toy_data()
    s = LengthSettings(mode="frozen", max_len=16, epochs=5, batch_size=16)
    own = LengthPredictor(s).fit(texts, y, "preserve")
    first = LengthPredictor(s).fit(texts, y, "preserve")
    monkeypatch.setattr(lp_mod, "load_encoder", lambda: pytest.fail("a shared encoder is loaded again"))
    shared = LengthPredictor(s).share_encoder(first).fit(texts, y, "preserve")
    assert shared._cache is first._cache and shared._base is first._base
    np.testing.assert_allclose(shared.predict(texts), own.predict(texts))
    mean = LengthPredictor(replace(s, pooling="mean")).share_encoder(first)
    assert mean._cache is not first._cache and not mean._cache
    assert not torch.allclose(mean.encode_cls(texts[:3]), first.encode_cls(texts[:3]))


def test_early_stopping_keeps_the_best_validation_epoch(tiny_encoder):
    texts, y = _toy_data(64)
    vt, vy = _toy_data(16, seed=1)
    s = LengthSettings(mode="prompt_tuning", n_prompt=2, max_len=24, epochs=15, batch_size=8, lr=3e-2,
                       head_lr=3e-1, patience=2)
    lp = LengthPredictor(s).fit(texts, y, "preserve", vt, vy)
    val, best = lp.val_history["preserve"], lp.best_epoch["preserve"]
    assert len(val) == len(lp.loss_history["preserve"]) <= 15
    assert best == int(np.argmin(val))
    # it stopped `patience` epochs after the best one, well before the cap (this seed: best epoch 3 of 5)
    assert len(val) == best + 1 + s.patience < 15
    # the weights kept are the best epoch's: their validation loss is the curve's minimum
    from servesim.systems.preserve.length_predictor import length_metrics

    assert length_metrics(vy, lp.predict(vt))["mae"] == pytest.approx(100.0 * min(val), rel=1e-4)
    # without a held-out split: exactly `epochs` epochs, no validation curve
    lp2 = LengthPredictor(replace(s, epochs=3)).fit(texts, y, "preserve")
    assert len(lp2.loss_history["preserve"]) == 3 and lp2.val_history["preserve"] == []


def test_museve_paper_recipe_unfreezes_the_encoder_then_trains_the_head(tiny_encoder):
    texts, y = _toy_data(48)
    before = {k: v.clone() for k, v in tiny_encoder.state_dict().items()}
    s = LengthSettings(mode="prompt_tuning", max_len=24, batch_size=8, museve_recipe="paper",
                       museve_epochs=(2, 3), museve_lr=(1e-3, 1e-3))
    lp = LengthPredictor(s).fit(texts, y, "museve", texts[:8], y[:8])
    after = lp._museve_model.encoder.state_dict()
    # phase 1 trains every encoder layer (embeddings and the first layer too, not only the last)
    for part in ("embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight"):
        assert not torch.equal(after[part], before[part]), part
    assert len(lp.loss_history["museve"]) == len(lp.val_history["museve"]) == 5
    assert set(lp.predict(texts, "museve")) <= set(lp.medians)
    # the last_layer reading leaves the first layer alone
    lp2 = LengthPredictor(replace(s, museve_recipe="last_layer", epochs=2)).fit(texts, y, "museve")
    assert torch.equal(lp2._museve_model.encoder.state_dict()["encoder.layer.0.attention.self.query.weight"],
                       before["encoder.layer.0.attention.self.query.weight"])
    with pytest.raises(LengthDataError, match="museve_recipe"):
        LengthSettings(museve_recipe="bert")


def test_holdout_is_seeded_disjoint_and_refuses_an_empty_fit_split():
    from servesim.systems.preserve.table2 import holdout

    df = pd.DataFrame({"prompt": [f"p{i}" for i in range(50)], "output_tokens": np.arange(50)})
    fit, val = holdout(df, 0.1, 3)
    assert len(val) == 5 and len(fit) == 45 and not set(fit.prompt) & set(val.prompt)
    assert holdout(df, 0.1, 3)[1].equals(val)
    assert len(holdout(df, 0.0, 3)[1]) == 0
    with pytest.raises(LengthDataError, match="leaves no training pairs"):
        holdout(df.iloc[:2], 0.9, 3)


def test_length_batching_covers_each_sample_once_with_less_padding():
    lengths = np.random.default_rng(3).integers(3, 500, 1000)
    draw = lambda how: [b.tolist() for b in LengthPredictor(LengthSettings(batching=how, batch_size=16))  # noqa: E731
                        ._batches(1000, torch.Generator().manual_seed(7), lengths)]
    rnd, srt = draw("random"), draw("length")
    assert sorted(i for b in srt for i in b) == list(range(1000))           # an epoch is a permutation
    assert draw("length") == srt                                             # seeded
    pad = lambda bs: sum(len(b) * max(lengths[b]) - lengths[b].sum() for b in bs)  # noqa: E731
    assert pad(srt) < 0.2 * pad(rnd)
    with pytest.raises(LengthDataError, match="batching"):
        LengthSettings(batching="sorted")


def test_prompt_tuning_predictions_keep_caller_order(tiny_encoder):
    texts, y = _toy_data(24)
    lp = LengthPredictor(LengthSettings(mode="prompt_tuning", n_prompt=2, max_len=24, epochs=1, batch_size=8,
                                        batching="length")).fit(texts, y, "preserve")
    full = lp.predict(texts)
    one_by_one = np.array([lp.predict([t])[0] for t in texts])
    assert np.allclose(full, one_by_one, rtol=1e-4, atol=1e-3)


def test_read_predictions_errors(tmp_path):
    from servesim.systems.preserve.table2 import read_predictions

    p = tmp_path / "length_predictions.csv"
    with pytest.raises(LengthDataError, match="no cached"):
        read_predictions(p)
    pd.DataFrame({"label_set": ["first"], "conv_id": ["a"]}).to_csv(p, index=False)
    with pytest.raises(LengthDataError, match="missing columns"):
        read_predictions(p)


def test_table2_scales_resolve_and_validate():
    from dataclasses import replace

    from servesim.systems.preserve.table2 import SCALES, Table2Settings

    full, paper = SCALES["full"], SCALES["paper"]
    # full: the paper's method (prompt tuning, 20 soft tokens, 3 epochs, length batching) on a CPU
    # budget; the all-turn set has its own caps
    # (early stopping on a held-out 10 %, at most 10 epochs)
    assert (full.mode, full.n_prompt, full.max_len, full.museve_recipe) == ("prompt_tuning", 20, 256, "paper")
    assert (full.epochs, full.val_fraction, full.patience) == (10, 0.1, 2)
    assert full.caps("first") == (2000, 2000) and full.caps("all") == (1000, 1000)
    assert full.label_sets == ("first", "all")
    # paper: §4.2/§5.2.2's setting, still available by name; -1 = the all-turn set shares the caps
    assert (paper.mode, paper.max_len, paper.max_train) == ("prompt_tuning", 512, 7800)
    assert paper.caps("all") == paper.caps("first") == (7800, 3300)
    assert replace(paper, max_train_all=None).caps("all") == (None, 3300)
    base = dict(mode="prompt_tuning", max_conversations=None, max_train=10, max_test=10, max_len=64,
                epochs=1, batch_size=4)
    for bad in (dict(max_train=0), dict(max_train_all=0), dict(max_test_all=-2), dict(max_len=22),
                dict(epochs=0), dict(label_sets=("first", "second")), dict(label_sets=()), dict(val_fraction=0.5)):
        with pytest.raises(LengthDataError):
            Table2Settings(**{**base, **bad})


def test_table2_cli_knows_paper_scale():
    from servesim.systems.preserve.table2 import main

    with pytest.raises(SystemExit) as e:
        main(["--scale", "nope", "-o", "unused"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:   # argparse accepts 'paper'; --help exits 0 before running
        main(["--scale", "paper", "--help"])
    assert e.value.code == 0


def test_natural_reading_is_the_regressor_on_the_plain_split_and_moves_no_other_row(tiny_encoder, monkeypatch):
    """Table 2's `natural` reading adds row preserve_natural: PreServe's regressor trained on the
    training pairs as they are (no oversampled copies); the paper's rows are the same with or
    without it."""
    from servesim.systems.preserve import table2 as T

    texts, labels = _toy_data(80)
    pairs = pd.DataFrame({"prompt": texts, "response": texts, "prompt_tokens": [len(t.split()) for t in texts],
                          "output_tokens": labels.astype(int), "conv_id": [f"c{i}" for i in range(80)], "turn": 0})
    monkeypatch.setattr(T, "sharegpt_pairs", lambda mode, n=None: pairs)
    monkeypatch.setattr(T, "make_replacer", lambda lp: None)   # the toy vocabulary has no whole words
    base = T.Table2Settings(mode="frozen", max_conversations=None, max_train=None, max_test=None, max_len=32,
                            epochs=3, batch_size=8, label_sets=("first",))
    rows0, pred0, _ = T.run_label_set("first", base)
    rows1, pred1, info = T.run_label_set("first", replace(base, readings=("natural",)))
    assert [r["method"] for r in rows1] == ["preserve", "museve", "preserve_natural", "train_median", "knn_reference"]
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("train_s", "latency_ms")} for r in rows]  # noqa: E731
    assert strip(rows0) == strip([r for r in rows1 if r["method"] != "preserve_natural"])
    pd.testing.assert_frame_equal(pred0, pred1.drop(columns="pred_preserve_natural"))
    nat = next(r for r in rows1 if r["method"] == "preserve_natural")
    assert nat["n_train"] == nat["n_train_original"] == len(T.split(pairs, base.train_fraction, base.seed)[0])
    # the same predictor, fitted by hand on the plain split, predicts the same
    train, test = T.split(pairs, base.train_fraction, base.seed)
    ls = LengthSettings(mode="frozen", n_prompt=base.n_prompt, max_len=32, epochs=3, batch_size=8, lr=base.lr,
                        head_lr=base.head_lr, seed=base.seed)
    hand = LengthPredictor(ls).fit(train["prompt"].tolist(), train["output_tokens"].to_numpy(), "preserve")
    np.testing.assert_allclose(pred1["pred_preserve_natural"], hand.predict(test["prompt"].tolist(), "preserve"))
    assert len(info["natural"]["loss_history"]) == 3
    with pytest.raises(LengthDataError, match="readings"):
        replace(base, readings=("oversampled",))


def test_device_is_validated_and_cuda_without_a_gpu_is_a_clear_error(tiny_encoder):
    with pytest.raises(LengthDataError, match="device='tpu'"):
        LengthSettings(device="tpu")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: test_cuda_path_matches_the_cpu_path runs instead")
    texts, y = _toy_data(16)
    with pytest.raises(LengthDataError, match="sees no CUDA device"):
        LengthPredictor(LengthSettings(mode="frozen", max_len=16, epochs=1, device="cuda")).fit(texts, y)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the device path)")
def test_cuda_path_matches_the_cpu_path(tiny_encoder):
    """On a GPU, prompt tuning and mu-Serve's schedule train, repeat bit for bit, and predict what
    the CPU path predicts up to float rounding (the kernels sum in other orders)."""
    texts, y = _toy_data(48)
    vt, vy = _toy_data(8, seed=1)
    preds = {}
    for dev in ("cpu", "cuda", "cuda"):
        s = LengthSettings(mode="prompt_tuning", n_prompt=2, max_len=24, epochs=3, batch_size=8, device=dev)
        lp = LengthPredictor(s).fit(texts, y, "preserve", vt, vy).fit(texts, y, "museve", vt, vy)
        preds.setdefault(dev, []).append((lp.predict(texts), lp.predict(texts, "museve")))
    (c0, c1), = preds["cpu"]
    (g0, g1), (r0, r1) = preds["cuda"]
    assert np.array_equal(g0, r0) and np.array_equal(g1, r1)
    np.testing.assert_allclose(g0, c0, rtol=1e-3)


def test_exported_pairs_round_trip_and_feed_table2(tmp_path, monkeypatch):
    """length_data --export writes what sharegpt_pairs returns (less the response text) and
    Table 2 reads it back with pairs_dir, the same rows in the same order (hence the same split)."""
    import json

    from servesim.systems.preserve import length_data as D
    from servesim.systems.preserve import table2 as T

    convs = [{"id": f"c{i}", "conversations": [{"from": "human", "value": f"question {i} " * (1 + i % 5)},
                                                {"from": "gpt", "value": "answer " * (3 + 7 * i)}]} for i in range(30)]
    src = tmp_path / "sharegpt.json"
    src.write_text(json.dumps(convs))
    assert D.main(["--export", str(tmp_path / "pairs"), "--modes", "first", "--sharegpt", str(src)]) == 0
    got = D.read_pairs(tmp_path / "pairs", "first")
    want = D.sharegpt_pairs("first", None, src)
    pd.testing.assert_frame_equal(got, want[list(D.PAIRS_COLUMNS)])
    # table2 reads the exported file, not the package, and refuses a conversation cap it cannot apply
    seen = []
    monkeypatch.setattr(T, "read_pairs", lambda d, mode: seen.append((str(d), mode)) or got)
    monkeypatch.setattr(T, "sharegpt_pairs", lambda *a, **k: pytest.fail("the ShareGPT package was read"))
    monkeypatch.setattr(T, "make_replacer", lambda lp: (_ for _ in ()).throw(RuntimeError("past the data")))
    s = replace(T.SCALES["test"], max_conversations=None, pairs_dir=str(tmp_path / "pairs"))
    with pytest.raises(RuntimeError, match="past the data"):   # stopped once the pairs were read and split
        T.run_label_set("first", s)
    assert seen == [(str(tmp_path / "pairs"), "first")]
    with pytest.raises(LengthDataError, match="max_conversations=120 cannot apply"):
        T.run_label_set("first", replace(T.SCALES["test"], pairs_dir=str(tmp_path / "pairs")))


def test_read_pairs_errors_name_the_file_and_row(tmp_path):
    from servesim.systems.preserve import length_data as D

    with pytest.raises(LengthDataError, match="no exported pairs"):
        D.read_pairs(tmp_path, "first")
    f = D.pairs_file(tmp_path, "first")
    pd.DataFrame({"conv_id": ["a"], "turn": [0], "prompt": ["x"], "prompt_tokens": [1]}).to_parquet(f)
    with pytest.raises(LengthDataError, match=r"sharegpt_pairs_first.parquet: missing columns \['output_tokens'\]"):
        D.read_pairs(tmp_path, "first")
    pd.DataFrame({"conv_id": ["a", "b"], "turn": [0, 0], "prompt": ["x", "y"], "prompt_tokens": [1, 1],
                  "output_tokens": [5, 5000]}).to_parquet(f)
    with pytest.raises(LengthDataError, match="row 1: output_tokens 5000 outside"):
        D.read_pairs(tmp_path, "first")
