"""A single instance with batch size 1 is an M/D/1 queue: check the mean wait (Pollaczek-Khinchine)."""

import numpy as np

from servesim.perf import LinearStepTime
from servesim.sim import Cluster, InstanceConfig
from simutil import workload

STEP = LinearStepTime()  # defaults: 5 ms overhead, 0.1 ms per prompt token, ...


def service_time(P, O):
    df = Cluster.uniform(1, InstanceConfig(num_blocks=1000, max_num_seqs=1), STEP).run(
        workload([0.0], [P], [O])).requests
    return float(df.finish_s[0])


def test_md1_mean_wait_and_utilisation():
    P, O = 200, 20
    D = service_time(P, O)  # deterministic service: 1 prefill + 19 decode iterations
    for rho in (0.3, 0.6):
        lam = rho / D
        n = 20000
        rng = np.random.default_rng(int(rho * 100))
        arr = np.cumsum(rng.exponential(1 / lam, n))
        cfg = InstanceConfig(num_blocks=1000, max_num_seqs=1)
        df = Cluster.uniform(1, cfg, STEP).run(workload(arr, np.full(n, P), np.full(n, O))).requests
        wait = (df.scheduled_s - df.arrival_s).to_numpy()
        svc = (df.finish_s - df.scheduled_s).to_numpy()
        assert np.allclose(svc, D, rtol=0, atol=1e-9)  # no batching, no interference
        wq = rho * D / (2 * (1 - rho))  # Pollaczek-Khinchine for M/D/1
        assert abs(wait.mean() - wq) / wq < 0.08, (rho, wait.mean(), wq)
        # fraction of requests that find the server idle = 1 - rho (PASTA)
        assert abs((wait == 0).mean() - (1 - rho)) < 0.02
