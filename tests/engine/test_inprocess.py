"""The in-process replay's driver loop and step records, on a fake engine (the real vLLM path is
tested in test_inprocess_vllm.py where vLLM is installed)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from servesim.engine.client import ReplayOptions
from servesim.engine.inprocess import STEP_COLUMNS, BatchRecorder, _request_extras, drive, engine_kwargs
from servesim.engine.replay import write_outputs
from servesim.engine.server import EngineConfig
from servesim.workload import schema


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += max(s, 1e-3)


class FakeScheduler:
    """Whole prompts in one step, then one token per step; a preemption of request 1 at step 2."""

    def __init__(self, engine):
        self.e = engine

    def schedule(self):
        new, cached_ids, cached_k, sched = [], [], [], {}
        for eid, r in self.e.reqs.items():
            if r["done"]:
                continue
            if r["computed"] == 0:
                new.append(SimpleNamespace(req_id=eid, num_computed_tokens=0))
                sched[eid] = r["prompt"]
            else:
                cached_ids.append(eid)
                cached_k.append(r["computed"])
                sched[eid] = 1
        pre = {eid for eid in self.e.reqs if eid.startswith("1-") and self.e.n_steps == 2}
        return SimpleNamespace(scheduled_new_reqs=new, num_scheduled_tokens=sched, total_num_scheduled_tokens=sum(sched.values()),
                               scheduled_cached_reqs=SimpleNamespace(req_ids=cached_ids, num_computed_tokens=cached_k),
                               preempted_req_ids=pre)


class FakeEngine:
    def __init__(self, clock, step_s=0.01):
        self.clock, self.step_s, self.reqs, self.n_steps = clock, step_s, {}, 0
        self.engine_core = SimpleNamespace(engine_core=SimpleNamespace(scheduler=FakeScheduler(self)))

    def add_request(self, rid, prompt, params, arrival_time=None):
        eid = f"{rid}-abcd"
        self.reqs[eid] = {"ext": rid, "prompt": len(prompt["prompt_token_ids"]), "out": params, "computed": 0,
                          "emitted": 0, "done": False}
        return eid

    def has_unfinished_requests(self):
        return any(not r["done"] for r in self.reqs.values())

    def step(self):
        so = self.engine_core.engine_core.scheduler.schedule()
        self.clock.t += self.step_s
        outs = []
        for eid, n in so.num_scheduled_tokens.items():
            r = self.reqs[eid]
            r["computed"] += n
            r["emitted"] += 1
            r["done"] = r["emitted"] >= r["out"]
            outs.append(SimpleNamespace(request_id=r["ext"], finished=r["done"],
                                        outputs=[SimpleNamespace(token_ids=[7])]))
        self.n_steps += 1
        return outs


def test_requests_join_at_their_arrival_and_every_step_is_recorded(tmp_path):
    wl = schema.make(np.array([0.0, 0.0, 0.5]), np.array([10, 20, 30]), np.array([3, 2, 1]))
    clock = Clock()
    eng = FakeEngine(clock)
    records, steps, rec = drive(eng, wl, ReplayOptions(), sampling=lambda row: int(row.output_tokens),
                                clock=clock, sleep=clock.sleep)
    assert list(steps.columns) == list(STEP_COLUMNS)
    # step 0: both t=0 prompts prefill together (10 + 20 tokens, 10^2 + 20^2 context pairs)
    s0 = steps.iloc[0]
    assert (s0.prefill_tokens, s0.prefill_ctx, s0.decode_seqs, s0.new_requests, s0.waiting_added) == (30, 500, 0, 2, 2)
    # step 1: two decodes, at contexts 10 and 20 (k computed + the new token)
    s1 = steps.iloc[1]
    assert (s1.prefill_tokens, s1.decode_seqs, s1.decode_ctx) == (0, 2, 10 + 1 + 20 + 1)
    # the third request arrives at 0.5 s, after the first two finished: the engine idled until then
    late = steps[steps.new_requests == 1].iloc[0]
    assert late.start_s >= 0.5 and late.prefill_tokens == 30
    assert steps.preempted.sum() == 1
    # token times: one per step at the step's end; each request finishes with its last token
    for rid, n in zip(wl.request_id, wl.output_tokens):
        r = records[int(rid)]
        assert r.state == "finished" and len(r.token_times) == n and r.finish_s == r.token_times[-1]
    assert records[2].token_times[0] > 0.5
    ex = _request_extras(rec, steps).set_index("request_id")
    assert ex.loc[2, "scheduled_s"] == late.start_s and ex.loc[1, "preemptions"] == 1 and ex.loc[0, "preemptions"] == 0
    summary = write_outputs(tmp_path, wl, records, {"replay": "in-process"}, 1.0, extras=_request_extras(rec, steps))
    df = pd.read_parquet(tmp_path / "requests.parquet")
    assert df.set_index("request_id").loc[1, "preemptions"] == 1 and df.scheduled_s.notna().all()
    assert summary["all"]["requests"] == 3


def test_replays_on_one_engine_do_not_stack_recorders():
    """An engine replays many workloads (profile, capacity burst, warm-ups, each held-out load): each
    replay's recorder wraps the scheduler only while it runs, so no step pays for earlier ones."""
    clock = Clock()
    eng = FakeEngine(clock)
    sched = eng.engine_core.engine_core.scheduler
    calls = []
    aggregate = BatchRecorder.aggregate

    def counting(self, so):
        calls.append(self)
        return aggregate(self, so)

    wl = schema.make(np.array([0.0]), np.array([10]), np.array([2]))
    BatchRecorder.aggregate = counting
    try:
        for _ in range(3):
            calls.clear()
            _, steps, rec = drive(eng, wl, ReplayOptions(), sampling=lambda row: 2, clock=clock, sleep=clock.sleep)
            assert calls == [rec] * len(steps)  # one aggregate per step, by this replay's recorder
            assert "schedule" not in vars(sched)  # the scheduler's own method is back
    finally:
        BatchRecorder.aggregate = aggregate


def test_stops_at_max_duration_and_marks_the_rest_partial():
    wl = schema.make(np.array([0.0, 50.0]), np.array([8, 8]), np.array([2, 2]))
    clock = Clock()
    records, steps, _ = drive(FakeEngine(clock), wl, ReplayOptions(max_duration_s=10.0), sampling=lambda row: 2,
                              clock=clock, sleep=clock.sleep)
    assert records[0].state == "finished" and 1 not in records


def test_engine_arguments_mirror_the_server_command_line():
    cfg = EngineConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=32, kv_blocks=100, chunked_prefill=False)
    kw = engine_kwargs(cfg, "m")
    assert kw["num_gpu_blocks_override"] == 100 and kw["enable_prefix_caching"] is False
    assert kw["enable_chunked_prefill"] is False and kw["max_num_batched_tokens"] == 256
    with pytest.raises(RuntimeError, match="extra server arguments"):
        engine_kwargs(EngineConfig(extra_args=("--foo",)), "m")


def _fake_steps(d, seed, n=200):
    """A replay folder whose steps follow 2 ms + 20 us per prefill token + 0.5 ms per decode."""
    rng = np.random.default_rng(seed)
    pt = np.where(rng.random(n) < 0.4, rng.integers(16, 512, n), 0)
    ds = np.where(pt == 0, rng.integers(1, 32, n), rng.integers(0, 8, n))
    ds[(pt == 0) & (ds == 0)] = 1
    t = 0.002 + 20e-6 * pt + 0.5e-3 * ds
    start = np.cumsum(np.r_[0, t[:-1]] + 1e-4)
    d.mkdir(parents=True)
    pd.DataFrame({"step": np.arange(n), "start_s": start, "end_s": start + t, "prefill_tokens": pt, "prefill_ctx": pt * pt,
                  "decode_seqs": ds, "decode_ctx": ds * 200, "new_requests": (pt > 0).astype(int), "preempted": 0,
                  "scheduled_tokens": pt + ds, "waiting_added": 0}).astype(STEP_COLUMNS).to_parquet(d / "steps.parquet")
    return d


def test_step_time_error_scores_a_refit_on_held_out_engine_steps(tmp_path):
    from servesim.engine.compare import step_table, step_time_error

    loads = [_fake_steps(tmp_path / f"load{x}", s) for s, x in enumerate((0.3, 0.6))]
    shape = _fake_steps(tmp_path / "bursty", 9)
    tab = step_table(loads[0])
    assert len(tab) == 200 and {"step_s", "regime"} <= set(tab.columns)
    err = step_time_error(loads, [shape])
    assert set(err.scored_on) == {"loads (held-out half)", "bursty"} and set(err.model) == {"refit", "refit-median"}
    allr = err[(err.regime == "all") & (err.model == "refit")].set_index("scored_on")
    assert (allr.median_ape_pct < 2).all()  # the steps follow a linear law the fitted model can express
    assert (err.median_ratio - 1).abs().max() < 0.02  # both fits: no noise, so no skew between mean and median
    assert abs(allr.loc["loads (held-out half)", "n"] - 200) <= 2  # half of the 400 load steps, per regime


def test_steps_fit_json_carries_the_refit_and_no_front_end(tmp_path):
    import json

    from servesim.engine.compare import steps_fit_json
    from servesim.engine.profile import load_fitted

    loads = [_fake_steps(tmp_path / f"load{x}", s) for s, x in enumerate((0.3, 0.6))]
    stub = tmp_path / "fit.json"
    stub.write_text(json.dumps({"coefficients": {"a_p": 1.0, "a_d": 1.0, "b_pt": 0.0, "c_pc": 0.0, "b_ds": 0.0, "c_dc": 0.0},
                                "frontend_overhead_s": 0.02, "capacity_req_s": 5.0}))
    out = steps_fit_json(loads, stub, tmp_path / "steps.json")
    model, fe = load_fitted(out)
    assert fe == 0.0 and json.loads(out.read_text())["capacity_req_s"] == 5.0
    assert abs(model.step_time(0, 0, 10, 2000) - (0.002 + 10 * 0.5e-3)) < 5e-4  # the law the fake steps follow


def test_batch_agreement_is_exact_when_the_engine_is_the_simulator(tmp_path):
    """An 'engine' that is the simulator itself (its own steps written as steps.parquet): the
    simulator's batches agree with it exactly, every statistic."""
    import json
    from dataclasses import asdict

    from servesim.engine.compare import _RecordingStepTime, batch_agreement, simulate
    from servesim.perf.fitted import FittedStepTime

    rng = np.random.default_rng(0)
    wl = schema.make(np.cumsum(rng.exponential(0.05, 60)), rng.integers(16, 400, 60), rng.integers(2, 40, 60))
    cfg = EngineConfig(max_num_seqs=16, max_num_batched_tokens=256, block_size=32, kv_blocks=400)
    model = FittedStepTime(a_p=3e-3, a_d=2e-3, b_pt=3e-5, b_ds=1e-4, c_dc=3e-7)
    rec = _RecordingStepTime(model)
    df = simulate(wl, rec, cfg, 400, mode="reference")
    st = np.asarray(rec.steps, float)
    pd.DataFrame({"prefill_tokens": st[:, 0].astype(int), "decode_seqs": st[:, 2].astype(int)}).to_parquet(tmp_path / "steps.parquet")
    df.to_parquet(tmp_path / "requests.parquet")
    (tmp_path / "summary.json").write_text(json.dumps({"engine": cfg.to_dict(), "kv_blocks": 400}))
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": {k: v for k, v in asdict(model).items() if k.startswith(("a_", "b_", "c_"))},
                               "frontend_overhead_s": 0.0}))
    agree = batch_agreement(tmp_path, fit)
    assert (agree.rel_diff.abs() < 1e-12).all() and agree.set_index("stat").loc["steps", "engine"] == len(st)
    with pytest.raises(TypeError, match="one step at a time"):
        rec.step_time(np.zeros(2), np.zeros(2), np.ones(2), np.ones(2))


class AbortableEngine(FakeEngine):
    def abort_request(self, ids):
        for r in self.reqs.values():
            if r["ext"] in ids:
                r["done"] = True


def test_in_process_sweep_rows_are_measured_steps_of_each_shape():
    from servesim.engine.inprocess import Stepper, sweep_in_process
    from servesim.engine.profile import SweepPlan

    clock = Clock()
    eng = AbortableEngine(clock, step_s=0.004)
    st = Stepper(eng, ReplayOptions(), lambda n: int(n), clock=clock)
    plan = SweepPlan(decode_batches=(1, 4), decode_contexts=(32,), decode_tokens=5, prefill_lengths=(16, 64),
                     mixed_batches=(2,), mixed_context=16, repeats=2)
    rows, lone = sweep_in_process(st, plan, max_num_seqs=8, max_num_batched_tokens=128)
    assert set(rows.regime) == {"prefill-heavy", "decode-heavy", "mixed"}
    assert np.allclose(rows.step_s, 0.004) and len(lone) == 4 and (lone.engine_queue_s == 0).all()
    pre = rows[rows.regime == "prefill-heavy"]
    assert sorted(pre.prefill_tokens) == [16, 16, 64, 64] and (pre.prefill_ctx == pre.prefill_tokens ** 2).all()
    dec = rows[rows.regime == "decode-heavy"].set_index("decode_seqs")
    # 4 prompts of 32 decode tokens 2..5 together: contexts 33..36 per sequence, mean 34.5 each
    assert dec.loc[4, "decode_ctx"].tolist() == [4 * 34.5] * 2 and (dec.prefill_tokens == 0).all()
    mix = rows[rows.regime == "mixed"]
    assert sorted(mix.prefill_tokens) == [16, 16, 64, 64] and (mix.decode_seqs == 2).all()
    assert not eng.has_unfinished_requests()  # every background request aborted or finished


def test_in_process_profile_needs_the_scheduler():
    from servesim.engine.inprocess import EngineStepError, Stepper

    eng = FakeEngine(Clock())
    eng.engine_core = SimpleNamespace()  # a build that hides the engine core
    with pytest.raises(EngineStepError, match="scheduler"):
        Stepper(eng, ReplayOptions(), lambda n: n)


def test_speed_probe_runs_the_same_burst_each_time_under_new_ids():
    """The probe's busy time moves with the engine's speed only: the same batches each run (every
    arrival at 0, the same lengths), new request ids each run (an engine refuses a live duplicate)."""
    from servesim.engine.inprocess import PROBE_ID_BASE, SpeedProbe

    clock = Clock()
    eng = FakeEngine(clock)
    probe = SpeedProbe(eng, 6, ReplayOptions(), sampling=lambda row: int(row.output_tokens), clock=clock,
                       sleep=clock.sleep)
    a, b = probe(), probe()
    assert a == b and a["requests"] == 6 and a["busy_s"] == pytest.approx(a["steps"] * 0.01)
    ids = [int(r["ext"]) for r in eng.reqs.values()]
    assert len(set(ids)) == 12 and min(ids) >= PROBE_ID_BASE
    eng.step_s = 0.013  # the host now runs the engine 1.3 x slower
    c = probe()
    assert c["steps"] == a["steps"] and c["busy_s"] == pytest.approx(1.3 * a["busy_s"])


def test_profile_fit_on_live_steps_or_the_sweep(tmp_path):
    """write_profile with a live replay's steps: the simulator's fit is made on them (fit_on live) or
    on the sweep's shapes, and both fits are kept."""
    import json

    from servesim.engine.profile import SweepPlan, write_profile

    rng = np.random.default_rng(0)
    # sweep rows: a step model of 2 ms + 10 us per prefill token + 50 us per decode sequence
    sweep = pd.DataFrame([{"prefill_tokens": L, "prefill_ctx": L * L, "decode_seqs": 0, "decode_ctx": 0,
                           "step_s": 0.002 + 1e-5 * L, "regime": "prefill-heavy"} for L in (16, 64, 128, 256, 384)]
                         + [{"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": B, "decode_ctx": B * 100,
                             "step_s": 0.002 + 5e-5 * B, "regime": "decode-heavy"} for B in (1, 2, 4, 8, 16, 32)])
    # live steps: the same but 100 us per decode sequence (a live mixed batch costs more per sequence)
    n = 400
    ds = rng.integers(1, 32, n)
    took = 0.002 + 1e-4 * ds
    end = np.cumsum(took + 2e-5)  # back to back, 20 us between steps (an engine with work)
    steps = pd.DataFrame({"step": np.arange(n), "start_s": end - took, "end_s": end,
                          "prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": ds, "decode_ctx": ds * 100,
                          "new_requests": 0, "preempted": 0, "scheduled_tokens": ds, "waiting_added": 0})
    (tmp_path / "live").mkdir()
    steps.to_parquet(tmp_path / "live" / "steps.parquet", index=False)
    lone = pd.DataFrame(columns=["prompt_tokens", "ttft_s", "engine_queue_s", "engine_prefill_s"])
    for fit_on, per_seq in (("live", 1e-4), ("sweep", 5e-5)):
        res = write_profile(tmp_path / fit_on, sweep, lone, 0.0, SweepPlan(fit_on=fit_on), {}, {}, harness="in-process",
                            wall_s=1.0, live_dir=tmp_path / "live")
        assert res["fit_source"] == fit_on and set(res) >= {"coefficients_live", "coefficients_sweep"}
        assert res["coefficients"]["b_ds"] == pytest.approx(per_seq, rel=0.05)
        assert json.loads((tmp_path / fit_on / "fit.json").read_text())["fit_source"] == fit_on
    # no live replay: the sweep's fit whatever fit_on says
    res = write_profile(tmp_path / "none", sweep, lone, 0.0, SweepPlan(), {}, {}, harness="http", wall_s=1.0)
    assert res["fit_source"] == "sweep" and "coefficients_live" not in res


def test_profile_step_form_default_fits_a_batch_quadratic_and_keeps_the_linear_fit(tmp_path):
    """The default form (quadratic-seqs) recovers a per-sequence cost growing with the batch; fit.json
    names the form and keeps every form's coefficients (the notebook's `linear` reading); a form not
    known is refused when the plan is made, before any engine runs."""
    from servesim.engine.profile import SweepPlan, write_profile

    n = 400
    ds = np.random.default_rng(1).integers(1, 33, n)
    took = 0.002 + 5e-5 * ds + 2e-6 * ds * ds
    end = np.cumsum(took + 2e-5)
    steps = pd.DataFrame({"step": np.arange(n), "start_s": end - took, "end_s": end,
                          "prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": ds, "decode_ctx": ds * 100,
                          "new_requests": 0, "preempted": 0, "scheduled_tokens": ds, "waiting_added": 0})
    (tmp_path / "live").mkdir()
    steps.to_parquet(tmp_path / "live" / "steps.parquet", index=False)
    sweep = pd.DataFrame([{"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": B, "decode_ctx": B * 100,
                           "step_s": 0.002 + 5e-5 * B + 2e-6 * B * B, "regime": "decode-heavy"} for B in (1, 2, 4, 8, 16, 32)])
    lone = pd.DataFrame(columns=["prompt_tokens", "ttft_s", "engine_queue_s", "engine_prefill_s"])
    res = write_profile(tmp_path / "p", sweep, lone, 0.0, SweepPlan(), {}, {}, harness="in-process", wall_s=1.0,
                        live_dir=tmp_path / "live")
    assert res["step_form"] == "quadratic-seqs" and set(res["coefficients_by_form"]) == {"linear", "quadratic-seqs", "quadratic-ctx"}
    assert res["coefficients"]["b_ds2"] == pytest.approx(2e-6, rel=1e-3)
    assert res["coefficients_by_form"]["quadratic-seqs"] == res["coefficients"]
    assert res["coefficients_by_form"]["linear"]["b_ds2"] == 0.0
    lin = write_profile(tmp_path / "l", sweep, lone, 0.0, SweepPlan(step_form="linear"), {}, {}, harness="in-process",
                        wall_s=1.0, live_dir=tmp_path / "live")
    assert lin["coefficients"] == res["coefficients_by_form"]["linear"]
    with pytest.raises(ValueError, match="step_form"):
        SweepPlan(step_form="cubic")
    # the weighting (default relative-to-fit) is named, and every weighting's fit kept (the
    # notebook's `observed-weights` reading); a plan weighing otherwise fits the same steps so
    assert res["step_weighting"] == "relative-to-fit"
    assert set(res["coefficients_by_weighting"]) == {"relative", "relative-to-fit", "absolute", "median"}
    assert res["coefficients_by_weighting"]["relative-to-fit"] == res["coefficients"]
    rel = write_profile(tmp_path / "r", sweep, lone, 0.0, SweepPlan(fit_weighting="relative"), {}, {},
                        harness="in-process", wall_s=1.0, live_dir=tmp_path / "live")
    assert rel["step_weighting"] == "relative" and rel["coefficients"] == res["coefficients_by_weighting"]["relative"]
    with pytest.raises(ValueError, match="fit_weighting='quantile': one of"):
        SweepPlan(fit_weighting="quantile")


def test_live_steps_on_the_cycle_clock_carry_the_gap_before_them_while_the_engine_had_work(tmp_path):
    """Clock ``cycle`` (the default): a step's time runs from the end of the step before, where the
    engine had work (decoding sequences, or no new request); a step that takes in new requests with
    nothing decoding may follow an idle engine and keeps its own time. The profile fits on that
    clock, names it in fit.json and keeps the fit on every clock (the notebook's `no-gaps` reading)."""
    from servesim.engine.profile import SweepPlan, write_profile
    from servesim.engine.records import step_table

    d = tmp_path / "live"
    d.mkdir()
    # steps: decode; decode after a 1 ms gap; a new request after 2 s idle; decode after 0.5 ms;
    # a chunk of a prompt (no decode, no new request) after 0.1 ms
    pd.DataFrame({"step": range(5), "start_s": [0.0, 0.011, 2.021, 2.0405, 2.0601],
                  "end_s": [0.010, 0.021, 2.040, 2.0501, 2.0801], "prefill_tokens": [0, 0, 100, 0, 200],
                  "prefill_ctx": [0, 0, 10000, 0, 40000], "decode_seqs": [2, 2, 0, 1, 0],
                  "decode_ctx": [200, 202, 0, 101, 0], "new_requests": [0, 0, 1, 0, 0], "preempted": 0,
                  "scheduled_tokens": [2, 2, 100, 1, 200], "waiting_added": 0}).to_parquet(d / "steps.parquet")
    np.testing.assert_allclose(step_table(d).step_s, [0.010, 0.010, 0.019, 0.0096, 0.020])
    np.testing.assert_allclose(step_table(d, clock="cycle").step_s, [0.010, 0.011, 0.019, 0.0101, 0.0300])
    with pytest.raises(ValueError, match="clock"):
        step_table(d, clock="wall")
    with pytest.raises(ValueError, match="step_clock"):
        SweepPlan(step_clock="wall")
    # a fit on each clock: 2 ms + 50 us per sequence per step, and a 0.3 ms gap before each
    n = 300
    ds = np.random.default_rng(2).integers(1, 33, n)
    took = 0.002 + 5e-5 * ds
    end = np.cumsum(took + 3e-4)
    pd.DataFrame({"step": np.arange(n), "start_s": end - took, "end_s": end, "prefill_tokens": 0, "prefill_ctx": 0,
                  "decode_seqs": ds, "decode_ctx": ds * 100, "new_requests": 0, "preempted": 0, "scheduled_tokens": ds,
                  "waiting_added": 0}).to_parquet(d / "steps.parquet")
    sweep = pd.DataFrame([{"prefill_tokens": 0, "prefill_ctx": 0, "decode_seqs": B, "decode_ctx": B * 100,
                           "step_s": 0.002 + 5e-5 * B, "regime": "decode-heavy"} for B in (1, 2, 4, 8, 16, 32)])
    lone = pd.DataFrame(columns=["prompt_tokens", "ttft_s", "engine_queue_s", "engine_prefill_s"])
    res = write_profile(tmp_path / "p", sweep, lone, 0.0, SweepPlan(step_form="linear"), {}, {}, harness="in-process",
                        wall_s=1.0, live_dir=d)
    assert res["step_clock"] == "cycle" and set(res["coefficients_by_clock"]) == {"step", "cycle"}
    assert res["coefficients_by_clock"]["cycle"] == res["coefficients"]
    # the first step has no step before it: its own time, the rest 0.3 ms more
    assert res["coefficients"]["a_d"] == pytest.approx(0.0023, rel=0.01)
    assert res["coefficients_by_clock"]["step"]["a_d"] == pytest.approx(0.002, rel=1e-6)
    sweep_fit = write_profile(tmp_path / "s", sweep, lone, 0.0, SweepPlan(fit_on="sweep"), {}, {}, harness="in-process",
                              wall_s=1.0, live_dir=d)
    assert sweep_fit["step_clock"] == "step"  # the sweep's isolated steps have no gaps to carry


def test_slice_positions_place_the_live_slices_among_the_replays():
    """`slice_positions`: ``first`` puts every slice before the first replay; ``spread`` the first
    before it, the last after the last replay, the others evenly between (nondecreasing)."""
    from servesim.engine.profile import slice_positions

    assert slice_positions(4, 24, "first") == [0, 0, 0, 0]
    assert slice_positions(4, 24, "spread") == [0, 8, 16, 24]  # one between each of 3 rounds of 8
    assert slice_positions(2, 4, "spread") == [0, 4] and slice_positions(1, 4, "spread") == [0]
    assert slice_positions(3, 4, "spread") == [0, 2, 4] and slice_positions(3, 0, "spread") == [0, 0, 0]
    for k in range(1, 7):
        for n in range(0, 13):
            pos = slice_positions(k, n, "spread")
            assert len(pos) == k and pos[0] == 0 and pos == sorted(pos) and pos[-1] == (n if k > 1 else 0)
    with pytest.raises(ValueError, match="live placement 'last'"):
        slice_positions(2, 4, "last")
    with pytest.raises(ValueError, match="0 slices among 4"):
        slice_positions(0, 4, "spread")


def test_live_profile_runs_its_slices_where_the_placement_puts_them(tmp_path, monkeypatch):
    """`LiveProfile` (drive and the probe faked): under ``spread`` 4 slices among 6 replays run
    before replays 0, 2 and 4 and after the last (`slice_positions`: 0, 2, 4, 6), each between the
    probe before it (the replay's after, where one ran) and one after it; the profile is written
    after every slice, partial until the last. Under ``first`` all run before any replay."""
    from servesim.engine import inprocess
    from servesim.engine.profile import SweepPlan

    def run(placement):
        log, writes, probes = [], [], iter(range(100))

        def fake_drive(engine, wl, opts, sampling, clock, sleep):
            log.append(f"slice{len(wl)}")
            return None, pd.DataFrame({"step": [0, 1], "start_s": [0.0, 0.5], "end_s": [0.5, 1.0]}), None

        def probe():
            k = next(probes)
            log.append(f"p{k}")
            return {"busy_s": float(k)}

        monkeypatch.setattr(inprocess, "drive", fake_drive)
        plan = SweepPlan(live_requests=8, live_slices=4, live_placement=placement)
        live = inprocess.LiveProfile(None, plan, tmp_path / placement, lambda *a: writes.append(a), capacity_req_s=10.0,
                                     opts=None, sampling=None, clock=None, sleep=None, probe=probe)
        last = live.run_slice(probe()) if placement == "spread" else None
        if placement == "first":  # as `_profile` runs them
            last = probe()
            for _ in range(4):
                last = live.run_slice(last)
        live.finish()
        live.schedule(6)
        for job in range(6):
            last = live.run_due(job, last)
            log.append(f"R{job}")
            last = probe()
        live.run_due(6, last)
        return log, writes, live

    log, writes, live = run("spread")
    assert log == ["p0", "slice2", "p1", "R0", "p2", "R1", "p3", "slice2", "p4", "R2", "p5", "R3", "p6", "slice2", "p7",
                   "R4", "p8", "R5", "p9", "slice2", "p10"]
    assert [(a["before"]["busy_s"], a["after"]["busy_s"]) for a in live.around] == [(0, 1), (3, 4), (6, 7), (9, 10)]
    assert [w[2]["partial"] for w in writes] == [True, True, True, False]  # _profile's, then after each slice
    assert writes[-1][2] == {"placement": "spread", "slicing": "ramps", "slices": 4, "slices_run": 4,
                              "partial": False}
    assert len(pd.read_parquet(tmp_path / "spread" / "live" / "steps.parquet")) == 8
    log, writes, live = run("first")
    assert log[:9] == ["p0", "slice2", "p1", "slice2", "p2", "slice2", "p3", "slice2", "p4"]
    assert "slice2" not in log[9:] and [w[2]["partial"] for w in writes] == [False]


def test_the_live_profiles_envelope_spans_the_context_beyond_the_mix_at_the_mixs_token_load():
    """`SweepPlan.live_envelope`: that share of the live requests drawn by `envelope_lengths` (a
    prompt plus output from the mix's longest to max_model_len - 1, each at least its range's
    shortest); the others and the arrival order as without it, the ramp's rates scaled by the
    mix's mean tokens per request over the whole's."""
    from servesim.engine.profile import SweepPlan, envelope_lengths, live_workload

    rng = np.random.default_rng(5)
    prompt, output = envelope_lengths(4000, rng, (16, 512), (8, 128), max_model_len=2048)
    total = prompt + output
    assert total.min() >= 640 and total.max() <= 2047 and prompt.min() >= 16 and output.min() >= 8
    assert total.max() > 2000 and prompt.max() > 1900 and output.max() > 1900  # long prompts and long outputs
    with pytest.raises(ValueError, match="max_model_len 600 leaves no room"):
        envelope_lengths(1, rng, max_model_len=600)
    with pytest.raises(ValueError, match=r"live_envelope=1.0: a share in \[0, 1\)"):
        SweepPlan(live_envelope=1.0)

    base = live_workload(200, 20.0, seed=3)
    env = live_workload(200, 20.0, seed=3, envelope=0.25, max_model_len=2048)
    assert base.equals(live_workload(200, 20.0, seed=3, envelope=0.0))  # no envelope: the mix as before
    tokens = env.prompt_tokens + env.output_tokens
    moved = (env.prompt_tokens != base.prompt_tokens) | (env.output_tokens != base.output_tokens)
    assert int(moved.sum()) == 50 and (tokens[moved] >= 640).all() and (tokens[moved] <= 2047).all()
    assert env[~moved][["prompt_tokens", "output_tokens"]].equals(base[~moved][["prompt_tokens", "output_tokens"]])
    mix, whole = (264 + 68), 0.75 * (264 + 68) + 0.25 * (640 + 2047) / 2
    np.testing.assert_allclose(env.arrival_s.to_numpy(), base.arrival_s.to_numpy() * whole / mix, rtol=1e-12)


def test_each_live_slice_is_a_ramp_of_its_own_so_the_hosts_drift_does_not_fall_on_one_band_of_batches():
    """`SweepPlan.live_slicing` ``ramps`` (the default): `live_workload` with ``ramps`` k lays k
    ramps over LIVE_LOADS end to end, and `live_slices` of k cuts them apart, so each slice's rate
    rises from 0.3 to 1.2 x capacity (``consecutive``: each slice a band of one ramp's loads). One
    ramp is the profile as it was: ``ramp_arrivals`` from the same seed stream. The lengths are the
    same for any count."""
    from servesim.engine.profile import LIVE_LOADS, LIVE_SEED, SweepPlan, live_slices, live_workload, ramp_arrivals

    cap, n, k = 20.0, 4000, 4
    one, ramps = live_workload(n, cap, seed=3), live_workload(n, cap, seed=3, ramps=k)
    assert ramps[["prompt_tokens", "output_tokens"]].equals(one[["prompt_tokens", "output_tokens"]])
    arr_rng = np.random.default_rng(np.random.SeedSequence([LIVE_SEED, 3]).spawn(3)[0])
    t = ramp_arrivals(n, *(x * cap for x in LIVE_LOADS), arr_rng)
    np.testing.assert_array_equal(one.arrival_s.to_numpy(), t - t[0])

    def rates(part):  # arrivals per second over its first and last fifths
        a = part.arrival_s.to_numpy()
        m = len(a) // 5
        return m / (a[m] - a[0]), m / (a[-1] - a[-1 - m])

    # a ramp's first fifth of arrivals comes at 0.45 x capacity on average, its last at 1.14 x
    for part in live_slices(ramps, k):
        lo, hi = rates(part)
        assert 0.35 * cap < lo < 0.55 * cap and 1.0 * cap < hi < 1.3 * cap  # each slice the whole ramp
    mean = [len(p) / p.arrival_s.iloc[-1] for p in live_slices(one, k)]  # consecutive: 0.48 x, ..., 1.13 x
    assert mean[0] < 0.6 * cap and mean[-1] > 1.0 * cap and np.all(np.diff(mean) > 0)
    assert np.all(np.diff(ramps.arrival_s.to_numpy()) >= 0) and len(ramps) == n
    with pytest.raises(ValueError, match="5 ramps of 4 requests"):
        live_workload(4, cap, ramps=5)
    with pytest.raises(ValueError, match="live_slicing='bands': one of"):
        SweepPlan(live_slicing="bands")


def test_the_live_profile_in_slices_each_starting_on_an_idle_engine(tmp_path):
    """`SweepPlan.live_slices`: the live replay's requests in consecutive slices, each shifted to
    start at 0; their steps joined into one table (`join_steps`) whose clock ``cycle`` counts no time
    between the slices (a slice's first step takes in requests with nothing decoding: its own time)."""
    from servesim.engine.profile import SweepPlan, live_slices, live_workload
    from servesim.engine.records import join_steps, step_table

    wl = live_workload(11, 20.0, seed=3)
    parts = live_slices(wl, 3)
    assert [len(p) for p in parts] == [4, 4, 3] and all(p.arrival_s.iloc[0] == 0.0 for p in parts)
    assert sorted(pd.concat(parts).request_id) == sorted(wl.request_id)
    np.testing.assert_allclose(parts[1].arrival_s, wl.arrival_s.iloc[4:8] - wl.arrival_s.iloc[4])
    assert len(live_slices(wl, 1)) == 1 and live_slices(wl, 1)[0].equals(wl.sort_values("arrival_s").reset_index(drop=True))
    with pytest.raises(ValueError, match="12 slices of 11 requests"):
        live_slices(wl, 12)
    with pytest.raises(ValueError, match="live_slices=0"):
        SweepPlan(live_slices=0)
    with pytest.raises(ValueError, match="at most live_requests"):
        SweepPlan(live_requests=4, live_slices=5)
    with pytest.raises(ValueError, match="live_placement='middle': one of"):
        SweepPlan(live_placement="middle")

    def part(start, took, new, ds):
        return pd.DataFrame({"step": range(len(start)), "start_s": start, "end_s": np.add(start, took),
                             "prefill_tokens": [50 if n else 0 for n in new], "prefill_ctx": [2500 if n else 0 for n in new],
                             "decode_seqs": ds, "decode_ctx": [d * 60 for d in ds], "new_requests": new, "preempted": 0,
                             "scheduled_tokens": [50 + d if n else d for n, d in zip(new, ds)], "waiting_added": 0})

    a = part([0.5, 0.52, 0.531], [0.02, 0.01, 0.01], [1, 0, 0], [0, 1, 1])
    b = part([0.2, 0.215], [0.015, 0.01], [1, 0], [0, 1])
    joined = join_steps([a, b])
    assert joined.step.tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(joined.start_s, [0.5, 0.52, 0.531, 0.541 + 0.2, 0.541 + 0.215])
    (tmp_path / "live").mkdir()
    joined.to_parquet(tmp_path / "live" / "steps.parquet")
    # the second slice's first step: its own 15 ms, not the 0.2 s idle before it
    np.testing.assert_allclose(step_table(tmp_path / "live", clock="cycle").step_s, [0.02, 0.01, 0.011, 0.015, 0.01])


def test_engine_clock_counts_cpu_time_and_skips_idle_gaps_without_sleeping():
    import time

    from servesim.engine.inprocess import EngineClock

    c = EngineClock()
    t0, w0 = c(), time.perf_counter()
    c.sleep(30.0)  # an idle gap: the clock jumps, nothing waits
    assert time.perf_counter() - w0 < 1.0 and c() - t0 >= 30.0
    c.sleep(-5.0)  # a negative gap never runs the clock back
    t1 = c()
    assert t1 >= t0 + 30.0
    x = 0
    for i in range(200_000):  # work advances it (by CPU time)
        x += i
    assert c() > t1
    t2, w2 = c(), time.perf_counter()
    time.sleep(0.2)  # a real sleep is not the engine's work: it barely moves
    assert time.perf_counter() - w2 >= 0.2 and c() - t2 < 0.1


def test_engine_clock_needs_one_pinned_core_and_a_known_name():
    from servesim.engine.inprocess import check_clock, make_clock

    check_clock("wall", None)
    check_clock("engine", [1])
    for cpus in (None, [0, 1]):
        with pytest.raises(ValueError, match="pinned to one core"):
            check_clock("engine", cpus)
    with pytest.raises(ValueError, match="one of wall, engine"):
        make_clock("cpu", [1])


def test_a_replay_on_the_engine_clock_joins_requests_at_the_engine_s_time():
    """drive on an EngineClock: the idle gap before the late request is skipped (no real sleep) and
    the late request still starts at its arrival on that clock."""
    import time

    from servesim.engine.inprocess import EngineClock

    wl = schema.make(np.array([0.0, 5.0]), np.array([10, 10]), np.array([2, 2]))
    clock = EngineClock()
    eng = FakeEngine(Clock())  # its own clock is unused: the engine clock advances by CPU time
    w = time.perf_counter()
    records, steps, _ = drive(eng, wl, ReplayOptions(), sampling=lambda row: int(row.output_tokens),
                              clock=clock, sleep=clock.sleep)
    assert time.perf_counter() - w < 2.0  # the 5-s gap was not slept through
    late = steps[steps.new_requests == 1].iloc[-1]
    assert late.start_s >= 5.0 and records[1].token_times[0] >= 5.0
    assert all(r.state == "finished" for r in records.values())


def test_pin_process_pins_threads_started_before_it(tmp_path):
    """numpy's BLAS starts its thread pool at import, before the pin: every thread must end up on
    the given core, not only the caller (sched_setaffinity(0) pins one thread)."""
    import os
    import subprocess
    import sys

    if not hasattr(os, "sched_getaffinity") or not os.path.isdir("/proc/self/task"):
        pytest.skip("needs Linux affinity calls")
    core = max(os.sched_getaffinity(0))
    code = ("import os, threading, time\n"
            "ev = threading.Event()\n"
            "t = threading.Thread(target=ev.wait, daemon=True); t.start()\n"
            "from servesim.engine.inprocess import pin_process\n"
            f"pin_process([{core}])\n"
            "print(sorted({tuple(sorted(os.sched_getaffinity(int(x)))) for x in os.listdir('/proc/self/task')}))\n"
            "ev.set()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str([(core,)])


def _replay_files(tmp_path, wl, eng, clock, cfg):
    """An in-process replay's files (steps, requests, sends, summary) from the fake engine."""
    import json

    records, steps, rec = drive(eng, wl, ReplayOptions(), sampling=lambda row: int(row.output_tokens),
                                clock=clock, sleep=clock.sleep)
    steps.to_parquet(tmp_path / "steps.parquet", index=False)
    write_outputs(tmp_path, wl, records, {"replay": "in-process", "engine": cfg.to_dict(), "kv_blocks": cfg.kv_blocks},
                  1.0, extras=_request_extras(rec, steps))
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"coefficients": {"a_p": 0.01, "a_d": 0.01}, "frontend_overhead_s": 0.0}))
    return fit


def test_step_agreement_is_whole_when_both_schedulers_take_every_request_at_once(tmp_path):
    """The fake engine schedules every waiting prompt whole and every running request one token, as
    vLLM's scheduler (and the simulator's) does while the token budget and the sequence cap are not
    reached: on its own clock the simulator takes the same batch at every step."""
    from servesim.engine.compare import step_agreement

    rng = np.random.default_rng(1)
    wl = schema.make(np.cumsum(rng.exponential(0.03, 12)), rng.integers(8, 40, 12), rng.integers(2, 9, 12))
    clock = Clock()
    cfg = EngineConfig(max_num_seqs=32, max_num_batched_tokens=512, block_size=16, kv_blocks=256)
    fit = _replay_files(tmp_path, wl, FakeEngine(clock, step_s=0.01), clock, cfg)
    table, res = step_agreement(tmp_path, fit)
    assert res["steps_engine"] == res["steps_sim"] == len(table) > 12
    assert res["same_share"] == 1.0 and res["first_difference"] is None and table["what"].eq("").all()
    # same batches at the same times: the same latencies (the fake clock has no driver gaps)
    assert res["ttft_s_max_abs_diff_s"] < 1e-5 and res["e2e_s_max_abs_diff_s"] < 1e-5


class OneAtATimeScheduler(FakeScheduler):
    """Admits at most one new prompt per step (a scheduler unlike the simulator's)."""

    def schedule(self):
        so = super().schedule()
        keep = so.scheduled_new_reqs[:1]
        for r in so.scheduled_new_reqs[1:]:
            del so.num_scheduled_tokens[r.req_id]
        so.scheduled_new_reqs = keep
        so.total_num_scheduled_tokens = sum(so.num_scheduled_tokens.values())
        return so


def test_step_agreement_finds_where_the_schedulers_part(tmp_path):
    from servesim.engine.compare import step_agreement

    wl = schema.make(np.array([0.0, 0.0, 0.0]), np.array([10, 20, 30]), np.array([3, 3, 3]))
    clock = Clock()
    eng = FakeEngine(clock, step_s=0.01)
    eng.engine_core.engine_core.scheduler = OneAtATimeScheduler(eng)  # its step runs this scheduler's batch

    cfg = EngineConfig(max_num_seqs=32, max_num_batched_tokens=512, block_size=16, kv_blocks=256)
    fit = _replay_files(tmp_path, wl, eng, clock, cfg)
    table, res = step_agreement(tmp_path, fit)
    # step 0: the engine prefills one prompt of 10, the simulator all three (60 tokens)
    assert res["first_difference"] == 0 and table.loc[0, "what"] == "prompt tokens"
    assert table.loc[0, "engine_prefill_tokens"] == 10 and table.loc[0, "sim_prefill_tokens"] == 60
    assert res["same_share"] < 1.0 and res["differ_prompt_tokens"] >= 1 and res["steps_sim"] < res["steps_engine"]
    http = tmp_path / "http"  # a replay without step records (over HTTP)
    http.mkdir()
    (http / "summary.json").write_text("{}")
    with pytest.raises(ValueError, match="no steps.parquet"):
        step_agreement(http, fit)


def test_step_noise_floor_is_the_scatter_of_same_shape_steps(tmp_path):
    from servesim.engine.compare import step_noise_floor

    rng = np.random.default_rng(0)
    n = 400
    ds = rng.choice([1, 4], n)
    base = 0.005 + 0.001 * ds
    took = base * (1 + rng.uniform(-0.2, 0.2, n))  # uniform scatter: a median 10 % off its shape's median
    end = np.cumsum(took)
    pd.DataFrame({"step": np.arange(n), "start_s": end - took, "end_s": end, "prefill_tokens": 0, "prefill_ctx": 0,
                  "decode_seqs": ds, "decode_ctx": ds * 100, "scheduled_tokens": ds}).to_parquet(tmp_path / "steps.parquet")
    assert step_noise_floor([tmp_path]) == pytest.approx(10.0, abs=1.5)
    assert np.isnan(step_noise_floor([tmp_path], min_group=1000))  # no group large enough
    st = pd.read_parquet(tmp_path / "steps.parquet")  # contexts spread: grouped by decile, the same scatter
    st["decode_ctx"] = st.decode_seqs * rng.integers(50, 150, n)
    st.to_parquet(tmp_path / "steps.parquet")
    assert step_noise_floor([tmp_path]) == pytest.approx(10.0, abs=1.5)


def test_busy_time_bias_is_the_models_signed_error_on_the_summed_step_times(tmp_path):
    """The sim_vs_vllm notebook's step bias, 100 / `replay_speed` - 100: a model that follows the
    steps' law has no bias; on a replay whose every step took 25 % longer it predicts 1/1.25 of the
    busy time: -20 %."""
    import json

    from servesim.engine.compare import replay_speed, steps_fit_json

    loads = [_fake_steps(tmp_path / f"load{x}", s) for s, x in enumerate((0.3, 0.6))]
    stub = tmp_path / "fit.json"
    stub.write_text(json.dumps({"coefficients": {"a_p": 1.0, "a_d": 1.0, "b_pt": 0.0, "c_pc": 0.0, "b_ds": 0.0, "c_dc": 0.0},
                                "frontend_overhead_s": 0.0, "capacity_req_s": 5.0}))
    fit = steps_fit_json(loads, stub, tmp_path / "steps.json")
    slow = _fake_steps(tmp_path / "slow", 7)
    df = pd.read_parquet(slow / "steps.parquet")
    df["end_s"] = df.start_s + (df.end_s - df.start_s) * 1.25
    df.to_parquet(slow / "steps.parquet")
    bias = pd.Series({d.name: 100 / replay_speed(d, fit) - 100 for d in (*loads, slow)})
    assert list(bias.index) == ["load0.3", "load0.6", "slow"]
    assert abs(bias["load0.3"]) < 2 and abs(bias["load0.6"]) < 2
    assert abs(bias["slow"] - (100 / 1.25 - 100)) < 2
