"""Where an HTTP replay's extra latency comes from: the front end's own work or the engine slowed
beside it (issue 33 item 3). For each load of an in-process calibration (`servesim
engine-calibrate --replay-mode in-process -o CAL`), the same workload is replayed over HTTP on a
fresh server of the same model and engine settings, then split with vLLM's own request timers
(front-end part = vLLM's TTFT - its queue time - its prefill time; the engine's decode time) and
simulated with the calibration's fit, with and without the measured front end as a queue
(`servesim engine-frontend`; measured here unless --frontend names a profile). One JSON line per
load; run it alone on the machine (it measures latency in real time).

    python benchmarks/frontend_http_vs_inprocess.py --calibration CAL --model MODEL [--frontend FE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd


def main(argv=None) -> int:
    from servesim.engine.compare import compare_run
    from servesim.engine.frontend_cost import measure
    from servesim.engine.replay import replay
    from servesim.engine.server import EngineConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", required=True, help="an in-process engine-calibrate output folder")
    ap.add_argument("--model", required=True, help="the model folder the calibration served")
    ap.add_argument("--frontend", default=None, help="a frontend.json (default: measure one first)")
    ap.add_argument("--work", default=None, help="where the HTTP replays go (default: a temporary folder)")
    a = ap.parse_args(argv)
    cal = Path(a.calibration)
    fit = cal / "profile" / "fit.json"
    loads = sorted((d for d in (cal / "replay").glob("load*") if (d / "requests.parquet").exists()),
                   key=lambda d: float(d.name[4:]))
    if not fit.exists() or not loads:
        raise SystemExit(f"{cal}: no profile/fit.json or replay/load*/requests.parquet")
    work = Path(a.work or tempfile.mkdtemp(prefix="fe-http-"))
    s0 = json.loads((loads[0] / "summary.json").read_text())
    if s0.get("replay") != "in-process":
        raise SystemExit(f"{loads[0]}: not an in-process replay")
    names = {f.name for f in fields(EngineConfig)}
    cfg = EngineConfig(**{k: (tuple(v) if k == "extra_args" else v) for k, v in s0["engine"].items() if k in names})
    fe_path = Path(a.frontend) if a.frontend else None
    if fe_path is None:
        measure(a.model, work / "frontend", cfg)
        fe_path = work / "frontend" / "frontend.json"
    for d in loads:
        h = work / "http" / d.name
        replay(cal / "workloads" / f"{d.name}.parquet", h, model=a.model, config=cfg)
        s = json.loads((h / "summary.json").read_text())
        ip = pd.read_parquet(d / "requests.parquet")
        hq = pd.read_parquet(h / "requests.parquet")
        t_plain, _ = compare_run(h, fit, arrivals="sent")
        t_fe, sim_fe = compare_run(h, fit, arrivals="sent", frontend=fe_path)
        pick = lambda t, m, c: float(t[(t.metric == m) & (t.coalesced == "keep")][c].iloc[0])  # noqa: E731
        decode_ip = float((ip.e2e_s - ip.ttft_s).mean())
        fe_part = s["engine_mean_time_to_first_token_s"] - s["engine_mean_queue_time_s"] - s["engine_mean_prefill_time_s"]
        row = {"benchmark": "frontend_http_vs_inprocess", "load": float(d.name[4:]), "requests": len(hq),
               "inproc_ttft_mean_s": float(ip.ttft_s.mean()), "http_ttft_mean_s": float(hq.ttft_s.mean()),
               "vllm_frontend_part_mean_s": fe_part, "vllm_queue_mean_s": s["engine_mean_queue_time_s"],
               "vllm_prefill_mean_s": s["engine_mean_prefill_time_s"],
               "inproc_decode_mean_s": decode_ip, "vllm_decode_mean_s": s["engine_mean_decode_time_s"],
               "engine_decode_slowdown": s["engine_mean_decode_time_s"] / decode_ip if decode_ip > 0 else float("nan"),
               "client_send_lag_p99_s": s.get("client_send_lag_p99_s")}
        for m in ("p50_ttft_s", "p90_ttft_s", "p50_tpot_s", "p50_e2el_s"):
            row[f"http_{m}"] = pick(t_plain, m, "engine")
            row[f"sim_{m}"] = pick(t_plain, m, "sim")
            row[f"sim_frontend_{m}"] = pick(t_fe, m, "sim")
        row["frontend_passes"] = sim_fe.attrs.get("frontend", {}).get("passes")
        row["frontend"] = str(fe_path)
        print(json.dumps({k: (round(v, 6) if isinstance(v, float) and np.isfinite(v) else v) for k, v in row.items()}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
