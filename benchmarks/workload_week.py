"""Benchmark: generate a 10 M-request SageServe-like week, store it as Parquet, load it back.

Prints one JSON line: requests, wall_s (generate + write + read), the three phases, peak_rss_mb.
Targets (issue 6): wall_s < 60 on one core, peak_rss_mb < 2000.
    PYTHONPATH=src python benchmarks/workload_week.py [--requests 1e7] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=float, default=1e7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="folder for the Parquet file (default: a temp dir)")
    args = ap.parse_args()
    from servesim.workload import read, sageserve_week, write

    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        path = Path(tmp) / "week.parquet"
        t0 = time.perf_counter()
        df = sageserve_week(scale=args.requests / 7.2e6, seed=args.seed)
        t1 = time.perf_counter()
        write(df, path)
        n = len(df)
        del df
        t2 = time.perf_counter()
        back = read(path)
        t3 = time.perf_counter()
        assert len(back) == n
        size_mb = path.stat().st_size / 2**20
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"benchmark": "workload_week", "requests": n, "wall_s": round(t3 - t0, 2),
                      "generate_s": round(t1 - t0, 2), "write_s": round(t2 - t1, 2), "read_s": round(t3 - t2, 2),
                      "parquet_mb": round(size_mb, 1), "peak_rss_mb": round(rss, 1), "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
