import numpy as np
import pandas as pd
import pytest

import servesim.perf as P
from servesim.perf import measurements as M
from servesim.perf.fitted import FittedStepTime, fit
from servesim.perf.table import Grid, TableStepTime
from tests.data_marks import needs_aegaeon_profiles, needs_data



needs_sageserve = needs_data("sageserve/perf_model.csv", "sageserve data")
needs_aegaeon = needs_aegaeon_profiles
needs_vidur = needs_data("vidur-profiling/compute/a100", "vidur profiles")


TRUE = dict(a_p=0.006, a_d=0.008, b_pt=2e-5, c_pc=3e-10, b_ds=1e-4, c_dc=8e-8)


def _shapes(n=400, seed=0):
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, n)  # prefill-only, decode-only, mixed
    L = rng.integers(16, 4096, n).astype(float)
    B = rng.integers(1, 8, n).astype(float)
    S = rng.integers(1, 200, n).astype(float)
    C = rng.integers(16, 4096, n).astype(float)
    pt = np.where(kind != 1, L * B, 0.0)
    pc = np.where(kind != 1, L * L * B, 0.0)
    ds = np.where(kind != 0, S, 0.0)
    dc = np.where(kind != 0, S * C, 0.0)
    return pt, pc, ds, dc


def _table(model, n=400, noise=0.0, seed=0, **meta):
    pt, pc, ds, dc = _shapes(n, seed)
    y = model.step_time(pt, pc, ds, dc)
    y = y * (1 + noise * np.random.default_rng(seed + 1).standard_normal(n))
    df = pd.DataFrame(dict(prefill_tokens=pt, prefill_ctx=pc, decode_seqs=ds, decode_ctx=dc, step_s=y, **meta))
    return M.validate(df)


def test_fit_recovers_known_coefficients():
    truth = FittedStepTime(**TRUE)
    m = fit(_table(truth))
    for k, v in TRUE.items():
        assert getattr(m, k) == pytest.approx(v, rel=1e-6), k


def test_quadratic_seqs_form_recovers_its_term_and_zero_term_is_bit_identical():
    # the form fits a per-sequence cost growing with the batch; the linear form cannot (issue 33)
    truth = FittedStepTime(**TRUE, b_ds2=3e-6)
    tab = _table(truth)
    m = fit(tab, form="quadratic-seqs")
    assert m.b_ds2 == pytest.approx(3e-6, rel=1e-6) and m.meta["form"] == "quadratic-seqs"
    lin = fit(tab)
    assert lin.b_ds2 == 0.0 and "b_ds2" not in lin.meta["features"]
    X = [tab[c].to_numpy(float) for c in M.AGGREGATES]
    assert np.max(np.abs(m.step_time(*X) / tab.step_s - 1)) < 1e-9
    assert np.max(np.abs(lin.step_time(*X) / tab.step_s - 1)) > 0.05
    # scalar and vector paths agree, and a zero b_ds2 leaves the linear arithmetic bit for bit
    assert [m.step_time(*(v[i] for v in X)) for i in range(20)] == list(m.step_time(*X)[:20])
    plain = FittedStepTime(**TRUE)
    for i in range(20):
        a, b, c, d = (float(v[i]) for v in X)
        expect = (TRUE["a_p"] if a > 0 else TRUE["a_d"]) + TRUE["b_pt"] * a + TRUE["c_pc"] * b + TRUE["b_ds"] * c \
            + TRUE["c_dc"] * d
        assert plain.step_time(a, b, c, d) == expect
    with pytest.raises(ValueError, match="form"):
        fit(tab, form="cubic")


def test_quadratic_ctx_form_recovers_the_context_square_where_quadratic_seqs_cannot():
    """``quadratic-ctx``: b_ds2 and c_dc2 (attention slowing as the batch's KV grows, issue 33)
    recovered from a table that follows them; quadratic-seqs leaves c_dc2 out and misses; the
    scalar and vector paths agree."""
    truth = FittedStepTime(**TRUE, b_ds2=3e-6, c_dc2=2e-14)
    tab = _table(truth)
    m = fit(tab, form="quadratic-ctx")
    assert m.c_dc2 == pytest.approx(2e-14, rel=1e-6) and m.b_ds2 == pytest.approx(3e-6, rel=1e-6)
    seqs = fit(tab, form="quadratic-seqs")
    assert seqs.c_dc2 == 0.0 and "c_dc2" not in seqs.meta["features"]
    X = [tab[c].to_numpy(float) for c in M.AGGREGATES]
    assert np.max(np.abs(m.step_time(*X) / tab.step_s - 1)) < 1e-9
    assert np.max(np.abs(seqs.step_time(*X) / tab.step_s - 1)) > 0.01
    assert [m.step_time(*(v[i] for v in X)) for i in range(20)] == list(m.step_time(*X)[:20])


def test_fit_recovers_tp_communication_terms():
    base = dict(TRUE, k_tp_tok=4e-6, k_tp_step=1e-3)
    parts = [_table(FittedStepTime(**base, tp=tp), seed=tp, tp=tp) for tp in (1, 2, 4, 8)]
    m = fit(pd.concat(parts, ignore_index=True), tp=4)
    assert m.k_tp_tok == pytest.approx(4e-6, rel=1e-5) and m.k_tp_step == pytest.approx(1e-3, rel=1e-5)
    assert m.tp == 4


def test_fit_with_noise_is_close_and_nonnegative():
    m = fit(_table(FittedStepTime(**TRUE), n=2000, noise=0.02))
    assert all(v >= 0 for v in m.coefficients().values())
    assert m.a_d == pytest.approx(TRUE["a_d"], rel=0.05) and m.b_ds == pytest.approx(TRUE["b_ds"], rel=0.05)


def test_relative_to_fit_weighting_fits_the_mean_where_relative_fits_below_it():
    """Multiplicative noise skewed to slow steps (lognormal, mean 1): weighing each row's error by
    its measured time (``relative``) fits below the batch's mean step time; by the fit's own
    prediction (``relative-to-fit``) fits the mean (total predicted time = total measured); the
    absolute relative error (``median``) fits the median step, exp(-sigma^2/2) of the mean, and
    scores the lowest median error; without noise every weighting recovers the truth; an unknown
    weighting is named."""
    truth = FittedStepTime(**TRUE)
    pt, pc, ds, dc = _shapes(4000, 3)
    rng = np.random.default_rng(4)
    mean = truth.step_time(pt, pc, ds, dc)
    sigma = 0.3
    y = mean * rng.lognormal(-sigma**2 / 2, sigma, len(mean))  # E[noise] = 1
    tab = M.validate(pd.DataFrame(dict(prefill_tokens=pt, prefill_ctx=pc, decode_seqs=ds, decode_ctx=dc, step_s=y)))
    X = [tab[c].to_numpy(float) for c in M.AGGREGATES]
    rel, to_fit = fit(tab), fit(tab, weighting="relative-to-fit")
    total = lambda m: float(m.step_time(*X).sum() / mean.sum())  # noqa: E731
    assert total(rel) < 0.97  # E[1/y]/E[1/y^2]-weighted: below the mean by about sigma^2
    assert total(to_fit) == pytest.approx(1.0, abs=0.02) and to_fit.meta["weighting"] == "relative-to-fit"
    med = fit(tab, weighting="median")
    assert total(med) == pytest.approx(np.exp(-sigma**2 / 2), abs=0.02)
    assert float(np.median(y / med.step_time(*X))) == pytest.approx(1.0, abs=0.02)
    ape = lambda m: float(np.median(np.abs(m.step_time(*X) / y - 1)))  # noqa: E731
    assert ape(med) < min(ape(rel), ape(to_fit))
    clean = _table(truth)
    for w in ("relative", "relative-to-fit", "absolute", "median"):
        m = fit(clean, weighting=w)
        assert all(getattr(m, k) == pytest.approx(v, rel=1e-6) for k, v in TRUE.items()), w
    assert fit(tab, weighting="relative-to-fit").coefficients() == to_fit.coefficients()  # deterministic
    with pytest.raises(ValueError, match="weighting must be one of"):
        fit(tab, weighting="quantile")


def _backends():
    out = [P.LinearStepTime(), FittedStepTime(**TRUE), P.RooflineStepTime("llama-2-70b", "a100-80gb", tp=4),
           P.RooflineStepTime("llama-4-scout", "h100-80gb", tp=8, pp=2),
           TableStepTime(_table(FittedStepTime(**TRUE)).query("decode_seqs == 0 or prefill_tokens == 0"))]
    from servesim.perf.engine_overhead import EngineOverheadStepTime
    from servesim.perf.splitwise_sim import SplitwiseSimStepTime

    out.append(EngineOverheadStepTime(FittedStepTime(**TRUE), k_prefill=0.8, k_decode=1.1, overhead_s=1e-3,
                                      seq_overhead_s=4e-5))
    rows = pd.DataFrame({"prompt_size": [128, 256, 512, 1024, 128], "batch_size": [1, 1, 1, 1, 8],
                         "prompt_time": [0.05, 0.07, 0.12, 0.22, 0.16], "token_time": [0.04, 0.041, 0.043, 0.047, 0.045]})
    out.append(SplitwiseSimStepTime(rows))
    return out


@pytest.mark.parametrize("i", range(7))
def test_vectorised_equals_scalar_bit_for_bit(i):
    m = _backends()[i]
    pt, pc, ds, dc = _shapes(300, seed=7)
    pt[:3] = 0
    ds[:3] = 0  # empty steps
    v = m.step_time(pt, pc, ds, dc)
    s = np.array([m.step_time(*x) for x in zip(pt.tolist(), pc.tolist(), ds.tolist(), dc.tolist())])
    assert v.dtype == float and np.array_equal(v, s)  # exact, not approx
    assert (v[:3] == 0).all() and (v[3:] > 0).all()
    # numpy scalars behave like Python scalars
    assert m.step_time(np.int64(pt[5]), np.float64(pc[5]), np.int64(ds[5]), dc[5]) == v[5]


def test_grid_exact_at_points_and_bilinear_inside():
    g = Grid.from_points([1, 1, 2, 2], [10, 20, 10, 20], [1.0, 3.0, 5.0, 7.0])
    for x, y, t in [(1, 10, 1.0), (1, 20, 3.0), (2, 10, 5.0), (2, 20, 7.0)]:
        assert g.scalar(x, y) == t and g.vector(np.array([x], float), np.array([y], float))[0] == t
    assert g.scalar(1.5, 15) == pytest.approx(4.0)
    assert np.isnan(g.scalar(3, 10)) and np.isnan(g.scalar(1.5, 25))


def test_grid_hole_is_outside():
    g = Grid.from_points([1, 1, 2], [10, 20, 10], [1.0, 3.0, 5.0])  # (2, 20) not measured
    assert g.scalar(2, 10) == 5.0 and g.scalar(1, 15) == 2.0  # edges with measured ends are inside
    assert np.isnan(g.scalar(1.5, 15))


def _grid_table():
    rows = []
    for L in (128, 256, 512):
        for B in (1, 2, 4):
            rows.append((L * B, L * L * B, 0, 0, 0.01 + 1e-5 * L * B))
            rows.append((0, 0, B, B * L, 0.008 + 1e-4 * B))
    return M.validate(pd.DataFrame(rows, columns=list(M.COLUMNS)))


def test_table_exact_at_grid_points_and_fallback_counted():
    df = _grid_table()
    t = TableStepTime(df)
    X = [df[c].to_numpy(float) for c in M.AGGREGATES]
    assert np.array_equal(t.step_time(*X), df.step_s.to_numpy())
    assert t.out_of_grid == 0 and t.calls == len(df)
    # outside: a longer prompt, a bigger batch, a chunk with long prior context (B < 1)
    outside = [(8192, 8192.0**2, 0, 0), (0, 0, 64, 64 * 256), (128, 128 * 4096, 0, 0)]
    for k, q in enumerate(outside, start=1):
        v = t.step_time(*q)
        assert t.out_of_grid == k and v == t.fallback.step_time(*q) and v > 0
    t.reset_counters()
    arr = [np.array(c, float) for c in zip(*outside, (256, 256.0 * 256, 0, 0))]
    v = t.step_time(*arr)
    assert t.out_of_grid == 3 and t.calls == 4
    assert v[3] == pytest.approx(0.01 + 1e-5 * 256)
    assert t.inside(*arr).tolist() == [False, False, False, True] and t.out_of_grid == 3


def test_table_mixed_step_composes_prefill_and_decode():
    df = _grid_table()
    t = TableStepTime(df)
    pre = t.step_time(256, 256 * 256, 0, 0)
    dec = t.step_time(0, 0, 2, 2 * 256)
    assert t.step_time(256, 256 * 256, 2, 2 * 256) == pytest.approx(pre + dec - t.fallback.a_d)


def test_measurement_validation_names_row_and_column(tmp_path):
    df = _grid_table()
    df.loc[3, "step_s"] = -1
    with pytest.raises(M.MeasurementError, match=r"row 3: column step_s"):
        M.validate(df, "x.csv")
    with pytest.raises(M.MeasurementError, match=r"bad.csv: missing column\(s\) decode_ctx"):
        p = tmp_path / "bad.csv"
        _grid_table().drop(columns="decode_ctx").to_csv(p, index=False)
        M.read(p)


def test_measurement_tp_must_be_whole(tmp_path):
    df = _grid_table()
    df["tp"] = 1.0
    df.loc[2, "tp"] = 1.5  # was silently cut to 1
    with pytest.raises(M.MeasurementError, match=r"x.csv: row 2: column tp must be a whole number"):
        M.validate(df, "x.csv")
    df.loc[2, "tp"] = 2.0  # a whole float is fine
    assert M.validate(df, "x.csv").tp.tolist()[:3] == [1, 1, 2]


def test_model_file_syntax_error_and_duplicate_key_name_the_file(tmp_path):
    import servesim.perf as P
    from servesim.perf.registry import load_model_file

    bad = tmp_path / "m.yaml"
    bad.write_text("backend: fitted\ncoefficients: {c0: 1\n")
    with pytest.raises(P.BackendError, match=r"m.yaml: not valid YAML: line"):
        load_model_file(bad)
    bad.write_text("backend: fitted\nbackend: roofline\n")
    with pytest.raises(P.BackendError, match=r"m.yaml: line 2: duplicate key 'backend'"):
        load_model_file(bad)


def test_metrics():
    assert M.mape([1, 2], [1.1, 1.8]) == pytest.approx(10.0)
    assert M.r2([1, 2, 3], [1, 2, 3]) == 1.0


def test_registry_and_model_files(tmp_path):
    m = P.build({"backend": "fitted", "coefficients": TRUE})
    p = P.save_model_file(m, tmp_path / "m.yaml")
    m2 = P.build(str(p))
    assert m2.step_time(100, 1e4, 3, 300) == m.step_time(100, 1e4, 3, 300)
    r = P.build("roofline", model="llama-2-7b", hardware="a10")
    r2 = P.build(str(P.save_model_file(r, tmp_path / "r.yaml")))
    assert r2.step_time(0, 0, 8, 8000) == r.step_time(0, 0, 8, 8000)
    with pytest.raises(P.BackendError, match="unknown step-time backend 'nope'"):
        P.build("nope")
    with pytest.raises(P.BackendError, match="unknown option"):
        P.build({"backend": "roofline", "eff": 1}, model="llama-2-7b", hardware="a10")
    with pytest.raises(P.BackendError, match="needs model="):
        P.build("roofline")


def test_roofline_scales_sensibly():
    a = P.RooflineStepTime("llama-2-70b", "a100-80gb", tp=8)
    h = P.RooflineStepTime("llama-2-70b", "h100-80gb", tp=8)
    assert h.step_time(0, 0, 32, 32 * 1000) < a.step_time(0, 0, 32, 32 * 1000)  # more bandwidth
    assert a.step_time(4096, 4096**2, 0, 0) > a.step_time(1024, 1024**2, 0, 0)
    small = P.RooflineStepTime("llama-2-7b", "a100-80gb")
    assert small.step_time(0, 0, 1, 100) < a.step_time(0, 0, 1, 100) * 8


@needs_aegaeon
def test_aegaeon_table_backend_exact_on_its_profiles():
    from servesim.perf import sources

    df = sources.aegaeon("qwen2_5_7b", "H800")
    m = P.build("aegaeon", model="qwen2.5-7b", hardware="h800")
    assert np.array_equal(m.step_time(*(df[c].to_numpy(float) for c in M.AGGREGATES)), df.step_s.to_numpy())
    assert m.out_of_grid == 0


@needs_sageserve
def test_splitwise_units():
    from servesim.perf import sources

    d = sources.splitwise("perf_model.csv", "llama-2-70b", "a100-80gb", 8)
    pre = d[(d.decode_seqs == 0) & (d.prefill_tokens == 512)].step_s.median()
    assert 0.08 < pre < 0.11  # 94 ms in the file (ms -> s)
    d3 = sources.splitwise("Llama-3.1-8B-tp-2.csv", "llama-3.1-8b", "a100-80gb", 2)
    dec = d3[d3.decode_seqs == 1].step_s.median()
    assert 0.005 < dec < 0.02  # whole-decode seconds / tokens -> ~9 ms per iteration


@needs_vidur
def test_vidur_composition_counts_out_of_grid():
    m = P.build("vidur", model="llama-2-7b", hardware="a100-80gb")
    assert m.step_time(0, 0, 8, 8000) > 0 and m.out_of_grid == 0
    m.step_time(100000, 1e9, 0, 0)
    assert m.out_of_grid == 1


def test_cached_is_exact_and_counts_hits():
    inner = P.RooflineStepTime("llama-2-7b", "a100-80gb")
    c = P.build({"backend": "roofline", "cache": True}, model="llama-2-7b", hardware="a100-80gb")
    for args in [(100, 1e4, 0, 0), (0, 0, 8, 4000), (100, 1e4, 0, 0)]:
        assert c.step_time(*args) == inner.step_time(*args)
    assert c.hits == 1
    v = np.array([0.0, 5.0])
    assert np.array_equal(c.step_time(v, v * v, v + 1, v * 9), inner.step_time(v, v * v, v + 1, v * 9))


def test_grid_line_split_holds_out_interior_lines():
    from servesim.perf.report import grid_line_split

    df = _grid_table()
    tr, te = grid_line_split(df)
    assert len(tr) + len(te) == len(df) and len(te) > 0
    t = TableStepTime(tr)
    t.step_time(*(te[c].to_numpy(float) for c in M.AGGREGATES))
    assert t.out_of_grid == 0  # held-out lines lie between training lines


@needs_sageserve
@needs_aegaeon
@needs_vidur
@pytest.mark.parametrize("spec,model,hw,tp", [("splitwise", "llama-2-70b", "a100-80gb", 8), ("aegaeon", "qwen2.5-7b", "h800", 1),
                                              ("vidur", "llama-2-7b", "a100-80gb", 1), ("vidur", "llama-2-70b", "h100-80gb", 4)])
def test_data_backends_vectorised_equals_scalar(spec, model, hw, tp):
    m = P.build(spec, model=model, hardware=hw, tp=tp)
    pt, pc, ds, dc = _shapes(300, seed=3)
    v = m.step_time(pt, pc, ds, dc)
    n_vec = m.out_of_grid
    s = np.array([m.step_time(*x) for x in zip(pt.tolist(), pc.tolist(), ds.tolist(), dc.tolist())])
    assert np.array_equal(v, s) and m.out_of_grid == 2 * n_vec


def test_roofline_pipeline_interval():
    one = P.RooflineStepTime("llama-2-70b", "h100-80gb", tp=4, pp=1)
    two = P.RooflineStepTime("llama-2-70b", "h100-80gb", tp=4, pp=2)
    shape = (0, 0, 64, 64 * 1000)
    assert two.step_time(*shape) > one.step_time(*shape)  # latency: all stages + a hand-off
    assert two.pipeline_interval(*shape) < 0.6 * two.step_time(*shape)  # a new step every ~half
    assert one.pipeline_interval(*shape) == one.step_time(*shape)


@needs_aegaeon
def test_aegaeon_reader_drops_capped_profiles():
    from servesim.perf import sources

    kept = sources.aegaeon("llama2_7b", "H800")
    raw = sources.aegaeon("llama2_7b", "H800", filter_invalid=False)
    assert len(raw) > len(kept)
    assert kept.prefill_tokens.max() <= 4096  # 4k-context model: steps above the cap were capped
    dec = kept[kept.decode_seqs > 0]
    assert (dec.decode_ctx / dec.decode_seqs).max() < 4096
    bs1 = dec[dec.decode_seqs == 1].step_s.median()
    assert dec.step_s.min() > 0.5 * bs1  # no sub-millisecond "decodes" left
