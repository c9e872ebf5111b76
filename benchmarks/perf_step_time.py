"""Cost of one step-time evaluation per backend (the simulator's hot loop). Prints one JSON line.

scalar_ns: one Python call with scalar aggregates (the event-by-event path);
vector_ns_per_step: amortised cost per iteration of one vectorised call over N iterations (the
fast-forward path). Data-backed backends are skipped (and listed) when their data is absent.
"""

from __future__ import annotations

import json
import os
import platform
import time

import numpy as np

import servesim.perf as P


def _time(f, n):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        f(n)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def bench(m, n_scalar=20000, n_vec=100000, seed=0):
    rng = np.random.default_rng(seed)
    ds = rng.integers(1, 128, n_vec).astype(float)
    dc = ds * rng.integers(64, 2048, n_vec)
    pt = np.where(rng.random(n_vec) < 0.1, rng.integers(16, 2048, n_vec), 0).astype(float)
    pc = pt * pt
    sp, sc, sd, sdc = pt[:n_scalar].tolist(), pc[:n_scalar].tolist(), ds[:n_scalar].tolist(), dc[:n_scalar].tolist()
    st = m.step_time

    def scalar(n):
        for i in range(n):
            st(sp[i], sc[i], sd[i], sdc[i])

    def vector(n):
        st(pt, pc, ds, dc)

    r = {"scalar_ns": round(_time(scalar, n_scalar), 1), "vector_ns_per_step": round(_time(vector, n_vec) * 1.0, 2)}
    # the same calls through the exact memo, all hits (a simulator re-asking for known shapes)
    c = P.CachedStepTime(m)
    scalar_c = c.step_time
    for i in range(n_scalar):
        scalar_c(sp[i], sc[i], sd[i], sdc[i])

    def cached(n):
        for i in range(n):
            scalar_c(sp[i], sc[i], sd[i], sdc[i])

    r["cached_hit_ns"] = round(_time(cached, n_scalar), 1)
    return r


def main():
    specs = {
        "linear": ("linear", None, None),
        "fitted": ({"backend": "fitted", "coefficients": {"a_p": 7e-3, "a_d": 8e-3, "b_pt": 2e-5, "c_pc": 2e-10, "b_ds": 1e-4, "c_dc": 8e-8}}, None, None),
        "roofline": ("roofline", "llama-2-70b", "a100-80gb"),
        "splitwise": ("splitwise", "llama-2-70b", "a100-80gb"),
        "aegaeon": ("aegaeon", "qwen2.5-7b", "h800"),
        "vidur": ("vidur", "llama-2-7b", "a100-80gb"),
    }
    tps = {"roofline": 8, "splitwise": 8}
    out, skipped = {}, {}
    for name, (spec, model, hw) in specs.items():
        try:
            m = P.build(spec, model=model, hardware=hw, tp=tps.get(name, 1))
        except Exception as e:  # data not fetched: say so, do not fake a number
            skipped[name] = str(e)[:120]
            continue
        r = bench(m)
        if hasattr(m, "out_of_grid"):
            r["out_of_grid_frac"] = round(m.out_of_grid / max(m.calls, 1), 4)
        out[name] = r
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(json.dumps({"benchmark": "perf_step_time", "python": platform.python_version(), "numpy": np.__version__,
                      "cpu_count": os.cpu_count(), "loadavg_1min": load,
                      "n_scalar": 20000, "n_vector": 100000, "backends": out, "skipped": skipped}, sort_keys=True))


if __name__ == "__main__":
    main()
