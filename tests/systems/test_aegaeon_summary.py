"""One output contract: the Aegaeon pool and ServerlessLLM write the standard request table
(``REQUEST_COLUMNS``) and ``servesim.metrics.summarize`` reads it.

What the summary and the sweep's own numbers share, and where they differ by definition:

- TTFT / E2E / TPOT / ITL: the summary's percentiles over completed requests are ``numpy.percentile``
  of the per-request times read straight off each request's token times, and the sweep's
  ``ttft_p50_s`` / ``ttft_p90_s`` (over non-failed requests) are its median / p90.
- Counts: the summary's ``failed`` is the sweep's ``n_failed`` (ServerlessLLM's 15-s failure is the
  standard ``timeout`` state).
- SLO attainment: the sweep's ``attainment_pct`` is the artifact's ``compute_slo`` (per request,
  partial credit after a late token, failed = 0, averaged over requests); the summary's
  ``token_slo_attainment`` is the share of requested tokens that met ``arrival + TTFT + k * TBT``
  (tokens weighted, no re-basing, tokens of failed requests late) and its ``slo_attainment`` the
  share of requests with TTFT and *mean* TPOT within bounds. The aggregates differ by definition;
  what is the same is the per-request event "every token met its buffered deadline": the
  artifact's attainment of a request is 1 exactly when the summary of that request alone has token
  attainment 1, and a failed request is 0 in both.
"""

import numpy as np
import pytest

from tests.data_marks import aegaeon_market, needs_aegaeon_profiles


needs_profiles = needs_aegaeon_profiles


def workload(n_models=12, rate=0.5, duration=30.0, seed=3):
    return aegaeon_market(n_models, rate, duration, seed)


#: the pool with one prefill and one decode GPU per node (some tokens late), ServerlessLLM on 4
#: workers (a third of the requests time out)
RUNS = {"aegaeon": dict(prefill_per_node=1, decode_per_node=1), "sllm": dict(sllm_workers=4)}


@pytest.fixture(scope="module", params=list(RUNS))
def run(request):
    from servesim.systems.aegaeon import Settings, simulate
    from servesim.systems.aegaeon.simulate import standard_summary

    s = Settings(**RUNS[request.param])
    wl = workload()
    res = simulate(request.param, wl, s)
    return request.param, s, wl, res, standard_summary(res, request.param, s)


@needs_profiles
def test_request_table_is_the_standard_one(run):
    from servesim.engine.records import check_request_table
    from servesim.sim.request_log import REQUEST_COLUMNS

    system, s, wl, res, summ = run
    t = res.requests
    check_request_table(t, wl)
    assert list(t.columns[:len(REQUEST_COLUMNS)]) == list(REQUEST_COLUMNS)
    assert {c: str(t[c].dtype) for c in REQUEST_COLUMNS} == REQUEST_COLUMNS
    fin = (t.state == "finished").to_numpy()
    first = np.array([ts[0] if len(ts) else np.nan for ts in t.token_times])
    assert np.array_equal(t.ttft_s, first - t.arrival_s, equal_nan=True)
    assert np.array_equal(t.e2e_s[fin], t.finish_s[fin] - t.arrival_s[fin]) and t.e2e_s[~fin].isna().all()
    assert np.array_equal(t.scheduled_s, t.prefill_start_s, equal_nan=True)
    # the columns the figures read are still there
    from servesim.systems.aegaeon.sweep import REQUEST_FIELDS

    assert set(REQUEST_FIELDS) <= set(t.columns) and "token_times" in t
    if system == "sllm":
        assert set(t.state) == {"finished", "timeout"}
        assert (t.reason[t.state == "timeout"].str.contains("15 s")).all()
    else:
        assert set(t.state) == {"finished"} and (t.instance.str.match(r"n\dd\d")).all()


@needs_profiles
def test_summary_latencies_are_the_requests_own(run):
    from servesim.metrics.latency import PERCENTILES

    system, s, wl, res, summ = run
    t = res.requests
    a = summ["all"]
    fin = (t.state == "finished").to_numpy()
    ts = [np.asarray(x) for x, f in zip(t.token_times, fin) if f]
    arr = t.arrival_s.to_numpy()[fin]
    ttft = np.array([x[0] for x in ts]) - arr
    e2e = np.array([x[-1] for x in ts]) - arr
    tpot = np.array([(x[-1] - x[0]) / (len(x) - 1) for x in ts if len(x) > 1])
    itl = np.concatenate([np.diff(x) for x in ts])
    for name, v in (("ttft", ttft), ("e2el", e2e), ("tpot", tpot), ("itl", itl)):
        want = np.percentile(v, PERCENTILES)
        got = [a[f"p{q}_{name}_s"] for q in PERCENTILES]
        assert got == pytest.approx(want, rel=1e-12, abs=0), name
        assert a[f"median_{name}_s"] == pytest.approx(np.median(v), rel=1e-12)
    assert a["requests"] == len(wl) and a["completed"] == int(fin.sum())
    # the sweep's own numbers (points.csv) from the same run
    paper = summ["paper"]
    assert a["failed"] == paper["n_failed"] and a["requests"] == paper["n_requests"]
    assert a["median_ttft_s"] == pytest.approx(paper["ttft_p50_s"], rel=1e-12)
    assert a["p90_ttft_s"] == pytest.approx(paper["ttft_p90_s"], rel=1e-12)
    assert summ["slo"] == {"ttft_s": s.ttft_s, "tpot_s": s.tbt_s, "e2el_s": None, "e2el_per_token_s": None}
    if system == "sllm":
        assert a["states"]["timeout"] == paper["n_failed"] > 0


@needs_profiles
def test_slo_attainment_agrees_where_it_means_the_same(run):
    """Per request: the artifact's attainment is 1 exactly when all its tokens met their buffered
    deadlines in the summary's reading, and 0 for a failed request (module docstring)."""
    from servesim.metrics import SLO, summarize
    from servesim.systems.aegaeon.request import tokens_table

    system, s, wl, res, summ = run
    t = res.requests
    rid = t.request_id.to_numpy()
    per = summarize(t, slo=SLO(ttft_s=s.ttft_s, tpot_s=s.tbt_s), tokens=tokens_table(t), by_tier=False,
                    groups={str(r): rid == r for r in rid})["groups"]
    tok = np.array([per[str(r)]["token_slo_attainment"] for r in rid])
    ae, at = t.attain_ae.to_numpy(), t.attain_token.to_numpy()
    assert np.array_equal(tok == 1.0, ae == 1.0) and np.array_equal(ae == 1.0, at == 1.0)
    failed = t.failed.to_numpy()
    assert (tok[failed] == 0).all() and (ae[failed] == 0).all()
    # and so the share of requests fully on time is the same number both ways
    assert np.mean(tok == 1.0) == np.mean(ae == 1.0)
    # the run exercises both outcomes: requests fully on time and requests with a late token or failed
    assert (ae == 1.0).any() and (ae < 1.0).any()
    # the whole-run token attainment is the per-request counts pooled (tokens weighted)
    want = sum(per[str(r)]["token_slo_attainment"] * o for r, o in zip(rid, t.output_tokens)) / t.output_tokens.sum()
    assert summ["all"]["token_slo_attainment"] == pytest.approx(want, rel=1e-12)
