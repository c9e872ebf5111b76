"""OServe replica shapes (TP x PP on H100s) and their simulator pieces (spec §1.3, §1.5).

A replica is ``Shape(tp, pp, cross_node)``: tp GPUs per stage (TP stays inside one node), pp
stages, and whether its stages span nodes (the hand-off then goes over InfiniBand). Valid TP
degrees divide the attention and KV heads and fit one node; the weights plus a KV reserve must fit
the replica's memory. Step models (``backend``):
- "gpu-bench-fit" (default): the roofline fitted to our measured H100 profile of the model
  (`perf.shard_fit`: one GPU's 1/tp shard, the nearest measured TP degree where a degree has no
  table), with the datasheet TP all-reduce the profile lacks and the pipelined PP schedule; a
  model with no profile falls back to the roofline prior, named so in ``meta["source"]``.
  Every OServe model (OPT-30B/66B, LLaMA-30B, Llama-2-70B) has profiles; on Splitwise's measured
  Llama-2-70B H100 steps this reading beats the bare profile and the prior (calibration/perf_models);
- "roofline": the catalog roofline with the pipelined PP schedule (``perf.roofline``) and its
  prior efficiencies;
- "vidur-fit": the same roofline with its efficiencies and overheads fitted (per TP degree) to the
  Vidur H100 operator profiles, then used for any PP depth: only models the public Vidur copy
  profiles (Llama-2-70B among OServe's four);
- "vidur": the Vidur profiles themselves (pp = 1 only: the public copy has no PP profiles).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog import get_hardware, get_model, kv_capacity
from ...perf import RooflineStepTime, build
from ...perf.shard_fit import measured_tps, shard_roofline
from ...sim import InstanceConfig
from ...sim.instance import PP_ENGINES as PP_ENGINE_READINGS  # "lumped" is a named reading here

GPU = "h100-80gb"
GPUS_PER_NODE = 8
IB_BPS = 200e9  # §6.1 inter-node InfiniBand, 200 GB/s as the paper states it (intra-node: the catalog's NVLink)
GPU_MEM_UTIL = 0.9  # vLLM's default gpu_memory_utilization
ACT_RESERVE_FRAC = 0.05  # of the weights: activations / CUDA graphs kept out of the KV pool
MIN_KV_TOKENS = 2048  # a replica must hold at least one max-length (2048) sequence of KV
MAX_SEQS, MAX_BATCHED_TOKENS, BLOCK = 256, 8192, 16
PP_ENGINES = "virtual"  # a PP replica's engines (instance_config); the commands' --pp-engines sets it


def set_pp_engines(name: str) -> None:
    """This process's reading of a PP replica's engines (``instance_config``'s default)."""
    global PP_ENGINES
    if name not in PP_ENGINE_READINGS:
        raise ValueError(f"pp_engines={name!r}: one of {PP_ENGINE_READINGS}")
    PP_ENGINES = name


def add_pp_engines_arg(ap) -> None:
    ap.add_argument("--pp-engines", choices=PP_ENGINE_READINGS, default=PP_ENGINES,
                    help="a PP replica as vLLM V0's virtual engines sharing the stages (virtual), or as one "
                         "scheduler whose every iteration crosses all stages before the next (lumped, a reading)")


@dataclass(frozen=True, order=True)
class Shape:
    tp: int
    pp: int = 1
    cross_node: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp

    def label(self) -> str:
        s = f"TP{self.tp}" + (f",PP{self.pp}" if self.pp > 1 else "")
        return s + ("*" if self.cross_node else "")


def kv_tokens(model: str, shape: Shape, hardware: str = GPU) -> int:
    """KV capacity in tokens: (gpus * mem * util - weights * (1 + reserve)) / kv bytes per token, 0 if
    nothing is left (`catalog.kv_capacity`, reading "total", on the replica's pooled memory)."""
    m, h = get_model(model), get_hardware(hardware)
    # vLLM's gpu_memory_utilization rule on the replica's pooled memory, weights + ACT_RESERVE_FRAC [A]
    return kv_capacity(shape.gpus * h.mem_bytes, m.param_bytes, m.kv_bytes_per_token(m.dtype_bytes),
                       fraction=GPU_MEM_UTIL, fraction_of="total", weight_overhead=ACT_RESERVE_FRAC)


def valid_tp(model: str, max_tp: int = GPUS_PER_NODE) -> list[int]:
    m = get_model(model)
    return [t for t in range(1, max_tp + 1) if m.heads % t == 0 and m.kv_heads % t == 0]


def strategies(model: str, gpus: int, hardware: str = GPU, max_pp: int = 8) -> list[Shape]:
    """Every (tp, pp) with tp * pp == gpus, tp a valid TP degree, pp <= max_pp and KV that fits."""
    out = []
    for tp in valid_tp(model):
        if gpus % tp == 0 and gpus // tp <= max_pp and gpus // tp <= get_model(model).layers:
            s = Shape(tp, gpus // tp)
            if kv_tokens(model, s, hardware) >= MIN_KV_TOKENS:
                out.append(s)
    return out


def min_gpus(model: str, hardware: str = GPU) -> int:
    """§4.3's uniform start: the fewest GPUs whose memory holds the model, as pure TP."""
    for tp in valid_tp(model):
        if kv_tokens(model, Shape(tp), hardware) >= MIN_KV_TOKENS:
            return tp
    raise ValueError(f"{model} does not fit one node of {hardware} with pure TP")


BACKENDS = ("gpu-bench-fit", "roofline", "vidur-fit", "vidur")
DEFAULT_BACKEND = "gpu-bench-fit"
_FITTED: dict = {}


def vidur_fitted_params(model: str, tp: int, hardware: str = GPU) -> dict:
    """Roofline efficiencies/overheads fitted to the Vidur profiles of (model, TP) (memoised)."""
    key = (model, tp, hardware)
    if key not in _FITTED:
        from ...perf import fit_roofline

        vidur = build("vidur", model=model, hardware=hardware, tp=tp)
        _FITTED[key] = fit_roofline(RooflineStepTime(model, hardware, tp=tp), vidur._synthetic()).params()
    return _FITTED[key]


def step_model(model: str, shape: Shape, hardware: str = GPU, backend: str = DEFAULT_BACKEND, ib_bps: float = IB_BPS):
    """The replica's step-time model (see the module docstring)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: one of {BACKENDS}")
    link = ib_bps if shape.cross_node else None
    if backend == "gpu-bench-fit":
        if measured_tps(model, hardware):
            return shard_roofline(model, hardware, tp=shape.tp, pp=shape.pp, pp_link_bw=link)
        m = RooflineStepTime(model, hardware, tp=shape.tp, pp=shape.pp, pp_link_bw=link)
        m.meta = {"source": f"roofline prior (no gpu_bench profile of {model} on {hardware})"}
        return m
    if backend == "vidur":
        if shape.pp != 1:
            raise ValueError(f"backend 'vidur' has no PP profiles; shape {shape.label()} needs 'roofline' or 'vidur-fit'")
        return build("vidur", model=model, hardware=hardware, tp=shape.tp)
    params = vidur_fitted_params(model, shape.tp, hardware) if backend == "vidur-fit" else {}
    return RooflineStepTime(model, hardware, tp=shape.tp, pp=shape.pp, pp_link_bw=link, **params)


def instance_config(model: str, shape: Shape, hardware: str = GPU, enforce_context: bool = False,
                    pp_engines: str | None = None) -> InstanceConfig:
    """vLLM V0 defaults; a PP replica runs pp virtual engines, each with vLLM's own limits.

    ``pp_engines`` (default ``PP_ENGINES``): how the simulator runs those engines
    (``servesim.sim.virtual_engines``): "virtual" (one scheduler per engine, their micro-batches
    sharing the stages, as vLLM V0 does) or "lumped" (one scheduler with pp x the limits, every
    iteration a barrier through the stages: the reading of servesim before 5 Dec).

    ``enforce_context``: cap sequences at the model's max_context. Off by default: the paper serves
    Azure lengths (inputs up to 7999) on OPT-30B/66B, whose position limit is 2048, so it cannot
    have applied it [A]; the KV cache is the only limit then."""
    m = get_model(model)
    blocks = kv_tokens(model, shape, hardware) // BLOCK
    if blocks < 1:
        raise ValueError(f"{model} does not fit {shape.label()} on {hardware}")
    return InstanceConfig(num_blocks=blocks, block_size=BLOCK, max_num_seqs=MAX_SEQS * shape.pp,
                          max_num_batched_tokens=max(MAX_BATCHED_TOKENS, m.max_context or 0) * shape.pp,
                          max_model_len=m.max_context if enforce_context else None, policy="vllm-v0", model=model, tp=shape.tp, pp=shape.pp,
                          hardware=hardware, pp_engines=PP_ENGINES if pp_engines is None else pp_engines)
