"""Example scenarios through the real servesim.sim engines and the CLI."""

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from servesim.fleet import load_scenario, run_scenario
from servesim.fleet.cli import add_parser, main
from servesim.sim import REQUEST_COLUMNS

EX = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def short(name, seconds):
    sc = load_scenario(EX / f"{name}.yaml")
    w = sc.workload.model_copy(update={"duration_s": seconds})
    return sc.model_copy(update={"workload": w})


@pytest.fixture(scope="module")
def one_region():
    return run_scenario(load_scenario(EX / "one_region.yaml"))


def test_one_region_example(one_region):
    res = one_region
    req = res.requests
    assert list(req.columns[: len(REQUEST_COLUMNS)]) == list(REQUEST_COLUMNS)
    assert (req["state"] == "finished").all() and not res.summary["partial"]
    fin = req
    assert (fin["first_token_s"] >= fin["scheduled_s"]).all() and (fin["scheduled_s"] >= fin["arrival_s"]).all()
    assert (fin["finish_s"] >= fin["first_token_s"]).all()
    ts = res.timeseries
    # the step at 5 min makes the autoscaler add instances, which arrive after the lead time
    log = res.lifecycle
    ups = log[(log.to_state == "requested") & (log.time_s >= 300)]
    assert len(ups) >= 2
    # each new instance is ready exactly provision_s + load_s (60 s + 60 s) after its request
    req_t = log[log.to_state == "requested"].set_index("instance")["time_s"]
    rdy_t = log[log.to_state == "ready"].groupby("instance")["time_s"].min()
    both = req_t.index.intersection(rdy_t.index)
    assert len(both) >= 2 and np.allclose(rdy_t[both] - req_t[both], 120.0)
    assert ts.loc[ts.time_s.between(480, 600), "n_ready"].max() > ts.loc[ts.time_s < 300, "n_ready"].max()
    assert ts["kv_util"].between(0, 1).all()
    # after the step (10 min) the scaler drains instances again, one per cooldown (15 s) at most
    drains = np.sort(log.loc[(log.to_state == "draining") & (log.time_s >= 600), "time_s"].to_numpy())
    assert len(drains) >= 2 and (np.diff(drains) >= 15 - 1e-9).all()
    assert ts["n_ready"].iloc[-1] < ts.loc[ts.time_s.between(480, 600), "n_ready"].max()
    # every request's engine is an instance that was ready when the request was sent
    rdy = log[log.to_state == "ready"].groupby("instance")["time_s"].min()
    assert (req["scheduled_s"].to_numpy() >= rdy.loc[req["instance"]].to_numpy()).all()


def test_three_region_example_crosses_regions_with_latency():
    res = run_scenario(load_scenario(EX / "three_region.yaml"))
    req = res.requests
    assert (req["state"] == "finished").all()
    away = req["instance"].str.split("/").str[0] != req["region"]
    assert away.any()
    lat = {("westus", "centralus"): 0.04, ("westus", "eastus"): 0.07, ("centralus", "eastus"): 0.03}
    need = [lat.get((a, b), lat.get((b, a))) for a, b in
            zip(req.loc[away, "region"], req.loc[away, "instance"].str.split("/").str[0])]
    assert ((req.loc[away, "scheduled_s"] - req.loc[away, "arrival_s"]).to_numpy() >= np.array(need) - 1e-12).all()
    assert set(req["tier"]) == {"IW-F", "IW-N", "NIW"}
    s = res.summary
    assert s["all"]["with_deadline"] == len(req)
    att = {t: b["deadline_attainment"] for t, b in s["by_tier"].items()}
    assert 0 < att["IW-F"] <= 1 and att["NIW"] == 1.0
    iwf = req[req["tier"] == "IW-F"]
    assert att["IW-F"] == pytest.approx(((iwf["first_token_s"] - iwf["arrival_s"]) <= 1.0 + 1e-9).mean())


def test_fast_and_reference_modes_agree():
    sc = short("one_region", 400.0)
    a = run_scenario(sc)
    b = run_scenario(sc.model_copy(update={"mode": "reference"}))
    pd.testing.assert_frame_equal(a.requests, b.requests)
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    pd.testing.assert_frame_equal(a.lifecycle, b.lifecycle)


def test_cli_same_seed_identical_bytes(tmp_path, capsys):
    scen = tmp_path / "s.yaml"
    text = (EX / "one_region.yaml").read_text().replace("duration_s: 15min", "duration_s: 4min")
    scen.write_text(text)
    digests = []
    for d in ("a", "b"):
        assert main([str(scen), "-o", str(tmp_path / d), "--no-progress"]) == 0
        digests.append({p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / d).iterdir()})
    assert digests[0] == digests[1] and "requests.parquet" in digests[0]
    assert main([str(scen), "-o", str(tmp_path / "c"), "--seed", "5", "--no-progress"]) == 0
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["seed"] == 5
    assert "one-region-step" in capsys.readouterr().out


def test_cli_rejects_bad_scenario_naming_key(tmp_path, capsys):
    scen = tmp_path / "bad.yaml"
    scen.write_text((EX / "one_region.yaml").read_text().replace("cooldown_s: 15s", "cooldown_s: 15 fortnights"))
    assert main([str(scen), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "autoscaler.cooldown_s" in err and "fortnights" in err
    assert not (tmp_path / "o").exists()


def test_add_parser_registers_simulate():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    add_parser(sub)
    args = ap.parse_args(["simulate", "x.yaml", "-o", "out", "--seed", "3"])
    assert args.cmd == "simulate" and args.seed == 3 and callable(args.func)


def test_progress_bar_run_is_identical():
    sc = short("three_region", 120.0)
    a = run_scenario(sc)
    b = run_scenario(sc, progress=True)
    pd.testing.assert_frame_equal(a.requests, b.requests)
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    assert a.summary == b.summary


def test_custom_router_actor_and_global_router_through_the_python_api():
    from servesim.fleet import Scale
    from servesim.policies import HeapRouter, register_router

    @register_router("test-e2e-least-tokens-per-req")
    class Mixed(HeapRouter):
        def key(self, inst):
            return inst.pending_tokens + 500 * inst.outstanding

    class AddOneAt60:
        period_s = 60.0

        def __init__(self):
            self.done = False

        def act(self, view):
            if self.done:
                return []
            self.done = True
            assert view.endpoint("llama-2-7b", "westus").ready >= 1
            return [Scale("llama-2-7b", "westus", +1)]

    class AllToCentral:
        def route(self, i, fleet):
            return (fleet.req_model[i], "centralus") if fleet.req_model[i] == "llama-2-7b" else None

    sc = short("three_region", 90.0)
    sc = sc.model_copy(update={"router": sc.router.model_copy(update={"name": "test-e2e-least-tokens-per-req"}),
                               "autoscaler": None})
    res = run_scenario(sc, actors=[AddOneAt60()], global_router=AllToCentral())
    req = res.requests
    seven = req["model"] == "llama-2-7b"
    assert (req.loc[seven, "instance"].str.startswith("centralus/")).all()
    assert (req.loc[~seven, "instance"].str.split("/").str[0] == req.loc[~seven, "region"]).all()
    log = res.lifecycle
    # the actor's +1 at t=60 reclaimed westus's pooled 7b instance (reclaim lead time 30 s)
    w = log[(log.region == "westus") & (log.time_s >= 60)]
    assert list(w.to_state[:2]) == ["loading", "ready"] and w.time_s.iloc[1] == pytest.approx(90.0)


def test_a_failing_actor_keeps_what_was_simulated(tmp_path):
    """An actor that raises part-way stops the run with its own error, and the error carries
    the tables up to that moment, marked partial; `write_partial` saves them."""
    from servesim.fleet.run import write_partial

    class BreaksAt60:
        period_s = 30.0

        def act(self, view):
            if view.now >= 60.0:
                raise RuntimeError("policy bug at minute one")
            return []

    sc = short("one_region", 120.0)
    with pytest.raises(RuntimeError, match="policy bug") as err:
        run_scenario(sc, actors=[BreaksAt60()])
    part = err.value.partial_result
    s = part.summary
    assert s["partial"] and s["stopped_by"] == "RuntimeError: policy bug at minute one"
    assert s["end_s"] == 60.0
    req = part.requests
    assert (req.loc[req["state"] == "finished", "finish_s"] <= 60.0).all()
    assert (req["state"] == "finished").sum() > 0
    assert (req.loc[req["arrival_s"] > 60.0, "state"] == "unfinished").all()
    out = write_partial(err.value, tmp_path)
    assert out == tmp_path / "partial"
    assert json.loads((out / "summary.json").read_text())["stopped_by"].startswith("RuntimeError")
    assert len(pd.read_parquet(out / "requests.parquet")) == len(req)
    assert write_partial(ValueError("no run"), tmp_path / "x") is None


def test_cli_keeps_partial_results_of_a_failed_run(tmp_path, monkeypatch):
    import servesim.fleet.run as run_mod

    real = run_mod._run_kernel

    def stop_midway(kernel, fleet, horizon, progress, span):
        real(kernel, fleet, 30.0, progress, span)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_mod, "_run_kernel", stop_midway)
    # Ctrl-C: exit status 130 (no traceback); the partial results are kept and marked failed
    assert main([str(EX / "one_region.yaml"), "-o", str(tmp_path / "out"), "--no-progress"]) == 130
    assert (tmp_path / "out" / "_FAILED.json").exists() and not (tmp_path / "out" / "_COMPLETE.json").exists()
    s = json.loads((tmp_path / "out" / "partial" / "summary.json").read_text())
    assert s["partial"] and s["stopped_by"].startswith("KeyboardInterrupt") and s["end_s"] == 30.0
    assert not (tmp_path / "out" / "summary.json").exists()
