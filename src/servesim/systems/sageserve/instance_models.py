"""One SageServe instance (8 GPUs, TP 8) per model and hardware: engine limits and step-time model.

``hardware="default"`` keeps the spec-quoted linear fits of `MODEL_DEFAULTS` (Llama-2 /
Bloom on A100, what every main-text run uses). ``"a100-80gb"`` / ``"h100-80gb"`` (journal App. A:
the same strategies on another GPU) fit the few-coefficient `servesim.perf.fitted` model to the
Splitwise profile rows of that GPU at TP 8 (``sageserve/perf_model.csv``), so both GPUs come from
one source and one fitting procedure. Llama-3.1-8B / Llama-3.2-3B have only the authors' A100
vLLM profiles (their `MODEL_DEFAULTS` entries); they keep those on either GPU, and
`instance_model_source` says so (runs record it in summary.json).

Llama-4 Scout (journal Fig 14) has no profile: its step time is the `servesim.perf.roofline`
prior for Scout's MoE shape on that GPU (``default`` = H100, where the journal profiled), with
the roofline's efficiencies and overheads calibrated on the same GPU's Splitwise Llama-2-70B rows
(`fit_roofline`): Llama-2's measured efficiency transferred to Scout's FLOPs and bytes.

KV capacity follows the authors' simulator for every model: free memory of 8 x 80 GB minus the
fp16 weights, over 2 x hidden x layers x 2 bytes per token (no GQA; spec §1.3): 477k tokens for
Scout (218 GB of weights). Llama-2 / Bloom keep the spec's 210.6k / 89.2k (the authors' weight
sizes, 135 / 329 GB; the rule with the catalog's parameter counts gives 209.5k / 83.5k).

`derive_scaled_coefficients` re-derives the Llama-3.x `MODEL_DEFAULTS` step times from the data:
Llama-2's spec-quoted coefficients times the ratio of two models' fits to their A100 profiles.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...catalog import get_model, kv_capacity

TP = 8
INSTANCE_MEM_BYTES = 687.19e9  # 8 x 80 GiB (spec §2)
SPLITWISE_FILE = "perf_model.csv"
#: the GPU Scout's step time is modelled on when ``hardware="default"`` (J §7.1 profiled on H100)
SCOUT_DEFAULT_HW = "h100-80gb"
ROOFLINE_MODELS = ("llama-4-scout",)
#: models with Splitwise rows on both GPUs (perf_model.csv)
SPLITWISE_MODELS = ("llama-2-70b", "bloom-176b")
ENGINE = {"max_num_seqs": 512, "max_num_batched_tokens": 16384}
#: each model's A100 profile for `profile_line_fit`: (sageserve file, hardware, TP). The Llama-3
#: files are TP 4 (the authors' simulator relabels them as the 8-GPU instance).
A100_PROFILES = {
    "llama-2-70b": (SPLITWISE_FILE, "a100-80gb", TP),
    "bloom-176b": (SPLITWISE_FILE, "a100-80gb", TP),
    "llama-3.1-8b": ("Llama-3.1-8B-tp-4.csv", "a100-80gb", 4),
    "llama-3.2-3b": ("Llama-3.2-3B-tp-4.csv", "a100-80gb", 4),
}
#: Llama-2-70B on one 8xA100 instance (TP 8), a linear step-time fit to the Splitwise profile
#: numbers quoted in the spec (prefill 512 tok 94 ms, 8192 tok 1.55 s; decode ~43-46 ms per
#: iteration, 71.6 ms at 32k batched tokens); KV capacity 210.6k tokens (spec §2).
MODEL_DEFAULTS = {
    "llama-2-70b": {
        "engine": {"kv_capacity_tokens": 210_600, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.040, "c_pt": 1.9e-4, "c_pc": 0.0, "c_ds": 8.7e-7, "c_dc": 0.0},
    },
    "bloom-176b": {
        "engine": {"kv_capacity_tokens": 89_200, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.055, "c_pt": 3.5e-4, "c_pc": 0.0, "c_ds": 1.2e-6, "c_dc": 0.0},
    },
    # Llama-3.1-8B / Llama-3.2-3B: the authors' vLLM A100 profiles (Llama-3.*-tp-4.csv, which their
    # simulator relabels as the 8-GPU instance; seconds, token_time per whole decode, read by
    # servesim.perf.sources.splitwise), put on Llama-2's reading above: each coefficient is
    # Llama-2's times the ratio of the two models' straight-line fits to their profiles (Llama-2:
    # the Splitwise a100-80gb TP 8 rows; relative least squares, prefill rows a + c_pt*tokens and
    # decode rows c0 + c_ds*sequences, no context terms). The same rule applied to Bloom's
    # Splitwise rows gives 0.044 / 3.7e-4 / 1.6e-6 against its 0.055 / 3.5e-4 / 1.2e-6.
    # instance_models.derive_scaled_coefficients re-derives these numbers from the data and
    # tests/systems/test_sageserve_coefficients.py checks the entries below equal them to 2
    # significant figures. KV capacity from spec §2 (303k, 1.27M tokens).
    "llama-3.1-8b": {
        "engine": {"kv_capacity_tokens": 303_000, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.0062, "c_pt": 8.1e-5, "c_pc": 0.0, "c_ds": 9.5e-7, "c_dc": 0.0},
    },
    "llama-3.2-3b": {
        "engine": {"kv_capacity_tokens": 1_270_000, "max_num_seqs": 512, "max_num_batched_tokens": 16384},
        "step_time": {"backend": "linear", "c0": 0.0048, "c_pt": 5.0e-5, "c_pc": 0.0, "c_ds": 6.4e-7, "c_dc": 0.0},
    },
}

#: the `LinearStepTime` coefficients `derive_scaled_coefficients` scales (c_pc = c_dc = 0)
SCALED_COEFS = ("c0", "c_pt", "c_ds")


def kv_capacity_tokens(model: str) -> int:
    """Free KV tokens of one instance, by the authors' no-GQA rule (`catalog.kv_capacity`; 0 if the
    weights fill the instance)."""
    m = get_model(model)
    per_tok = 2 * m.hidden * m.layers * 2
    # the authors' simulator: all of the instance's memory (fraction 1.0) less the fp16 weights
    return kv_capacity(INSTANCE_MEM_BYTES, m.param_bytes, per_tok, fraction=1.0, fraction_of="total")


@lru_cache(maxsize=None)
def splitwise_fit(model: str, hardware: str) -> dict:
    """Coefficients of `FittedStepTime` fitted to the Splitwise rows of (model, hardware, TP 8)."""
    from ...perf import sources
    from ...perf.fitted import fit

    return fit(sources.splitwise(SPLITWISE_FILE, model, hardware, TP), tp=TP).coefficients()


@lru_cache(maxsize=None)
def roofline_params(hardware: str, reference: str = "llama-2-70b") -> dict:
    """Roofline efficiencies/overheads calibrated on ``reference``'s Splitwise rows on ``hardware``."""
    from ...perf import sources
    from ...perf.roofline import RooflineStepTime, fit_roofline

    df = sources.splitwise(SPLITWISE_FILE, reference, hardware, TP)
    return fit_roofline(RooflineStepTime(reference, hardware, tp=TP), df).params()


def _relative_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(intercept, slope) of y = a + b*x minimising the squared relative error (y - fit) / y."""
    w = 1.0 / y
    (a, b), *_ = np.linalg.lstsq(np.column_stack([w, x * w]), np.ones_like(y), rcond=None)
    return float(a), float(b)


@lru_cache(maxsize=None)
def profile_line_fit(model: str) -> dict:
    """Two straight lines through ``model``'s A100 profile (`A100_PROFILES`, read by
    `servesim.perf.sources.splitwise`), each by relative least squares: prefill rows
    t = a + c_pt*prefill_tokens, decode rows t = c0 + c_ds*decode_seqs (no context terms).
    Returns {"c0", "c_pt", "c_ds"}."""
    from ...perf import sources

    key = get_model(model).key
    if key not in A100_PROFILES:
        raise ValueError(f"profile_line_fit: no A100 profile for {model!r}; known: {sorted(A100_PROFILES)}")
    file, hardware, tp = A100_PROFILES[key]
    df = sources.splitwise(file, key, hardware, tp)
    pre, dec = df[df.decode_seqs == 0], df[df.decode_seqs > 0]
    _, c_pt = _relative_line(pre.prefill_tokens.to_numpy(float), pre.step_s.to_numpy(float))
    c0, c_ds = _relative_line(dec.decode_seqs.to_numpy(float), dec.step_s.to_numpy(float))
    return {"c0": c0, "c_pt": c_pt, "c_ds": c_ds}


def derive_scaled_coefficients(model: str, reference: str = "llama-2-70b") -> dict:
    """``model``'s step-time coefficients on ``reference``'s reading: for c0, c_pt and c_ds,
    reference's `MODEL_DEFAULTS` value x profile_line_fit(model) / profile_line_fit(reference).

    This is how the Llama-3.1-8B / Llama-3.2-3B entries of `MODEL_DEFAULTS` were obtained (they
    are those values to 2 significant figures; tests/systems/test_sageserve_coefficients.py checks
    it). The profile fits give the models' relative speed; the reference's spec-quoted numbers
    (the authors' simulator reading of Splitwise) give the absolute scale, so all models share it.
    """
    ref = get_model(reference).key
    if ref not in MODEL_DEFAULTS:
        raise ValueError(f"derive_scaled_coefficients: reference {reference!r} has no MODEL_DEFAULTS entry")
    fm, fr = profile_line_fit(model), profile_line_fit(ref)
    base = MODEL_DEFAULTS[ref]["step_time"]
    return {k: base[k] * fm[k] / fr[k] for k in SCALED_COEFS}


def instance_model(model: str, hardware: str = "default") -> dict:
    """The fleet scenario's ``models.<name>`` entry (engine, step_time, and hardware/tp where the
    backend needs them) for one SageServe instance of ``model``."""
    key = get_model(model).key
    if key in ROOFLINE_MODELS:
        hw = SCOUT_DEFAULT_HW if hardware == "default" else hardware
        return {"engine": {"kv_capacity_tokens": kv_capacity_tokens(key), **ENGINE},
                "step_time": {"backend": "roofline", **roofline_params(hw)}, "hardware": hw, "tp": TP}
    if key not in MODEL_DEFAULTS:
        raise ValueError(f"SageServe instance model: no step-time model for {model!r}; "
                         f"known: {sorted(MODEL_DEFAULTS) + list(ROOFLINE_MODELS)}")
    if hardware == "default" or key not in SPLITWISE_MODELS:
        return MODEL_DEFAULTS[key]
    return {"engine": dict(MODEL_DEFAULTS[key]["engine"]),
            "step_time": {"backend": "fitted", "coefficients": splitwise_fit(key, hardware)}, "tp": TP}


def instance_model_source(model: str, hardware: str = "default") -> str:
    """Where ``instance_model(model, hardware)``'s step time comes from, in words."""
    key = get_model(model).key
    if key in ROOFLINE_MODELS:
        hw = SCOUT_DEFAULT_HW if hardware == "default" else hardware
        return f"roofline on {hw}, calibrated on Splitwise llama-2-70b {hw} TP{TP}"
    if hardware != "default" and key in SPLITWISE_MODELS:
        return f"fitted to Splitwise {SPLITWISE_FILE} {key} {hardware} TP{TP}"
    if hardware != "default":
        return f"MODEL_DEFAULTS (A100 profile; no {hardware} profile of {key})"
    return "MODEL_DEFAULTS"
