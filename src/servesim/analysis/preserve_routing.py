"""PreServe Figs 4, 9, 10 read back: the routing sweeps of workflow/runs/preserve.yaml
(``fig09/{model}/{router}``, ``fig04/{router}``) as tables, and the claim metrics.

Readings (each stated where the metric is made):
* a point = one (model, router, QPS), statistics averaged over its seeds (§5.4: 5 runs);
* SLO violations = 100 - attainment (%); a reduction is 100 x (1 - PreServe / other);
* the 13B knee (QPS not stated): the lowest grid QPS at which the best baseline's SLO attainment
  falls below ``KNEE_ATTAINMENT``; the grid's highest QPS when none does; "second best" = the
  best baseline by the metric compared;
* Fig 4 overload: an instance with KV usage > 95 % while prompts queue on it; an episode is a run
  of such samples, its minute the episode's start;
* readings that change one router (`swapped_metrics`): PreServe's told the true lengths
  (`true-lengths`), MU's reads of the engines (`MU_READINGS`);
* the claims' nulls (workflow/claims/README.md): round robin in PreServe's place (``*_rr_*``,
  compared with the best of LR and MU), PreServe's router in LR's / MU's place in the Fig 4 pilot,
  and the Fig 9/10 load-dependent claims read at the other side of the knee.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from . import runs

BASELINES = ("rr", "lr", "mu")
ROUTERS = ("rr", "lr", "mu", "preserve")
STATS = ("ttft_mean_s", "ttft_p99_s", "norm_mean_s", "norm_p99_s", "e2e_mean_s", "slo_attainment_pct",
         "router_select_ms_mean", "preemptions")
KNEE_ATTAINMENT = 99.0
OVERLOAD_KV = 0.95


def load(pattern: str, scale: str, root=None) -> tuple[pd.DataFrame, dict[str, dict]]:
    """(every points.csv row of the runs matching ``pattern``, their summaries by run name)."""
    frames, summ = [], {}
    for r in runs.select("preserve", [pattern], scale, root):
        d = runs.run_dir("preserve", r.name, scale, root)
        frames.append(pd.read_csv(d / "points.csv"))
        summ[r.name] = json.loads((d / "summary.json").read_text())
    if not frames:
        raise FileNotFoundError(f"no preserve runs match {pattern!r} at scale {scale}")
    return pd.concat(frames, ignore_index=True), summ


def load_mu_readings(scale: str, root=None) -> dict[str, pd.DataFrame]:
    """Curves of the MU readings' runs (``fig09mu/{model}/{read}``) by ``read``; empty at a scale
    that declares none (quick)."""
    reads = sorted({r.name.rsplit("/", 1)[1] for r in runs.select("preserve", ["fig09mu/*"], scale, root)})
    return {read: curves(load(f"fig09mu/*/{read}", scale, root)[0]) for read in reads}


def curves(pts: pd.DataFrame) -> pd.DataFrame:
    """Seed means per (model, router, qps), with the seed count."""
    g = pts.groupby(["model", "router", "qps"], sort=True)
    out = g[list(STATS)].mean()
    out["n_seeds"] = g.size()
    return out.reset_index()


def _get(cur: pd.DataFrame, model: str, router: str, qps: float, col: str) -> float:
    m = cur[(cur.model == model) & (cur.router == router) & np.isclose(cur.qps, qps)]
    return float(m[col].iloc[0]) if len(m) else math.nan


def reduction(ours: float, other: float) -> float:
    """100 x (1 - ours / other); NaN when undefined."""
    if not (np.isfinite(ours) and np.isfinite(other)) or other <= 0:
        return math.nan
    return 100.0 * (1.0 - ours / other)


def knee_qps(cur: pd.DataFrame, model: str) -> float:
    c = cur[(cur.model == model) & cur.router.isin(BASELINES)]
    if c.empty:
        return math.nan
    best = c.groupby("qps").slo_attainment_pct.max().sort_index()
    below = best[best < KNEE_ATTAINMENT]
    return float(below.index[0] if len(below) else best.index[-1])


def _others(router: str) -> list[str]:
    """The baselines ``router`` is compared with: every baseline but itself (the null, round
    robin, put in PreServe's place is compared with LR and MU)."""
    return [b for b in BASELINES if b != router]


def _preserve_best(cur: pd.DataFrame, model: str, qps: float, router: str = "preserve") -> bool | None:
    c = cur[(cur.model == model) & np.isclose(cur.qps, qps)].set_index("router")
    others = _others(router)
    if router not in c.index or not set(others) <= set(c.index):
        return None
    p, b = c.loc[router], c.loc[others]
    lower = all(p[k] <= b[k].min() for k in ("ttft_mean_s", "ttft_p99_s", "norm_mean_s", "norm_p99_s"))
    return bool(lower and p.slo_attainment_pct >= b.slo_attainment_pct.max())


def _vs_best_baseline(cur: pd.DataFrame, model: str, qps: float, router: str) -> tuple[float, float, str, str]:
    """(P99 normalised latency reduction, SLO violation reduction, the best baseline by each) of
    ``router`` against the best of the other baselines at (model, qps); NaNs when a run is missing."""
    c = cur[(cur.model == model) & np.isclose(cur.qps, qps)].set_index("router") if np.isfinite(qps) else None
    others = _others(router)
    if c is None or router not in c.index or not set(others) <= set(c.index):
        return math.nan, math.nan, "", ""
    b = c.loc[others]
    return (reduction(c.loc[router, "norm_p99_s"], b.norm_p99_s.min()),
            reduction(100 - c.loc[router, "slo_attainment_pct"], 100 - b.slo_attainment_pct.max()),
            str(b.norm_p99_s.idxmin()), str(b.slo_attainment_pct.idxmax()))


def _spread(g: pd.DataFrame) -> float:
    """(max - min) / min of the routers' mean normalised latency at one QPS."""
    return float((g.norm_mean_s.max() - g.norm_mean_s.min()) / g.norm_mean_s.min())


def fig09_metrics(cur: pd.DataFrame, summ: dict[str, dict]) -> dict:
    m: dict = {}
    q = 10.5
    for r in ROUTERS:
        m[f"ttft_mean_{r}_qps10p5_s"] = _get(cur, "7b", r, q, "ttft_mean_s")
        m[f"ttft_p99_{r}_qps10p5_s"] = _get(cur, "7b", r, q, "ttft_p99_s")
        m[f"p99_norm_latency_{r}_qps10p5_s"] = _get(cur, "7b", r, q, "norm_p99_s")
        m[f"slo_attainment_{r}_qps10p5_pct"] = _get(cur, "7b", r, q, "slo_attainment_pct")
        m[f"slo_violation_{r}_qps10p5_pct"] = 100.0 - m[f"slo_attainment_{r}_qps10p5_pct"]
        m[f"preemptions_{r}_qps10p5"] = _get(cur, "7b", r, q, "preemptions")
    # what the diagnoses cite: the best baseline (MU in simulation) against LR, through the same
    # reductions, and every router's range at the two loads around the 7B knee
    m["ttft_mean_reduction_mu_vs_lr_pct_qps10p5"] = reduction(m["ttft_mean_mu_qps10p5_s"], m["ttft_mean_lr_qps10p5_s"])
    m["p99_norm_latency_reduction_mu_vs_lr_pct_qps10p5"] = reduction(m["p99_norm_latency_mu_qps10p5_s"],
                                                                    m["p99_norm_latency_lr_qps10p5_s"])
    m["slo_violation_reduction_mu_vs_lr_pct_qps10p5"] = reduction(m["slo_violation_mu_qps10p5_pct"],
                                                                 m["slo_violation_lr_qps10p5_pct"])
    for x, tag in ((9.9, "qps9p9"), (q, "qps10p5")):
        at = cur[(cur.model == "7b") & np.isclose(cur.qps, x) & cur.router.isin(ROUTERS)]
        for col, name, unit in (("ttft_mean_s", "ttft_mean", "_s"), ("slo_attainment_pct", "slo_attainment", "_pct"),
                                ("preemptions", "preemptions", "")):
            m[f"{name}_min_{tag}{unit}"] = float(at[col].min()) if len(at) else math.nan
            m[f"{name}_max_{tag}{unit}"] = float(at[col].max()) if len(at) else math.nan
    m["ttft_mean_reduction_vs_lr_pct_qps10p5"] = reduction(m["ttft_mean_preserve_qps10p5_s"], m["ttft_mean_lr_qps10p5_s"])
    m["p99_norm_latency_reduction_vs_lr_pct_qps10p5"] = reduction(m["p99_norm_latency_preserve_qps10p5_s"],
                                                                 m["p99_norm_latency_lr_qps10p5_s"])
    m["slo_violation_reduction_vs_lr_pct_qps10p5"] = reduction(100 - m["slo_attainment_preserve_qps10p5_pct"],
                                                              100 - m["slo_attainment_lr_qps10p5_pct"])
    # the claims' null: round robin in PreServe's place, through the same reductions
    m["ttft_mean_reduction_rr_vs_lr_pct_qps10p5"] = reduction(m["ttft_mean_rr_qps10p5_s"], m["ttft_mean_lr_qps10p5_s"])
    m["p99_norm_latency_reduction_rr_vs_lr_pct_qps10p5"] = reduction(m["p99_norm_latency_rr_qps10p5_s"],
                                                                    m["p99_norm_latency_lr_qps10p5_s"])
    m["slo_violation_reduction_rr_vs_lr_pct_qps10p5"] = reduction(100 - m["slo_attainment_rr_qps10p5_pct"],
                                                                 100 - m["slo_attainment_lr_qps10p5_pct"])
    # below 9.3 QPS: the largest relative spread of mean normalised latency across the routers
    low = cur[(cur.model == "7b") & (cur.qps < 9.3 - 1e-9)]
    spreads = [_spread(g) for _, g in low.groupby("qps") if g.router.nunique() == len(ROUTERS)]
    m["router_spread_below_9p3"] = float(max(spreads)) if spreads else math.nan
    # its null: the same spread above the knee (10.5 QPS), where the paper has the routers differ
    high = cur[(cur.model == "7b") & np.isclose(cur.qps, q)]
    m["router_spread_qps10p5"] = _spread(high) if high.router.nunique() == len(ROUTERS) else math.nan
    # 13B at its knee, against the best baseline by each metric
    k = knee_qps(cur, "13b")
    m["knee_qps_13b"] = k
    c13 = cur[(cur.model == "13b") & np.isclose(cur.qps, k)].set_index("router") if np.isfinite(k) else None
    for r in ROUTERS:
        have = c13 is not None and r in c13.index
        m[f"p99_norm_latency_{r}_13b_knee_s"] = float(c13.loc[r, "norm_p99_s"]) if have else math.nan
        m[f"slo_violation_{r}_13b_knee_pct"] = 100.0 - float(c13.loc[r, "slo_attainment_pct"]) if have else math.nan
    m["p99_norm_latency_reduction_mu_vs_lr_pct_13b"] = reduction(m["p99_norm_latency_mu_13b_knee_s"],
                                                                m["p99_norm_latency_lr_13b_knee_s"])
    m["slo_violation_reduction_mu_vs_lr_pct_13b"] = reduction(m["slo_violation_mu_13b_knee_pct"],
                                                             m["slo_violation_lr_13b_knee_pct"])
    if c13 is not None and "preserve" in c13.index and set(BASELINES) <= set(c13.index):
        b = c13.loc[list(BASELINES)]
        m["second_best_p99_13b"] = str(b.norm_p99_s.idxmin())
        m["second_best_violations_13b"] = str(b.slo_attainment_pct.idxmax())
        m["p99_norm_latency_reduction_vs_second_best_pct_13b"] = reduction(c13.loc["preserve", "norm_p99_s"], b.norm_p99_s.min())
        m["slo_violation_reduction_vs_second_best_pct_13b"] = reduction(100 - c13.loc["preserve", "slo_attainment_pct"],
                                                                        100 - b.slo_attainment_pct.max())
    else:
        m["p99_norm_latency_reduction_vs_second_best_pct_13b"] = math.nan
        m["slo_violation_reduction_vs_second_best_pct_13b"] = math.nan
    # "over 45.8 % ... and 61.8 %" (abstract, §1): the smaller of the two models' reductions against
    # the best baseline (7B at 10.5 QPS, 13B at its knee); and every such key with round robin (the
    # null) in PreServe's place, against the best of LR and MU
    for r, tag in (("preserve", ""), ("rr", "_rr")):
        p7, v7, b7p, b7v = _vs_best_baseline(cur, "7b", q, r)
        p13, v13, _, _ = _vs_best_baseline(cur, "13b", k, r)
        if r == "rr":
            m["p99_norm_latency_reduction_rr_vs_second_best_pct_13b"] = p13
            m["slo_violation_reduction_rr_vs_second_best_pct_13b"] = v13
        else:
            m["p99_norm_latency_reduction_vs_second_best_pct_qps10p5"] = p7
            m["slo_violation_reduction_vs_second_best_pct_qps10p5"] = v7
            m["second_best_p99_qps10p5"], m["second_best_violations_qps10p5"] = b7p, b7v
        m[f"p99_norm_latency_reduction{tag}_vs_second_best_pct_min"] = min(p7, p13) if np.isfinite([p7, p13]).all() else math.nan
        m[f"slo_violation_reduction{tag}_vs_second_best_pct_min"] = min(v7, v13) if np.isfinite([v7, v13]).all() else math.nan
    highs = [("7b", x) for x in sorted(set(cur[cur.model == "7b"].qps)) if x >= 10.5 - 1e-9]
    if np.isfinite(k):
        highs.append(("13b", k))
    for r in ("preserve", "rr"):
        best = [_preserve_best(cur, mo, x, r) for mo, x in highs]
        m[f"{r}_best_all_metrics_high_qps"] = bool(best and all(b is True for b in best)) if best and None not in best else None
    s7 = [s for n, s in summ.items() if s["model"] == "7b"]
    iso = s7[0]["isolated_norm_latency_s"] if s7 else math.nan
    slo = s7[0]["settings"]["slo_norm_s"] if s7 else math.nan
    m["isolated_norm_latency_s"] = iso
    m["slo_over_isolated_norm_latency"] = slo / iso if s7 else math.nan
    any_s = next(iter(summ.values()))
    m["run_duration_s"] = float(any_s["duration_s"])
    m["n_instances"] = int(any_s["n_instances"])
    m["n_seeds"] = int(cur.n_seeds.min())
    m["predictions"] = any_s["predictions"]
    return m


def swapped_metrics(cur: pd.DataFrame, alt: pd.DataFrame, summ: dict[str, dict], router: str,
                    keys: tuple[str, ...], prefix: str) -> dict:
    """A Fig 9 reading that changes one router: ``keys`` of `fig09_metrics` with ``router``'s rows
    replaced by ``alt``'s (runs on the same requests, arrivals and grid), each key prefixed
    ``prefix``; the other routers, the knee rule and the formulas stay. Empty without such runs."""
    if alt is None or alt.empty or not (alt.router == router).any():
        return {}
    swapped = pd.concat([cur[cur.router != router], alt[alt.router == router]], ignore_index=True)
    m = fig09_metrics(swapped, summ)
    return {prefix + k: m[k] for k in keys}


#: fig09_metrics' keys that the claims read under the reading `true-lengths`, and those their
#: diagnoses cite
TRUE_LENGTHS_KEYS = (
    "p99_norm_latency_reduction_vs_second_best_pct_min", "slo_violation_reduction_vs_second_best_pct_min",
    "ttft_mean_reduction_vs_lr_pct_qps10p5", "ttft_mean_preserve_qps10p5_s",
    "p99_norm_latency_reduction_vs_lr_pct_qps10p5", "p99_norm_latency_preserve_qps10p5_s",
    "slo_attainment_preserve_qps10p5_pct", "slo_violation_reduction_vs_lr_pct_qps10p5",
    "p99_norm_latency_reduction_vs_second_best_pct_13b", "slo_violation_reduction_vs_second_best_pct_13b",
    "preserve_best_all_metrics_high_qps", "preemptions_preserve_qps10p5", "ttft_p99_preserve_qps10p5_s",
)
TRUE_LENGTHS_PREFIX = "truelen_"


def true_lengths_metrics(cur: pd.DataFrame, cur_true: pd.DataFrame, summ: dict[str, dict]) -> dict:
    """The reading `true-lengths`: PreServe's rows from the runs whose router was told each
    request's true output length (`swapped_metrics`, keys prefixed `truelen_`)."""
    return swapped_metrics(cur, cur_true, summ, "preserve", TRUE_LENGTHS_KEYS, TRUE_LENGTHS_PREFIX)


#: Fig 9's readings of what MU reads (runs ``fig09mu/{model}/{read}``): reading name -> (the runs'
#: ``read``, the key prefix). The default (fig09's MU) reads the engines every 1 s
MU_READINGS = {"mu-oracle": ("oracle", "muoracle_"), "mu-scrape15": ("s15", "mu15_"), "mu-scrape30": ("s30", "mu30_")}
#: fig09_metrics' keys that the claims against the best baseline read under those readings, and
#: those their diagnoses cite (the 13B knee is the best baseline's, so it moves with MU)
MU_READING_KEYS = (
    "p99_norm_latency_reduction_vs_second_best_pct_min", "slo_violation_reduction_vs_second_best_pct_min",
    "p99_norm_latency_reduction_vs_second_best_pct_13b", "slo_violation_reduction_vs_second_best_pct_13b",
    "preserve_best_all_metrics_high_qps", "knee_qps_13b", "second_best_p99_qps10p5", "second_best_violations_qps10p5",
    "ttft_mean_mu_qps10p5_s", "p99_norm_latency_mu_qps10p5_s", "slo_attainment_mu_qps10p5_pct",
    "preemptions_mu_qps10p5", "p99_norm_latency_mu_13b_knee_s", "slo_violation_mu_13b_knee_pct",
)


def mu_reading_metrics(cur: pd.DataFrame, by_read: dict[str, pd.DataFrame], summ: dict[str, dict]) -> dict:
    """Every `MU_READINGS` reading: `MU_READING_KEYS` with MU's rows swapped for the reading's runs
    in ``by_read`` (curves by the runs' ``read``; `swapped_metrics`), NaN where its runs are not
    there (quick declares none: the claims then report the reading as not measured)."""
    m: dict = {}
    for read, prefix in MU_READINGS.values():
        m.update(dict.fromkeys((prefix + k for k in MU_READING_KEYS), math.nan))
        m.update(swapped_metrics(cur, by_read.get(read), summ, "mu", MU_READING_KEYS, prefix))
    return m


def fig10_metrics(cur: pd.DataFrame, summ: dict[str, dict], qps_normal: float = 9.3, qps_high: float = 10.5) -> dict:
    """Measured overheads (7B PreServe run) against its latencies at a non-overloaded load, and
    the worst baseline's latencies at a high load."""
    s = next((v for v in summ.values() if v["model"] == "7b" and v["router"] == "preserve"), None)
    pred = s["predictor_ms_mean"] if s and s["predictor_ms_mean"] is not None else math.nan
    other = _get(cur, "7b", "preserve", qps_normal, "router_select_ms_mean")
    e2e = _get(cur, "7b", "preserve", qps_normal, "e2e_mean_s")
    m = {"qps_normal": qps_normal, "qps_high": qps_high,
         "length_predict_ms_mean": pred, "other_overhead_ms_mean": other,
         "overhead_ms_total": pred + other,
         "dispatch_overhead_ms_charged": s["dispatch_overhead_ms"] if s else math.nan,
         "ttft_mean_ms": 1e3 * _get(cur, "7b", "preserve", qps_normal, "ttft_mean_s"),
         "norm_latency_mean_ms": 1e3 * _get(cur, "7b", "preserve", qps_normal, "norm_mean_s"),
         "e2e_mean_s": e2e,
         "overhead_pct_of_e2e": 100.0 * (pred + other) / (1e3 * e2e) if np.isfinite(e2e) else math.nan}
    for q, tag in ((qps_high, ""), (qps_normal, "_normal_load")):
        # tag "_normal_load", the claims' null: the same worst baseline at the non-overloaded load,
        # where the paper has no imbalance (its latencies must not reach the imbalance magnitudes)
        hi = cur[(cur.model == "7b") & np.isclose(cur.qps, q) & cur.router.isin(BASELINES)]
        m[f"ttft_mean_ms_imbalanced{tag}"] = 1e3 * float(hi.ttft_mean_s.max()) if len(hi) else math.nan
        m[f"norm_latency_mean_ms_imbalanced{tag}"] = 1e3 * float(hi.norm_mean_s.max()) if len(hi) else math.nan
    return m


def overload_episodes(ts: pd.DataFrame) -> pd.DataFrame:
    """(instance, start_s, end_s) of every run of samples with KV > 95 % and queued prompts."""
    rows = []
    for j, g in ts.sort_values("time_s").groupby("instance"):
        over = ((g.kv_usage > OVERLOAD_KV) & (g.queued_prompt_tokens > 0)).to_numpy()
        t = g.time_s.to_numpy()
        start = None
        for k, o in enumerate(over):
            if o and start is None:
                start = t[k]
            if not o and start is not None:
                rows.append((int(j), float(start), float(t[k])))
                start = None
        if start is not None:
            rows.append((int(j), float(start), float(t[-1])))
    return pd.DataFrame(rows, columns=["instance", "start_s", "end_s"]).sort_values("start_s", ignore_index=True)


def fig04_metrics(series: dict[str, pd.DataFrame]) -> dict:
    """First and second overload minutes per router (the second: the next episode starting at
    least a minute after the first), and whether each router leaves one instance overloaded while
    another is not; beside them, how many other instances first overload within a minute of the
    first (the fleet filling as a whole) and the range of the instances' peak KV usage."""
    m: dict = {}
    partial = {}
    # "preserve": the claims' null, PreServe's Eq. 1 router in LR's / MU's place (run fig04/preserve)
    for r in ("lr", "mu", "preserve"):
        ts = series.get(r)
        first = second = math.nan
        others, last = 0, math.nan
        if ts is not None:
            ep = overload_episodes(ts)
            if len(ep):
                first = ep.start_s.iloc[0] / 60.0
                later = ep[ep.start_s >= ep.start_s.iloc[0] + 60.0]
                second = later.start_s.iloc[0] / 60.0 if len(later) else math.nan
                firsts = ep.groupby("instance").start_s.min().sort_values()
                near = firsts[(firsts > firsts.iloc[0]) & (firsts < firsts.iloc[0] + 60.0)]
                others, last = int(len(near)), (float(near.iloc[-1]) / 60.0 if len(near) else math.nan)
            peak = ts.groupby("instance").kv_usage.max()
            m[f"{r}_peak_kv_usage_min"], m[f"{r}_peak_kv_usage_max"] = float(peak.min()), float(peak.max())
            over = (ts.kv_usage > OVERLOAD_KV) & (ts.queued_prompt_tokens > 0)
            n_over = over.groupby(ts.time_s).sum()
            n_inst = ts.instance.nunique()
            partial[r] = bool(((n_over >= 1) & (n_over < n_inst)).any())
        m[f"{r}_first_overload_min"], m[f"{r}_second_overload_min"] = first, second
        m[f"{r}_instances_overloading_within_1min_of_first"] = others
        m[f"{r}_last_of_those_overload_min"] = last
    both = [partial[r] for r in ("lr", "mu") if r in partial]
    m["both_routers_overload_single_instance"] = bool(all(both)) if len(both) == 2 else None
    m["preserve_overloads_single_instance"] = partial.get("preserve")
    return m
