"""servesim.sim.routers: names, the accepted router forms, and Cluster load records."""

import numpy as np
import pytest

from servesim.sim import ROUTERS, Cluster, InstanceConfig, JSQTokens, LeastOutstanding, make_router
from servesim.sim.routers import CallableRouter
from servesim.workload import schema

from .simutil import DYADIC


def test_names_accept_hyphen_and_underscore():
    assert ROUTERS["least_outstanding"] is ROUTERS["least-outstanding"] is LeastOutstanding
    assert "jsq_tokens" in ROUTERS and "nope" not in ROUTERS and 3 not in ROUTERS
    assert sorted(ROUTERS) == sorted(k for k in ROUTERS if "_" not in k)  # stored hyphenated
    assert isinstance(make_router("power_of_two"), ROUTERS["power-of-two"])


def test_make_router_forms_and_errors():
    r = JSQTokens()
    assert make_router(r) is r
    assert isinstance(make_router(JSQTokens), JSQTokens)
    assert isinstance(make_router(lambda c, q: 0), CallableRouter)
    with pytest.raises(ValueError, match="unknown router 'fastest'"):
        make_router("fastest")
    with pytest.raises(TypeError):
        make_router(3)
    with pytest.raises(RuntimeError, match="bind"):
        make_router(lambda c, q: 0).select(None)


def test_cluster_load_records_return_to_zero_and_jsq_tokens_balances_tokens():
    rng = np.random.default_rng(4)
    n = 300
    w = schema.make(np.cumsum(rng.exponential(0.02, n)), rng.integers(1, 400, n), rng.integers(1, 50, n))
    cfg = InstanceConfig(num_blocks=400, max_num_seqs=16, max_num_batched_tokens=512)
    seen = []

    def spy(cluster, req):  # a callable router that records the loads it sees
        seen.append([(x.outstanding, x.pending_tokens) for x in cluster.loads])
        return req.idx % 3

    cl = Cluster.uniform(3, cfg, DYADIC, router=spy)
    cl.run(w)
    assert all(x.outstanding == 0 and x.pending_tokens == 0 for x in cl.loads)
    assert max(o for s in seen for o, _ in s) > 1  # loads did build up between arrivals
    res = Cluster.uniform(3, cfg, DYADIC, router="jsq_tokens").run(w).requests
    tok = (res["prompt_tokens"] + 1).groupby(res["instance"]).sum()
    assert len(tok) == 3 and tok.max() < 1.5 * tok.min()


def test_workload_for_an_unloaded_model_is_an_error():
    import numpy as np
    import pytest

    from servesim.perf import LinearStepTime
    from servesim.sim import Cluster, InstanceConfig
    from servesim.workload import make

    wl = make(np.arange(3.0), [10, 10, 10], [5, 5, 5], model="llama-2-7b")
    with pytest.raises(ValueError, match=r"\['llama-2-7b'\] are loaded on no instance"):
        Cluster.uniform(2, InstanceConfig(num_blocks=100), LinearStepTime()).run(wl)
    res = Cluster.uniform(2, InstanceConfig(num_blocks=100, model="llama-2-7b"), LinearStepTime()).run(wl)
    assert (res.requests.state == "finished").all()
