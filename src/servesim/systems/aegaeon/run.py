"""Command line: run one system on one workload and write ``requests.parquet`` + ``summary.json``.

``requests.parquet``: the standard request table (``REQUEST_COLUMNS``) with the Aegaeon columns;
``summary.json``: ``servesim.metrics.summarize``'s layout (SLO = the run's TTFT / TBT, recorded
token times) with the Aegaeon numbers under ``paper`` (`simulate.standard_summary`).

    python -m servesim.systems.aegaeon.run --system aegaeon|sllm|sllm_plus --workload W.csv \
        --gpu h800 -o out/ [--slo-scale 0.5] [--set group_rule=artifact --set kv_size=ae ...]

``--workload``: an artifact CSV (``Request Time, Model Name, Input Length, Output Length``) or a
servesim workload table (.csv / .parquet).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import fields
from pathlib import Path

import pandas as pd

from .settings import Settings
from .simulate import SYSTEMS, simulate, standard_summary


def load_workload(path: str | Path) -> pd.DataFrame:
    from ...workload import load_aegaeon, read
    from ...workload.loaders import AEGAEON_COLUMNS

    p = Path(path)
    if p.suffix == ".csv":
        head = p.open().readline().strip().split(",")
        if tuple(h.strip() for h in head) == AEGAEON_COLUMNS:
            return load_aegaeon(p)
    return read(p)


def _coerce(key: str, value: str, s: Settings):
    f = {x.name: x for x in fields(s)}
    if key not in f:
        raise SystemExit(f"--set {key}=...: unknown setting; known: {', '.join(sorted(f))}")
    cur = getattr(s, key)
    if isinstance(cur, bool):
        if value.lower() not in ("true", "false", "1", "0"):
            raise SystemExit(f"--set {key}={value}: expected true|false")
        return value.lower() in ("true", "1")
    if isinstance(cur, tuple):
        return tuple(x.strip() for x in value.split(",") if x.strip())
    try:
        return type(cur)(value)
    except ValueError:
        raise SystemExit(f"--set {key}={value}: expected a {type(cur).__name__}") from None


def settings_from(gpu: str, sets: list[str], slo_scale: float = 1.0) -> Settings:
    """Settings for ``--gpu``, the ``--set KEY=VALUE`` items and ``--slo-scale`` (both SLOs scaled)."""
    s = Settings(gpu=gpu)
    kw = {}
    for item in sets:
        if "=" not in item:
            raise SystemExit(f"--set {item}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        kw[k.strip()] = _coerce(k.strip(), v.strip(), s)
    s = s.with_(**kw)
    return s.with_(ttft_s=s.ttft_s * slo_scale, tbt_s=s.tbt_s * slo_scale)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m servesim.systems.aegaeon.run", description=__doc__.split("\n")[0])
    ap.add_argument("--system", required=True, choices=SYSTEMS)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--gpu", default="h800")
    ap.add_argument("--slo-scale", type=float, default=1.0, help="scale both TTFT (10 s) and TBT (0.1 s)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any Settings field")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args(argv)
    s = settings_from(a.gpu, a.set, a.slo_scale)
    wl = load_workload(a.workload)
    t0 = time.perf_counter()
    res = simulate(a.system, wl, s, source=str(a.workload))
    wall = time.perf_counter() - t0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res.requests.to_parquet(out / "requests.parquet", index=False)
    res.switches.to_parquet(out / "switches.parquet", index=False)
    summ = standard_summary(res, a.system, s)
    paper = summ["paper"]
    summ.update(workload=Path(a.workload).name, slo_scale=a.slo_scale, wall_s=wall,
                sim_tokens_per_s=paper["tokens"] / wall if wall > 0 else None)
    (out / "summary.json").write_text(json.dumps(summ, indent=2, default=float) + "\n")
    print(f"{a.system} on {Path(a.workload).name}: attainment {paper['attainment_pct']:.1f}% "
          f"(per-token {paper['attainment_token_pct']:.1f}%), {paper['n_failed']} failed, {wall:.2f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
