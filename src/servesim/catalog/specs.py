"""Typed records for one model and one accelerator (the rows of the catalog's data files)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelSpec:
    """Architecture facts of one transformer model (see ``data/models.yaml`` for each field)."""

    key: str
    hf_id: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    dtype_bytes: int
    params: float
    gated_mlp: bool
    tie_embeddings: bool
    source: str
    n_experts: int = 1
    experts_per_token: int = 1
    shared_ffn: int = 0
    qkv_bias: bool = False
    max_context: int | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)

    @property
    def param_bytes(self) -> float:
        """Bytes of all weights at the served dtype."""
        return self.params * self.dtype_bytes

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """KV-cache bytes one token occupies (K and V, every layer, every KV head)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes

    # --- per-layer shapes used by the roofline and the GPU profiler ---
    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP (3 for gated SwiGLU, 2 otherwise)."""
        return 3 if self.gated_mlp else 2

    def layer_params(self, active: bool = False) -> float:
        """Weights of one transformer layer (attention + MLP, biases ignored).

        ``active=True`` counts only what one token touches (its top-k experts + shared expert).
        """
        attn = self.hidden * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden
        expert = self.mlp_matrices() * self.hidden * self.ffn
        n = self.experts_per_token if active else self.n_experts
        shared = self.mlp_matrices() * self.hidden * self.shared_ffn
        router = self.hidden * self.n_experts if self.is_moe else 0
        return attn + n * expert + shared + router

    def arch_params(self, active: bool = False) -> float:
        """Parameter count recomputed from the architecture (embeddings + layers + LM head)."""
        emb = self.vocab * self.hidden * (1 if self.tie_embeddings else 2)
        return emb + self.layers * self.layer_params(active)

    @property
    def active_params(self) -> float:
        """Parameters one token's forward pass uses (= params for dense models)."""
        if not self.is_moe:
            return self.params
        return self.params * self.arch_params(active=True) / self.arch_params()


@dataclass(frozen=True)
class HardwareSpec:
    """Datasheet numbers of one accelerator (see ``data/hardware.yaml``)."""

    key: str
    name: str
    mem_bytes: float
    flops: float
    mem_bw: float
    interconnect_bw: float
    pcie_bw: float
    price_per_hour: float | None
    source: str
    cluster_price_per_hour: float | None = None
    cluster_gpus: int | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)
