"""One output contract for every simulator (issue 27): each producer of per-request results writes
the standard request table (`servesim.sim.request_log.REQUEST_COLUMNS`, its dtypes), and
`servesim.metrics.summarize` reads it; on every one of them INV-1 (each request of the workload
ends exactly once, in one known state) and INV-3 (no request is scheduled before it arrives, no
token before scheduling, and it finishes after its first token) hold on the table.

The producers: the instance cluster (`sim.Cluster`), the fleet (`fleet.run_scenario`), SageServe's
strategies, the Aegaeon pool and both ServerlessLLM baselines, OServe's one-cluster plan server,
Llumnix and Dynamo, and PreServe's serving runs. Each runs a small case of its own; the paper
tests check the mechanisms, this one checks the table they all hand on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from servesim.metrics import summarize
from servesim.sim.request_log import REQUEST_COLUMNS, STATES
from servesim.workload import schema
from tests.data_marks import aegaeon_market, needs_aegaeon_profiles
from tests.sim.simutil import DYADIC

PRODUCERS = {}


def producer(name, *marks):
    def deco(fn):
        PRODUCERS[name] = (fn, marks)
        return fn
    return deco


def _poisson(n=80, model="m", span=40.0, seed=0, prompt=(50, 600), output=(5, 200)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return schema.make(np.sort(rng.uniform(0.0, span, n)), rng.integers(*prompt, n), rng.integers(*output, n),
                       model=model)


@producer("sim.Cluster")
def _cluster():
    from servesim.sim import Cluster, InstanceConfig

    wl = _poisson(model="default")
    res = Cluster.uniform(2, InstanceConfig(num_blocks=256, max_num_seqs=8), DYADIC, router="round_robin").run(wl)
    return wl, res.requests


@producer("fleet.run_scenario")
def _fleet():
    from servesim.fleet import parse_scenario, run_scenario

    wl = _poisson().assign(region=pd.array(["r"] * 80, dtype="string"))
    sc = {"name": "c", "duration_s": 600.0, "regions": [{"name": "r"}],
          "models": {"m": {"engine": {"kv_capacity_tokens": 4096, "max_num_seqs": 8},
                           "step_time": {"c0": 0.25, "c_pt": 1 / 64, "c_ds": 1 / 32}}},
          "endpoints": [{"model": "m", "region": "r", "instances": 2}]}
    return wl, run_scenario(parse_scenario(sc), workload=wl, seed=0).requests


@producer("sageserve.run_strategy")
def _sageserve():
    from servesim.systems.sageserve.config import SageServeConfig
    from servesim.systems.sageserve.strategies import run_strategy
    from servesim.workload import sageserve_week

    wk = sageserve_week(scale=0.02, seed=3, days=1)
    wl = wk[(wk.model == "llama-2-70b") & (wk.region == "eastus") & (wk.arrival_s < 13.5 * 3600)].reset_index(drop=True)
    t0 = 13 * 3600
    res, _ = run_strategy("reactive", wl, t0_s=t0, config=SageServeConfig(start_instances=2), seed=0, max_instances=2)
    # the strategy serves the window from t0 and renumbers its requests from 0
    served = wl[wl.arrival_s >= t0].reset_index(drop=True)
    return served.assign(request_id=np.arange(len(served)), arrival_s=served.arrival_s - t0), res.requests


def _aegaeon(system):
    from servesim.systems.aegaeon.settings import Settings
    from servesim.systems.aegaeon.simulate import simulate

    wl = aegaeon_market(6, 0.3, 20.0)
    return wl, simulate(system, wl, Settings(prefill_per_node=1, decode_per_node=1)).requests


for _system in ("aegaeon", "sllm", "sllm_plus"):
    producer(f"aegaeon.{_system}", needs_aegaeon_profiles)(lambda s=_system: _aegaeon(s))


@producer("oserve.PlanServer")
def _oserve_plans():
    from tests.systems.test_oserve_serving import PLANS, serve

    _, df, _, wl, _ = serve(PLANS)
    return wl, df


def _opt30b(n=60, span=60.0):
    return _poisson(n=n, model="opt-30b", span=span, prompt=(50, 1500), output=(5, 300))


@producer("oserve.llumnix")
def _llumnix():
    from servesim.systems.oserve import llumnix as LL
    from servesim.systems.oserve.replica import Shape

    wl = _opt30b()
    df = LL.serve("opt-30b", 8, [Shape(4), Shape(4)], wl, np.zeros(len(wl), np.int64), span_s=60.0, n_spans=1)
    return wl, df


@producer("oserve.dynamo")
def _dynamo():
    from servesim.systems.oserve import dynamo as DY

    wl = _opt30b()
    st = DY.prepare("opt-30b", 8, wl, 1, 60.0, max_pp=1)
    df, _ = DY.serve(st, wl, np.zeros(len(wl), np.int64))
    return wl, df


@producer("preserve.serving")
def _preserve():
    from servesim.systems.preserve.serving import ServingSettings, simulate

    wl = _poisson(model="llama-2-13b", span=20.0)  # 13B: the roofline step model (7B's reads Vidur's A40 data)
    df, _, _ = simulate("13b", "preserve", wl, np.full(len(wl), 100, np.int64), ServingSettings(n_instances=2),
                        overhead_s=0.05)
    return wl, df


@pytest.fixture(scope="module", params=[pytest.param(n, marks=m) for n, (_, m) in PRODUCERS.items()])
def produced(request):
    return request.param, *PRODUCERS[request.param][0]()


def test_every_simulator_writes_the_standard_request_table(produced):
    name, wl, df = produced
    missing = [c for c in REQUEST_COLUMNS if c not in df.columns]
    assert not missing, f"{name}: no {missing}"
    wrong = {c: str(df[c].dtype) for c, t in REQUEST_COLUMNS.items() if str(df[c].dtype) != t}
    assert not wrong, f"{name}: dtypes {wrong}, the contract's {[REQUEST_COLUMNS[c] for c in wrong]}"


def test_every_request_ends_once_in_a_known_state(produced):
    """INV-1 on the table: the workload's requests, each once, each in one of the contract's states."""
    name, wl, df = produced
    assert df.request_id.is_unique, name
    assert sorted(df.request_id) == sorted(wl.request_id), name
    assert set(df.state) <= set(STATES), f"{name}: states {set(df.state) - set(STATES)}"
    assert (df.state == "finished").any(), f"{name}: the case finishes nothing"


def test_times_are_causal(produced):
    """INV-3 on the table: arrival <= scheduled <= first token <= finish for a finished request, and
    TTFT / E2E are measured from the arrival."""
    name, wl, df = produced
    f = df[df.state == "finished"]
    eps = 1e-9
    assert (f.scheduled_s >= f.arrival_s - eps).all(), name
    assert (f.first_token_s >= f.scheduled_s - eps).all(), name
    assert (f.finish_s >= f.first_token_s - eps).all(), name
    assert np.allclose(f.ttft_s, f.first_token_s - f.arrival_s), name
    assert np.allclose(f.e2e_s, f.finish_s - f.arrival_s), name
    arrival = wl.set_index("request_id").arrival_s
    assert np.allclose(df.arrival_s, arrival.loc[df.request_id].to_numpy()), f"{name}: arrivals moved"


def test_the_one_summary_reads_every_table(produced):
    name, _, df = produced
    s = summarize(df)
    assert s["all"]["requests"] == len(df), name
    assert s["all"]["completed"] == int((df.state == "finished").sum()), name
    assert sum(s["all"]["states"].values()) == len(df), name
