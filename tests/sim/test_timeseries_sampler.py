"""The shared instance sampler (sim.timeseries.Sampler): extra probe columns, and the kernel's stop
rule for periodic observers (no arrival pending and every instance idle)."""

import numpy as np
import pandas as pd
import pytest

from servesim.perf import LinearStepTime
from servesim.sim import PRIO_SAMPLE, Cluster, InstanceConfig, Sampler
from servesim.sim.timeseries import TIMESERIES_COLUMNS
from servesim.workload.schema import make


def _cluster(n=2):
    cfg = InstanceConfig(num_blocks=300, policy="vllm-v0", max_num_batched_tokens=2048)
    return Cluster.uniform(n, cfg, LinearStepTime())


def _workload(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return make(np.sort(rng.uniform(0, 5, n)), rng.integers(10, 200, n), rng.integers(5, 80, n))


def test_probes_add_columns_after_the_standard_ones():
    cl = _cluster()
    smp = Sampler(cl.kernel, cl.instances, 0.5, probes={"queued": lambda i: i.queued_prefill_tokens,
                                                        "running_again": lambda i: i.num_running})
    res = cl.run(_workload())
    ts = smp.frame()
    assert tuple(ts.columns) == (*TIMESERIES_COLUMNS, "queued", "running_again")
    assert (ts.queued >= 0).all()
    assert (ts.running_again == ts.running).all() and ts.running.max() > 0   # read at the same instant
    assert ts.time_s.max() <= res.requests.finish_s.max() + 0.5


def test_a_probe_cannot_replace_a_standard_column():
    cl = _cluster()
    with pytest.raises(ValueError, match="kv_usage"):
        Sampler(cl.kernel, cl.instances, 1.0, probes={"kv_usage": lambda i: 0})


def test_two_periodic_observers_do_not_keep_each_other_alive():
    cl = _cluster()
    ticks = []

    def other(_arg):   # a second observer that, like the sampler, only looks at the kernel's queue
        ticks.append(cl.kernel.now)
        if cl.kernel.pending():
            cl.kernel.at(cl.kernel.now + 0.3, other, None, PRIO_SAMPLE)

    cl.kernel.at(0.0, other, None, PRIO_SAMPLE)
    smp = Sampler(cl.kernel, cl.instances, 0.5)
    res = cl.run(_workload(30, seed=1))
    end = res.requests.finish_s.max()
    assert smp.frame().time_s.max() <= end + 0.5   # the sampler stopped once the work was done
    assert max(ticks) <= end + 1.0                 # and so, with nothing else queued, did the other
    assert isinstance(smp.frame(), pd.DataFrame)
