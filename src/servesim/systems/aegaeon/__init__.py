"""Aegaeon (SOSP'25): settings, the scheduler's quota arithmetic, the token-level pool simulator
(`pool`, `prefill`, `decode`), the request-level baselines (`sllm`, `muxserve`) and SLO metrics (`slo`).
Runs write the standard request table (``REQUEST_COLUMNS``) and `standard_summary` is
``servesim.metrics.summarize`` with the artifact's numbers under ``paper``."""

from .config import AegaeonConfig, paper_inputs
from .settings import Settings
from .simulate import SYSTEMS, simulate, standard_summary, summary
from .wrr import Quotas, Replay, play_rounds, quotas

__all__ = ["AegaeonConfig", "paper_inputs", "Quotas", "Replay", "play_rounds", "quotas", "Settings", "SYSTEMS",
           "simulate", "standard_summary", "summary"]
