"""What long runs keep in memory stays bounded, and the compact stores give the same results.

Over a simulated week of a fleet these were GBs: each instance's decode-end log (one float per
decode iteration of its life; now trimmed to the open stints) and one str object per request
and column (now one shared object per distinct value)."""

import numpy as np
import pandas as pd

from servesim.fleet.core import shared_strings
from servesim.sim import Cluster, InstanceConfig

from .simutil import GENERIC, workload


def _long_run(mode):
    rng = np.random.default_rng(3)
    n = 1500  # ~30k decode iterations on each instance: the log fills and is trimmed many times
    w = workload(np.cumsum(rng.exponential(0.05, n)), rng.integers(1, 400, n), rng.integers(1, 300, n))
    cfg = InstanceConfig(num_blocks=120, max_num_seqs=16, max_num_batched_tokens=512)  # tight: preemptions
    cl = Cluster.uniform(2, cfg, GENERIC, mode=mode, router="random", check_invariants=True)
    return cl, cl.run(w).requests


def test_decode_end_log_is_trimmed_and_tbt_is_exact():
    fast, a = _long_run("fast")
    _, b = _long_run("reference")
    pd.testing.assert_frame_equal(a, b, check_exact=True)  # TBT columns come from the log
    assert a.preemptions.sum() > 0  # stints that close and reopen
    for inst in fast.instances:
        assert inst.ds.D > 8 * len(inst._elog)  # many more iterations than the log holds
        assert inst._e0 > 0


def test_shared_strings_equals_astype_str_with_one_object_per_value():
    s = pd.Series(pd.Categorical(["eastus", "westus", "eastus", "centralus"] * 50))
    out = shared_strings(s)
    assert out.dtype == object
    np.testing.assert_array_equal(out, s.astype(str).to_numpy(object))
    assert len({id(x) for x in out}) == 3
    for col in (pd.Series(["a", "b", "a"], dtype="string"), pd.Series(["x", None, "x"], dtype=object)):
        assert list(shared_strings(col)) == list(col.astype(str).to_numpy(object))
