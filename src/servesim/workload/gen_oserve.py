"""OServe type-mix workloads whose composition drifts over time (spec oserve §1.2, §2, §5).

Requests fall into four types by (input, output) length: SILO, LILO, SISO, LISO (S/L = short/long,
I/O = input/output). The paper clusters with k-means (k = 4) without giving thresholds; we offer
``method="quadrant"`` (median split of the pool, default: its types are exactly the four names)
and ``method="kmeans"`` (k = 4 on z-scored log lengths, clusters named by centroid vs the medians).
The type is written to the ``app`` column, so an OServe scheduler can route by it (the oracle type
the paper implies, spec §1.2).

Generators (type pools from the Azure 2023 code+conversation trace, 28,185 requests):

* :func:`spatial` -- a fixed composition: Table 1's levels S1-S5 (proportions and their CV).
* :func:`temporal` -- consecutive spans of S-levels: Table 2's T1-T4 (CV across spans).
* :func:`trace` -- the 80-min T1 / 50-min T2 traces with six spans P1-P6 and a smooth drift
  (T1: from short-output-heavy P1, DP-favouring, to long-output-heavy P6, TP-favouring).
* :func:`type_counts` -- two weeks of per-minute per-type counts for the LSTM predictor:
  diurnal + weekly, short-output types peak in business hours, long-output ones in the evening
  (Fig 2), with log-normal noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .arrivals import categorical, lognormal_noise, seeds
from .characterise import proportions_cv, temporal_cv
from .schema import WorkloadError, validate


def _stated_levels() -> dict:
    """OServe's Tables 1-2 as stated (``data/oserve_levels.yaml``; the CV notebooks read it too)."""
    return yaml.safe_load((Path(__file__).parent / "data" / "oserve_levels.yaml").read_text())


_LEVELS = _stated_levels()
TYPES = tuple(_LEVELS["types"])
#: Table 1: level -> SILO/LILO/SISO/LISO percentages, and the stated CV
SPATIAL = {k: tuple(v["proportions_pct"]) for k, v in _LEVELS["spatial"].items()}
SPATIAL_CV = {k: v["paper_cv"] for k, v in _LEVELS["spatial"].items()}
#: Table 2: level -> the S-levels of its three consecutive spans, and the stated CV
TEMPORAL = {k: tuple(v["spans"]) for k, v in _LEVELS["temporal"].items()}
TEMPORAL_CV = {k: v["paper_cv"] for k, v in _LEVELS["temporal"].items()}
TRACE_MINUTES = {"T1": 80, "T2": 50}


def _kmeans(x: np.ndarray, k: int, rng: np.random.Generator, restarts: int = 10, iters: int = 100) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding; the best of ``restarts`` runs (labels)."""
    best, best_inertia = None, np.inf
    for _ in range(restarts):
        c = x[[rng.integers(len(x))]]
        for _ in range(k - 1):
            d = ((x[:, None, :] - c[None]) ** 2).sum(-1).min(1)
            c = np.vstack([c, x[rng.choice(len(x), p=d / d.sum())]])
        for _ in range(iters):
            lab = ((x[:, None, :] - c[None]) ** 2).sum(-1).argmin(1)
            new = np.array([x[lab == j].mean(0) if (lab == j).any() else c[j] for j in range(k)])
            if np.allclose(new, c):
                break
            c = new
        inertia = ((x - c[lab]) ** 2).sum()
        if inertia < best_inertia:
            best, best_inertia = (lab, c), inertia
    return best


def classify(prompt: np.ndarray, output: np.ndarray, method: str = "quadrant", seed: int = 0) -> np.ndarray:
    """Type index (into TYPES) of each request."""
    prompt, output = np.asarray(prompt, float), np.asarray(output, float)
    mi, mo = np.median(prompt), np.median(output)
    if method == "quadrant":
        long_in, long_out = prompt > mi, output > mo
    elif method == "kmeans":
        x = np.column_stack([np.log(prompt), np.log1p(output)])
        x = (x - x.mean(0)) / x.std(0)
        lab, c = _kmeans(x, 4, np.random.default_rng(seed))
        zmi = (np.log(mi) - np.log(prompt).mean()) / np.log(prompt).std()
        zmo = (np.log1p(mo) - np.log1p(output).mean()) / np.log1p(output).std()
        long_in, long_out = c[lab, 0] > zmi, c[lab, 1] > zmo
    else:
        raise WorkloadError(f"oserve classify: method={method!r}; expected quadrant|kmeans")
    # SILO=0, LILO=1, SISO=2, LISO=3
    return np.where(long_out, np.where(long_in, 1, 0), np.where(long_in, 3, 2)).astype(np.int8)


def type_pool(method: str = "quadrant", seed: int = 0, lengths: pd.DataFrame | None = None) -> pd.DataFrame:
    """(prompt_tokens, output_tokens, type) pool: the Azure 2023 code + conversation requests by default."""
    if lengths is None:
        from .loaders import load_azure_2023

        lengths = pd.concat([load_azure_2023("code"), load_azure_2023("conv")], ignore_index=True)
    p, o = lengths["prompt_tokens"].to_numpy(), lengths["output_tokens"].to_numpy()
    return pd.DataFrame({"prompt_tokens": p, "output_tokens": o, "type": classify(p, o, method, seed)})


def _exact_types(rng: np.random.Generator, n: int, props) -> np.ndarray:
    """``n`` type labels whose counts match ``props`` (largest remainder), in random order."""
    p = np.asarray(props, float) / np.sum(props)
    c = np.floor(n * p).astype(int)
    c[np.argsort(-(n * p - c))[: n - c.sum()]] += 1
    return rng.permutation(np.repeat(np.arange(len(p), dtype=np.int8), c))


def _build(minutes_props: np.ndarray, rate_rps: np.ndarray, seed: int, pool: pd.DataFrame | None, name: str,
           exact: bool, model: str) -> pd.DataFrame:
    """Per-minute composition (minutes x 4) and rates -> a request table with the type in ``app``."""
    pool = pool if pool is not None else type_pool()
    r_n, r_t, r_typ, r_len = seeds(seed, 4)
    counts = r_n.poisson(rate_rps * 60.0)
    if exact:  # one exact allocation per span of constant composition keeps Table 1/2 proportions exact
        typ = np.concatenate([_exact_types(r_typ, c, p) for c, p in zip(counts, minutes_props)]) if counts.sum() \
            else np.zeros(0, np.int8)
    else:
        cum = np.cumsum(minutes_props / minutes_props.sum(1, keepdims=True), axis=1)
        u = r_typ.random(counts.sum())
        typ = (u[:, None] > np.repeat(cum, counts, axis=0)).sum(1).astype(np.int8)
    minute = np.repeat(np.arange(len(counts)), counts)
    t = minute * 60.0 + r_t.random(minute.size) * 60.0
    order = np.argsort(t, kind="stable")
    t, typ = t[order], typ[order]
    ptype = pool["type"].to_numpy()
    p_all, o_all = pool["prompt_tokens"].to_numpy(), pool["output_tokens"].to_numpy()
    prompt, output = np.empty(t.size, np.int64), np.empty(t.size, np.int64)
    for j in range(len(TYPES)):
        sel = typ == j
        members = np.flatnonzero(ptype == j)
        if sel.any() and members.size == 0:
            raise WorkloadError(f"{name}: type {TYPES[j]} has no request in the length pool")
        pick = members[r_len.integers(0, members.size, sel.sum())] if sel.any() else members[:0]
        prompt[sel], output[sel] = p_all[pick], o_all[pick]
    one = np.zeros(t.size, np.int8)
    df = pd.DataFrame({"request_id": np.arange(t.size, dtype=np.int64), "arrival_s": t, "prompt_tokens": prompt,
                       "output_tokens": output, "model": categorical(one, [model]),
                       "region": categorical(one, ["default"]), "tier": categorical(one, ["IW-F"]),
                       "app": categorical(typ, TYPES), "deadline_s": np.nan})
    return validate(df, f"<{name}>")


def spatial(level: str = "S1", rate_rps: float = 5.0, minutes: int = 10, seed: int = 0, *,
            pool: pd.DataFrame | None = None, model: str = "default") -> pd.DataFrame:
    """Table 1 level: constant composition ``SPATIAL[level]`` at Poisson ``rate_rps`` for ``minutes``."""
    if level not in SPATIAL:
        raise WorkloadError(f"oserve spatial: level={level!r}; expected one of {list(SPATIAL)}")
    props = np.tile(SPATIAL[level], (minutes, 1))
    df = _build(props[:1], np.array([rate_rps * minutes]), seed, pool, f"oserve:{level}", True, model)
    df["arrival_s"] = df["arrival_s"] * minutes  # one exact allocation over the whole level, spread in time
    df = validate(df.sort_values("arrival_s", kind="stable").assign(
        request_id=np.arange(len(df), dtype=np.int64)), f"<oserve:{level}>")
    df.attrs.update(generator="oserve.spatial", level=level, target_cv=SPATIAL_CV[level])
    return df


def temporal(level: str = "T1", rate_rps: float = 5.0, span_minutes: int = 10, seed: int = 0, *,
             pool: pd.DataFrame | None = None, model: str = "default") -> pd.DataFrame:
    """Table 2 level: three consecutive spans of ``span_minutes`` with the S-levels of ``TEMPORAL[level]``."""
    if level not in TEMPORAL:
        raise WorkloadError(f"oserve temporal: level={level!r}; expected one of {list(TEMPORAL)}")
    parts = []
    for k, s in enumerate(TEMPORAL[level]):
        d = spatial(s, rate_rps, span_minutes, seed * 1000 + k, pool=pool, model=model)
        d["arrival_s"] = d["arrival_s"] + k * span_minutes * 60.0
        parts.append(d)
    df = pd.concat(parts, ignore_index=True)
    df["request_id"] = np.arange(len(df), dtype=np.int64)
    df = validate(df, f"<oserve:{level}>")
    df.attrs.update(generator="oserve.temporal", level=level, spans=list(TEMPORAL[level]),
                    span_s=span_minutes * 60.0, target_cv=TEMPORAL_CV[level])
    return df


def _azure_shape(minutes: int) -> np.ndarray:
    """The Azure 2023 combined per-minute counts, mirrored (forth, back, forth ...) to ``minutes``."""
    from .loaders import load_azure_2023

    a = np.concatenate([load_azure_2023(k)["arrival_s"].to_numpy() for k in ("code", "conv")])
    c = np.bincount((a // 60).astype(int))[:57].astype(float)  # the 57 full minutes both traces cover
    return np.concatenate([c, c[::-1]] * (minutes // (2 * len(c)) + 1))[:minutes]


def _base_rate(minutes: int, lead_in: int = 0) -> np.ndarray:
    """Per-minute relative rate: the Azure 2023 combined per-minute counts, mirrored to length, with
    mean 1 over minutes 0..``minutes``-1; ``lead_in`` > 0 prepends the minutes -``lead_in``..-1 (the
    shape mirrored back from minute 0: minute -k is minute k - 1)."""
    tiled = _azure_shape(max(minutes, lead_in))
    rel = tiled[:minutes] / tiled[:minutes].mean()
    return np.concatenate([tiled[:lead_in][::-1] / tiled[:minutes].mean(), rel]) if lead_in else rel


def _trace_props(name: str, minutes: int) -> np.ndarray:
    """The trace's per-minute type composition (minutes x 4, SILO, LILO, SISO, LISO), before noise."""
    so_heavy = np.array(SPATIAL["S5"], float)               # SILO, LILO, SISO, LISO
    lo_heavy = so_heavy[[2, 3, 0, 1]]                         # swap short/long output
    balanced = np.full(4, 25.0)
    x = np.linspace(0.0, 1.0, minutes)
    if name == "T1":
        w = 0.5 - 0.5 * np.cos(np.pi * x)                     # smooth 0 -> 1
        return (1 - w)[:, None] * so_heavy + w[:, None] * lo_heavy
    w = np.sin(2 * np.pi * x)                                 # 0 -> +1 -> -1 -> 0
    return np.where(w[:, None] >= 0, (1 - w)[:, None] * balanced + w[:, None] * lo_heavy,
                    (1 + w)[:, None] * balanced - w[:, None] * so_heavy)


def trace(name: str = "T1", rate_rps: float = 5.0, seed: int = 0, *, pool: pd.DataFrame | None = None,
          model: str = "default", drift_noise: float = 0.05) -> pd.DataFrame:
    """OServe's evaluation traces: T1 (80 min) drifts from short-output-heavy (S5-like) to long-output
    heavy (the mirror of S5); T2 (50 min) goes balanced -> long-output -> short-output. Six spans P1-P6
    (``df.attrs["spans_s"]``). The mean rate is ``rate_rps``; the per-minute shape follows Azure 2023."""
    if name not in TRACE_MINUTES:
        raise WorkloadError(f"oserve trace: name={name!r}; expected T1 or T2")
    minutes = TRACE_MINUTES[name]
    props = _trace_props(name, minutes)
    r_noise = seeds(seed, 2)[1]
    props = props * lognormal_noise(r_noise, props.shape, drift_noise)
    props = props / props.sum(1, keepdims=True)
    rate = rate_rps * _base_rate(minutes)
    df = _build(props, rate, seed, pool, f"oserve:{name}", False, model)
    edges = np.linspace(0, minutes * 60.0, 7)
    df.attrs.update(generator="oserve.trace", trace=name, spans_s=[[float(a), float(b)] for a, b in zip(edges[:-1], edges[1:])],
                    minute_props=props.tolist())
    return df


def trace_lead_in(name: str, minutes: int, rate_rps: float = 5.0, seed: int = 0, *,
                  drift_noise: float = 0.05) -> np.ndarray:
    """Per-type request counts (``minutes`` x 4, oldest first) of the minutes *before*
    ``trace(name, rate_rps, seed)`` starts: the history a forecaster has at the trace's first span
    (a service runs before an experiment's window opens). Never served. [A] The paper gives no
    lead-in; ours continues the trace's own process back in time: its opening composition (P1's,
    with the same per-minute drift noise) and the Azure per-minute shape mirrored back from minute 0
    (the trace itself mirrors it forward), at the trace's scale; Poisson counts per type, from a
    stream of ``seed`` apart from the trace's."""
    if name not in TRACE_MINUTES:
        raise WorkloadError(f"oserve trace: name={name!r}; expected T1 or T2")
    if minutes < 0:
        raise WorkloadError(f"oserve trace lead-in: minutes={minutes} must be >= 0")
    n = TRACE_MINUTES[name]
    rel = _base_rate(n, minutes)[:minutes]
    rng = seeds(seed, 8)[7]                                   # the trace's own streams are 0-3
    props = np.tile(_trace_props(name, n)[0], (minutes, 1)) * lognormal_noise(rng, (minutes, 4), drift_noise)
    props = props / props.sum(1, keepdims=True)
    lam = (rate_rps * 60.0 * rel)[:, None] * props
    return rng.poisson(lam).astype(float)


def type_counts(days: int = 14, seed: int = 0, *, mean_per_minute: float = 478.0, noise_sigma: float = 0.1,
                short_peak_hour: float = 14.0, long_peak_hour: float = 20.0) -> pd.DataFrame:
    """Per-minute request counts per type over ``days`` days (LSTM training data, spec oserve §1.6/§5).

    Short-output types (SISO, LISO) peak in business hours at high rate, long-output types (SILO,
    LILO) in the evening at a lower rate (Fig 2); weekends run at 60 %. ``mean_per_minute`` = 478,
    the Azure 2023 combined trace's mean.
    """
    from .gen_sageserve import diurnal

    m = np.arange(days * 1440)
    h = (m % 1440) / 60.0
    week = np.where((m // 1440) % 7 < 5, 1.0, 0.6)
    short = diurnal(h, 0.25, short_peak_hour, 3.5) * 1.6
    long_ = diurnal(h, 0.35, long_peak_hour, 3.0)
    rel = np.column_stack([long_ * 0.9, long_ * 0.8, short * 1.0, short * 0.8]) * week[:, None]
    rel = rel / rel.sum(1).mean() * mean_per_minute
    rng = np.random.default_rng(seed)
    counts = rng.poisson(rel * lognormal_noise(rng, rel.shape, noise_sigma))
    df = pd.DataFrame(counts, columns=list(TYPES))
    df.insert(0, "minute", m)
    return df


def composition(df: pd.DataFrame, edges_s) -> np.ndarray:
    """Type proportions (spans x 4) of a workload between consecutive ``edges_s``."""
    t = df["arrival_s"].to_numpy()
    typ = pd.Categorical(df["app"], categories=TYPES).codes
    span = np.searchsorted(np.asarray(edges_s), t, side="right") - 1
    out = np.zeros((len(edges_s) - 1, len(TYPES)))
    ok = (span >= 0) & (span < len(edges_s) - 1) & (typ >= 0)
    np.add.at(out, (span[ok], typ[ok]), 1)
    return out / np.maximum(out.sum(1, keepdims=True), 1)


def level_cvs(df: pd.DataFrame) -> dict[str, float]:
    """Spatial CV of a whole workload and temporal CV across its spans (when ``attrs`` has them)."""
    t_end = float(df["arrival_s"].max()) + 1e-9
    res = {"spatial_cv": proportions_cv(composition(df, [0.0, t_end])[0])}
    if "span_s" in df.attrs:
        n = len(df.attrs["spans"])
        res["temporal_cv"] = temporal_cv(composition(df, np.arange(n + 1) * df.attrs["span_s"]))
    return res
