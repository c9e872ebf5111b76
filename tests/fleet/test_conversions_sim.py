"""Conversions (a model switch in place, state ``converting``) and deadline enforcement through
the real servesim.sim engines."""

import numpy as np
import pytest

from servesim.fleet import Move, parse_scenario, run_scenario
from servesim.fleet.engine_sim import SimEngines
from servesim.fleet.lifecycle import BILLED
from servesim.workload.schema import make

TOK = {"prompt_tokens": {"mean": 200, "cv": 0.5, "max": 800}, "output_tokens": {"mean": 50, "cv": 0.5, "max": 200}}


def scenario(convert_s=300.0, kv_b=40000, **extra):
    eng = {"kv_capacity_tokens": 60000, "max_num_seqs": 64}
    return parse_scenario({
        "name": "convert", "seed": 3,
        "workload": {"generator": "poisson", "duration_s": "20min", "streams": [
            {"model": "a", "region": "r", "rate_rps": 2.0, **TOK},
            {"model": "b", "region": "r", "rate_rps": 1.0, **TOK}]},
        "regions": [{"name": "r", "pool": {"a": 1}}],
        "models": {"a": {"engine": eng, "lead": {"load_s": 120, "convert_s": convert_s}},
                   "b": {"engine": {**eng, "kv_capacity_tokens": kv_b},
                         "step_time": {"c0": 0.01, "c_pt": 2e-4},
                         "lead": {"load_s": 120, "convert_s": convert_s}}},
        "endpoints": [{"model": "a", "region": "r", "instances": 3}, {"model": "b", "region": "r", "instances": 1}],
        "scale_in_to": "pool",
        **extra,
    })


class MoveOnce:
    """At `at` s: convert the first ready instance of `src` to `dst`; then reclaim the pooled
    'a' instance for 'b' (another model's weights: also a conversion)."""

    period_s = 30.0

    def __init__(self, at, src="a", dst="b"):
        self.at, self.src, self.dst, self.done = at, src, dst, False

    def act(self, view):
        if self.done or view.now < self.at:
            return []
        self.done = True
        from servesim.fleet import Scale

        iid = view.endpoint(self.src, "r").instance_ids[0]
        return [Move(iid, self.dst), Scale(self.dst, "r", 1)]


class CheckedEngines(SimEngines):
    """Sim engines that check the instance invariants (KV conservation) after every event and
    keep every engine for inspection."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.engines = []

    def factory(self, model, region, name, on_end):
        eng = super().factory(model, region, name, on_end)
        eng.inst.check_invariants = True
        self.engines.append(eng)
        return eng


def hours_by(res):
    h = res.instance_hours
    return h.groupby("state")["hours"].sum()


def test_conversion_is_an_in_place_switch_with_its_lead_time():
    holder = {}

    def engines(sc, w, seed):
        holder["e"] = CheckedEngines(sc, w, seed)
        return holder["e"]

    res = run_scenario(scenario(), actors=[MoveOnce(300.0)], engines=engines)
    log = res.lifecycle
    conv = log[log.to_state == "converting"]
    assert len(conv) == 2 and res.summary["conversions"] == 2
    for iid, g in log.groupby("instance"):
        seq = list(g.to_state)
        if "converting" not in seq:
            continue
        k = seq.index("converting")
        # ready for the new model exactly convert_s after the conversion started
        assert seq[k + 1] == "ready" and g.time_s.iloc[k + 1] - g.time_s.iloc[k] == pytest.approx(300.0)
        assert g.model.iloc[k] == "b" and g.model.iloc[k + 1] == "b"
        assert seq[k - 1] in ("draining", "pooled")
    moved = conv[conv.from_state == "draining"].instance.iloc[0]
    # the drained instance kept its sim engine and switched its model in place
    sims = [e.inst for e in holder["e"].engines if e.inst.name == moved]
    assert len(sims) == 1 and sims[0].switches == 1 and sims[0].model == "b"
    assert sims[0].num_blocks == 40000 // 16
    # it served 'a' before and 'b' after; nothing was lost
    req = res.requests
    on = req[req.instance == moved]
    t_conv = conv[conv.instance == moved].time_s.iloc[0]
    assert set(on.loc[on.scheduled_s < t_conv, "model"]) == {"a"}
    assert set(on.loc[on.scheduled_s > t_conv, "model"]) == {"b"}
    assert (on.loc[on.scheduled_s > t_conv, "scheduled_s"] >= t_conv + 300.0).all()
    assert (req.state == "finished").all()
    # converting hours are their own state, billed, booked under the new model
    h = res.instance_hours
    ch = h[h.state == "converting"]
    assert set(ch.model) == {"b"} and ch.hours.sum() == pytest.approx(2 * 300.0 / 3600)
    by = hours_by(res)
    billed = sum(by.get(s.value, 0.0) for s in BILLED)
    assert res.summary["instance_hours"]["billed"] == pytest.approx(billed, rel=1e-12)
    # per instance: billed + pooled hours = lifetime (first event to release or the end)
    first = log.groupby("instance").time_s.min()
    end = log[log.to_state == "released"].groupby("instance").time_s.max().reindex(first.index).fillna(res.summary["end_s"])
    assert by.sum() == pytest.approx(float((end - first).sum()) / 3600, rel=1e-12)
    assert res.timeseries["n_converting"].max() >= 1


def test_conversion_with_other_engine_settings_gets_a_fresh_engine():
    sc = scenario()
    m = dict(sc.models)
    m["b"] = m["b"].model_copy(update={"engine": m["b"].engine.model_copy(update={"max_num_seqs": 8})})
    sc = sc.model_copy(update={"models": m})
    holder = {}

    def engines(s, w, seed):
        holder["e"] = CheckedEngines(s, w, seed)
        return holder["e"]

    res = run_scenario(sc, actors=[MoveOnce(300.0)], engines=engines)
    assert (res.requests.state == "finished").all()
    assert all(e.inst.switches == 0 for e in holder["e"].engines)
    conv = res.lifecycle[res.lifecycle.to_state == "converting"]
    moved = conv[conv.from_state == "draining"].instance.iloc[0]
    assert sum(e.inst.name == moved for e in holder["e"].engines) == 2  # one per tenure


def test_convert_s_defaults_to_load_s():
    sc = scenario(convert_s=None)
    res = run_scenario(sc, actors=[MoveOnce(300.0)])
    log = res.lifecycle
    for iid, g in log.groupby("instance"):
        seq = list(g.to_state)
        if "converting" in seq:
            k = seq.index("converting")
            assert g.time_s.iloc[k + 1] - g.time_s.iloc[k] == pytest.approx(120.0)


# ------------------------------------------------------------------- deadlines, sim engines
def deadline_run(enforce, dl_s):
    n = 400
    rng = np.random.default_rng(5)
    t = np.sort(rng.uniform(0, 60, n))
    tier = np.where(rng.random(n) < 0.5, "NIW", "IW-F")
    w = make(t, rng.integers(500, 3000, n), rng.integers(50, 400, n), model="a", region="r", tier=tier,
             deadline_s=t + dl_s)
    sc = parse_scenario({
        "name": "dl", "workload": {"generator": "poisson", "duration_s": 1, "streams": [
            {"model": "a", "region": "r", "rate_rps": 1.0, **TOK}]},
        "regions": [{"name": "r"}],
        "models": {"a": {"engine": {"kv_capacity_tokens": 20000, "max_num_seqs": 16}}},
        "endpoints": [{"model": "a", "region": "r", "instances": 1}],
        "enforce_deadlines": enforce,
    })
    holder = {}

    def engines(s, wl, seed):
        holder["e"] = CheckedEngines(s, wl, seed)
        return holder["e"]

    res = run_scenario(sc, workload=w, engines=engines)
    return res, holder["e"]


def test_deadlines_time_out_unstarted_requests_in_sim_engines():
    res, eng = deadline_run(["NIW"], 20.0)
    req = res.requests
    to = req[req.state == "timeout"]
    assert len(to) > 10 and (to.tier == "NIW").all()
    assert to.scheduled_s.isna().all() and to.reason.str.contains("not started").all()
    assert res.summary["timed_out"] == len(to)
    assert ((req.state == "finished") | (req.state == "timeout")).all()
    niw_fin = req[(req.tier == "NIW") & (req.state == "finished")]
    assert (niw_fin.scheduled_s <= niw_fin.deadline_s).all()
    # IW requests past their (reported-only) deadline were still served
    iw = req[req.tier == "IW-F"]
    assert (iw.scheduled_s > iw.deadline_s).any()
    # KV conserved: invariants held after every event, and nothing is held at the end
    assert all(e.inst.used == 0 and e.inst.outstanding == 0 for e in eng.engines)


def test_unreachable_deadlines_change_nothing():
    a, _ = deadline_run(["NIW", "IW-F"], 1e9)
    b, _ = deadline_run([], 1e9)
    cols = [c for c in a.requests.columns]
    assert a.requests[cols].equals(b.requests[cols])
    assert a.summary.pop("timed_out") == 0
    assert a.summary == b.summary
