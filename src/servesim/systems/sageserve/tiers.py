"""Instance queue ordering for the IW-F / IW-N / NIW tiers (journal §6.5, Fig 15).

``tier_policy`` names one of the simulator's queue orders (`servesim.sim.queue_orders`: fcfs,
edf, pf, dpa; their definitions are there): each instance sorts its waiting queue by it before
every iteration. This module only turns the config into that order's data: NIW ranks after IW
until older than ``niw_priority_bump_s``; DPA's tau_n and tau_p are not given in the paper
(``SageServeConfig.dpa_tau_n_s`` / ``dpa_tau_p_s``).
"""

from __future__ import annotations

from .config import SageServeConfig


def queue_order(config: SageServeConfig) -> dict | None:
    """The scenario's ``engine.queue_order`` for ``config.tier_policy`` (None: "none", the engine's
    arrival order)."""
    c = config
    if c.tier_policy == "none":
        return None
    order = {"name": c.tier_policy}
    if c.tier_policy in ("fcfs", "dpa"):
        order["niw_bump_s"] = c.niw_priority_bump_s
    if c.tier_policy == "dpa":
        order.update(tau_n_s=c.dpa_tau_n_s, tau_p_s=c.dpa_tau_p_s)
    return order
