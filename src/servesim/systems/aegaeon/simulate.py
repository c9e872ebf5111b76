"""One call that runs a system on a workload and summarises it: `simulate(system, workload, settings)`.

`summary` gives the Aegaeon run numbers (the artifact's attainment, switches, KV) that the sweeps
and figures read; `standard_summary` the project's one run summary (`servesim.metrics.summarize`
on the standard request table, with every token's recorded time) with those under ``paper``.
"""

from __future__ import annotations

import pandas as pd

from ...metrics import SLO, summarize
from . import slo
from .pool import AegaeonPool, PoolResult
from .request import from_workload, tokens_table
from .settings import Settings
from .sllm import SllmSim

SYSTEMS = ("aegaeon", "sllm", "sllm_plus")


def simulate(system: str, workload: pd.DataFrame, settings: Settings | None = None,
             source: str = "<workload>") -> PoolResult:
    """Run ``system`` on a workload table; the result's ``requests`` carries per-request attainment."""
    s = settings or Settings()
    if system not in SYSTEMS:
        raise ValueError(f"aegaeon simulate: system={system!r}; expected one of {SYSTEMS}")
    sim = AegaeonPool(s) if system == "aegaeon" else SllmSim(s, policy=system)
    res = sim.run(from_workload(workload, source))
    pr = slo.per_request(res.requests, s.ttft_s, s.tbt_s)
    res.requests = res.requests.assign(attain_ae=pr.attain_ae.to_numpy(), attain_token=pr.attain_token.to_numpy())
    return res


def summary(res: PoolResult, system: str, s: Settings) -> dict:
    """Run-level numbers (attainment in %, the reading each used)."""
    t = res.requests
    n = len(t)
    ok = ~t.failed.to_numpy()
    ttft = (t.first_token_s - t.arrival_s)[ok]
    return {
        "system": system,
        "n_requests": int(n),
        "n_models_with_requests": int(t.model.nunique()),
        "n_failed": int((~ok).sum()),
        "tokens": int(t.tokens_out.sum()),
        "attainment_pct": 100.0 * float(t.attain_ae.mean()) if n else float("nan"),
        "attainment_token_pct": 100.0 * float(t.attain_token.mean()) if n else float("nan"),
        "attainment_pct_skip_failed": 100.0 * float(t.attain_ae[ok & (t.tokens_out > 0).to_numpy()].mean())
        if ok.any() else float("nan"),
        "ttft_p50_s": float(ttft.median()) if ok.any() else float("nan"),
        "ttft_p90_s": float(ttft.quantile(0.9)) if ok.any() else float("nan"),
        "n_switches": int(len(res.switches)),
        "switch_latency_mean_s": float(res.switches.latency_s.mean()) if len(res.switches) else 0.0,
        "switch_prefetched_frac": float(res.switches.prefetched.mean()) if len(res.switches) else 0.0,
        "kv_transfer_s_mean": float(t.kv_transfer_s.mean()) if n else 0.0,
        "sim_end_s": float(res.stats.get("end_s", float("nan"))),
        "fragmentation_pct_all": _fragmentation(res.stats.get("host_cache")),
        "metric": "attain_ae (artifact compute_slo, failed = 0, unweighted mean over requests)",
        "settings": s.as_dict(),
        "stats": {k: v for k, v in res.stats.items()},
    }


def standard_summary(res: PoolResult, system: str, s: Settings) -> dict:
    """`servesim.metrics.summarize` of a run, with the SLO ``(ttft_s, tpot_s) = (s.ttft_s, s.tbt_s)``
    and the recorded token times, plus ``paper``: this module's `summary` (the artifact's readings).
    The two attainments differ by definition: the summary's ``token_slo_attainment`` is the share
    of all requested tokens that met ``arrival + ttft + k * tbt`` (tokens weighted, no re-basing)
    and ``slo_attainment`` the share of requests with TTFT and mean TPOT within bounds, where the
    paper's ``attainment_pct`` is the artifact's ``compute_slo`` per request (partial credit after
    a miss), averaged over requests; both count a failed request as a miss."""
    out = summarize(res.requests, slo=SLO(ttft_s=s.ttft_s, tpot_s=s.tbt_s), tokens=tokens_table(res.requests))
    out["paper"] = summary(res, system, s)
    return out


def _fragmentation(reports) -> float | None:
    """Host KV cache fragmentation over all nodes (each node's numbers taken at its own peak)."""
    if not reports:
        return None
    a = sum(r["all"]["allocated_bytes"] for r in reports)
    f = sum(r["all"]["fragmented_bytes"] for r in reports)
    return 100.0 * f / a if a else 0.0
