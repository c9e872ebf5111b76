"""Aegaeon (SOSP'25): settings and the scheduler's quota arithmetic."""

from .config import AegaeonConfig, paper_inputs
from .wrr import Quotas, Replay, play_rounds, quotas

__all__ = ["AegaeonConfig", "paper_inputs", "Quotas", "Replay", "play_rounds", "quotas"]
