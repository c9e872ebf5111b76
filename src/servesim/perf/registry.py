"""Name a step-time backend in a scenario file: ``servesim.perf.build(spec, model=, hardware=, tp=, pp=)``.

``spec`` is a backend name (``"roofline"``), a path to a model file written by
``servesim calibrate`` (``"results/perf/llama8b.yaml"``), or a dict ``{"backend": name, ...options}``:

=============  ==============================================================================
backend        options
=============  ==============================================================================
linear         c0, c_pt, c_pc, c_ds, c_dc (`LinearStepTime`)
roofline       eff_compute, eff_mem, eff_attn, eff_net, overhead_s, seq_overhead_s, ar_latency_s
fitted         coefficients: {a_p, a_d, b_pt, ...} | measurements: <table path> (fitted at build)
table          measurements: <table path>, prefill_axes: 2d|tokens, decode_axes: 2d|seqs
splitwise      file: perf_model.csv (SageServe's Splitwise DB; model/hardware/tp select rows),
               reading: servesim (table, axes tokens/seqs) | splitwise-sim (the public SplitwiseSim's)
aegaeon        profile: <profiles/ folder> (default: the model's), gpu: <GPU folder> (default: hardware's)
gpu-bench      timing: step|eager, engine_overhead: {k_prefill, k_decode, overhead_s, seq_overhead_s}
               (our committed GPU profiles, `sources.gpu_bench`; kernels only unless engine_overhead)
gpu-bench-fit  timing: step|eager, pp_link_bw: <bytes/s> (the roofline fitted to our profile of the
               model, nearest measured TP, plus the datasheet all-reduce and PP: `shard_fit`)
vidur          profile_model: <catalog key of a same-shape profiled model> (default: the model)
file           path: <model file> (same as passing the path as spec)
=============  ==============================================================================
"""

from __future__ import annotations

import os
from pathlib import Path
import yaml

from ..errors import InputError
from ..registry import Registry
from .base import LinearStepTime, StepTimeModel

#: ``name -> factory(options: dict, model, hardware, tp, pp) -> StepTimeModel``
BACKENDS: Registry = Registry("step-time backend", set_name=False)


class BackendError(InputError):
    """An unknown backend or a bad option; the message names it."""


def register(name: str):
    """Decorator: make a factory ``f(options: dict, model, hardware, tp, pp) -> StepTimeModel``
    available to `build` under ``name`` (a taken name is an error)."""
    return BACKENDS.register(name)


def backends() -> list[str]:
    return BACKENDS.names()


def build(spec: dict | str | os.PathLike, model: str | None = None, hardware: str | None = None,
          tp: int = 1, pp: int = 1) -> StepTimeModel:
    """A step-time model from a spec (see the module docstring). A dict spec may add
    ``cache: true`` to memoise scalar calls (`CachedStepTime`)."""
    if isinstance(spec, dict) and spec.get("cache"):
        from .cache import CachedStepTime

        return CachedStepTime(build({k: v for k, v in spec.items() if k != "cache"}, model, hardware, tp, pp))
    if isinstance(spec, (str, os.PathLike)):
        s = str(spec)
        if s.endswith((".yaml", ".yml", ".json")) or os.sep in s:
            opts = {"backend": "file", "path": s}
        else:
            opts = {"backend": s}
    elif isinstance(spec, dict):
        opts = dict(spec)
    else:
        raise BackendError(f"backend spec must be a name, a model-file path or a dict, got {type(spec).__name__}")
    name = opts.pop("backend", None)
    if name not in BACKENDS:
        raise BackendError(f"unknown step-time backend {name!r}; known: {', '.join(backends())}")
    return BACKENDS.get(name)(opts, model, hardware, tp, pp)


def _need(name, **kw):
    for k, v in kw.items():
        if v is None:
            raise BackendError(f"backend {name!r} needs {k}=")


def _check_opts(name, opts, allowed):
    bad = sorted(set(opts) - set(allowed))
    if bad:
        raise BackendError(f"backend {name!r}: unknown option(s) {', '.join(bad)} (allowed: {', '.join(sorted(allowed))})")


@register("linear")
def _linear(opts, model, hardware, tp, pp):
    _check_opts("linear", opts, ("c0", "c_pt", "c_pc", "c_ds", "c_dc"))
    return LinearStepTime(**opts)


@register("roofline")
def _roofline(opts, model, hardware, tp, pp):
    from .roofline import PARAMS, RooflineStepTime

    _check_opts("roofline", opts, PARAMS)
    _need("roofline", model=model, hardware=hardware)
    return RooflineStepTime(model, hardware, tp=tp, pp=pp, **opts)


@register("fitted")
def _fitted(opts, model, hardware, tp, pp):
    from . import measurements
    from .fitted import COEFS, FittedStepTime, fit

    _check_opts("fitted", opts, ("coefficients", "measurements", "weighting"))
    if "coefficients" in opts:
        c = opts["coefficients"]
        bad = sorted(set(c) - set(COEFS))
        if bad:
            raise BackendError(f"backend 'fitted': unknown coefficient(s) {bad}")
        return FittedStepTime(**c, tp=tp, pp=pp)
    if "measurements" in opts:
        df = _select(measurements.read(opts["measurements"]), model, hardware, tp, pp)
        return fit(df, weighting=opts.get("weighting", "relative"), tp=tp, pp=pp)
    raise BackendError("backend 'fitted' needs coefficients: or measurements:")


def _select(df, model, hardware, tp, pp):
    """Rows of a measurement table for this replica (where the table says which it is)."""
    from ..catalog import get_hardware, get_model

    if model is not None and "model" in df.columns:
        key = get_model(model).key
        df = df[[get_model(m).key == key for m in df.model]]
    if hardware is not None and "hardware" in df.columns:
        key = get_hardware(hardware).key
        df = df[[get_hardware(h).key == key for h in df.hardware]]
    if "tp" in df.columns and df.tp.nunique() > 1 and tp in set(df.tp):
        df = df[df.tp == tp]
    if "pp" in df.columns and df.pp.nunique() > 1 and pp in set(df.pp):
        df = df[df.pp == pp]
    if df.empty:
        raise BackendError(f"measurement table has no rows for model={model} hardware={hardware} tp={tp} pp={pp}")
    return df.reset_index(drop=True)


@register("table")
def _table(opts, model, hardware, tp, pp):
    from . import measurements
    from .table import TableStepTime

    _check_opts("table", opts, ("measurements", "prefill_axes", "decode_axes"))
    if "measurements" not in opts:
        raise BackendError("backend 'table' needs measurements: <path>")
    df = _select(measurements.read(opts["measurements"]), model, hardware, tp, pp)
    return TableStepTime(df, prefill_axes=opts.get("prefill_axes", "2d"), decode_axes=opts.get("decode_axes", "2d"),
                         name="table", tp=tp, pp=pp)


@register("splitwise")
def _splitwise(opts, model, hardware, tp, pp):
    from . import sources
    from .table import TableStepTime

    _check_opts("splitwise", opts, ("file", "prefill_axes", "decode_axes", "reading"))
    _need("splitwise", model=model, hardware=hardware)
    reading = opts.get("reading", "servesim")
    if reading == "splitwise-sim":
        from .splitwise_sim import SplitwiseSimStepTime

        if {"prefill_axes", "decode_axes"} & set(opts):
            raise BackendError("backend 'splitwise': the splitwise-sim reading has its own axis (batch tokens)")
        return SplitwiseSimStepTime(sources.splitwise_rows(opts.get("file", "perf_model.csv"), model, hardware, tp))
    if reading != "servesim":
        raise BackendError(f"backend 'splitwise': reading={reading!r}; expected servesim or splitwise-sim")
    df = sources.splitwise(opts.get("file", "perf_model.csv"), model, hardware, tp)
    return TableStepTime(df, prefill_axes=opts.get("prefill_axes", "tokens"), decode_axes=opts.get("decode_axes", "seqs"),
                         name="splitwise", tp=tp, pp=pp)


@register("aegaeon")
def _aegaeon(opts, model, hardware, tp, pp):
    from ..catalog import get_hardware, get_model
    from . import sources
    from .table import TableStepTime

    _check_opts("aegaeon", opts, ("profile", "gpu", "prefill_axes", "decode_axes"))
    if tp != 1 or pp != 1:
        raise BackendError("Aegaeon's public profiles are single-GPU (tp=pp=1)")
    sets = sources.aegaeon_sets()
    prof, gpu = opts.get("profile"), opts.get("gpu")
    if prof is None:
        _need("aegaeon", model=model)
        key = get_model(model).key
        cands = sorted({m for m, _ in sets if get_model(m).key == key})
        if not cands:
            raise BackendError(f"no Aegaeon profile of {key}; profiled: {sorted({m for m, _ in sets})}")
        prof = cands[0]
    if gpu is None:
        _need("aegaeon", hardware=hardware)
        hk = get_hardware(hardware).key
        gpus = [g for m, g in sets if m == prof and get_hardware(g).key == hk]
        if not gpus:
            raise BackendError(f"no Aegaeon profile of {prof} on {hk}; it has {[g for m, g in sets if m == prof]}")
        gpu = gpus[0]
    df = sources.aegaeon(prof, gpu)
    return TableStepTime(df, prefill_axes=opts.get("prefill_axes", "2d"), decode_axes=opts.get("decode_axes", "2d"),
                         name="aegaeon", tp=tp, pp=pp)


@register("gpu-bench")
def _gpu_bench(opts, model, hardware, tp, pp):
    from . import sources
    from .engine_overhead import PARAMS, EngineOverheadStepTime
    from .table import TableStepTime

    _check_opts("gpu-bench", opts, ("timing", "engine_overhead"))
    _need("gpu-bench", model=model, hardware=hardware)
    if pp != 1:
        raise BackendError("gpu-bench profiles are one GPU's tp shard (pp=1)")
    try:
        df = sources.gpu_bench(model, hardware, tp, timing=opts.get("timing", "step"), mixed=False)
    except ValueError as e:
        raise BackendError(str(e)) from None
    t = TableStepTime(df, name="gpu-bench", tp=tp, pp=pp)
    eo = opts.get("engine_overhead")
    if eo is None:
        return t
    if not isinstance(eo, dict) or set(eo) - set(PARAMS):
        raise BackendError(f"backend 'gpu-bench': engine_overhead must be a mapping of {', '.join(PARAMS)}")
    return EngineOverheadStepTime(t, **{k: float(v) for k, v in eo.items()})


@register("gpu-bench-fit")
def _gpu_bench_fit(opts, model, hardware, tp, pp):
    from .shard_fit import shard_roofline

    _check_opts("gpu-bench-fit", opts, ("timing", "pp_link_bw"))
    _need("gpu-bench-fit", model=model, hardware=hardware)
    bw = opts.get("pp_link_bw")
    return shard_roofline(model, hardware, tp=tp, pp=pp, pp_link_bw=None if bw is None else float(bw),
                          timing=opts.get("timing", "step"))


@register("vidur")
def _vidur(opts, model, hardware, tp, pp):
    from .vidur import VidurStepTime

    _check_opts("vidur", opts, ("profile_model",))
    _need("vidur", model=model, hardware=hardware)
    return VidurStepTime(model, hardware, tp=tp, pp=pp, profile_model=opts.get("profile_model"))


@register("file")
def _file(opts, model, hardware, tp, pp):
    _check_opts("file", opts, ("path",))
    return load_model_file(opts["path"], tp=tp, pp=pp)


# ------------------------------------------------------------------ model files
def save_model_file(m: StepTimeModel, path: str | os.PathLike, **extra) -> Path:
    """Write a fitted/roofline model as YAML (what ``servesim calibrate -o`` writes)."""
    from .fitted import FittedStepTime
    from .roofline import RooflineStepTime

    if isinstance(m, FittedStepTime):
        doc = {"backend": "fitted", "coefficients": m.coefficients(), "tp": m.tp, "pp": m.pp}
    elif isinstance(m, RooflineStepTime):
        doc = {"backend": "roofline", "model": m.model.key, "hardware": m.hardware.key, "tp": m.tp, "pp": m.pp,
               "params": m.params()}
    else:
        raise BackendError(f"cannot save a {type(m).__name__} as a model file")
    doc.update(extra)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def load_model_file(path: str | os.PathLike, tp: int | None = None, pp: int | None = None) -> StepTimeModel:
    """Read a model file written by `save_model_file` (errors name the file and key)."""
    from .fitted import COEFS, FittedStepTime
    from .roofline import PARAMS, RooflineStepTime

    path = Path(path)
    if not path.exists():
        raise BackendError(f"model file not found: {path}")
    from .._yaml import StrictYAMLError, strict_yaml_load

    try:  # syntax errors and duplicate keys name the file and line
        doc = strict_yaml_load(path.read_text(), source=str(path))
    except StrictYAMLError as e:
        raise BackendError(str(e)) from None
    if not isinstance(doc, dict) or "backend" not in doc:
        raise BackendError(f"{path}: not a step-time model file (no 'backend' key)")
    b = doc["backend"]
    if b == "fitted":
        c = doc.get("coefficients")
        if not isinstance(c, dict) or sorted(set(c) - set(COEFS)):
            raise BackendError(f"{path}: 'coefficients' must map {COEFS} to numbers")
        return FittedStepTime(**{k: float(v) for k, v in c.items()}, tp=tp or doc.get("tp", 1), pp=pp or doc.get("pp", 1),
                              meta={"file": str(path)})
    if b == "roofline":
        for k in ("model", "hardware", "params"):
            if k not in doc:
                raise BackendError(f"{path}: missing key {k!r}")
        bad = sorted(set(doc["params"]) - set(PARAMS))
        if bad:
            raise BackendError(f"{path}: unknown roofline params {bad}")
        return RooflineStepTime(doc["model"], doc["hardware"], tp=tp or doc.get("tp", 1), pp=pp or doc.get("pp", 1),
                                **doc["params"])
    raise BackendError(f"{path}: backend {b!r} cannot be loaded from a file (fitted or roofline)")
