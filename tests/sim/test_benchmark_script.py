"""The throughput benchmark runs end to end on a tiny size and prints one JSON line (no timing asserted)."""

import json
import subprocess
import sys

from ..conftest import ROOT, pythonpath_env


def test_sim_throughput_prints_one_json_line(mirror):
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sim_throughput.py"), "--requests", "3000",
         "--instances", "3"], capture_output=True, text=True, env=pythonpath_env(), cwd=ROOT, check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    d = json.loads(lines[0])
    for key in ("requests", "instances", "wall_s", "requests_per_s", "peak_rss_mb", "mode"):
        assert key in d
    assert d["requests"] == 3000 and d["instances"] == 3 and d["mode"] == "fast"
    assert d["finished"] == 3000 and d["capacity_rps_per_instance"] > 0
