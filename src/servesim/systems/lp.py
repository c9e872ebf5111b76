"""PuLP helpers shared by the systems' optimisation models (SageServe's ILP, OServe's flows)."""

from __future__ import annotations

import pulp


def variable(prob: pulp.LpProblem, name: str, lowBound=None, upBound=None, cat: str = "Continuous"):
    """A variable owned by ``prob``: PuLP >= 3.3's ``add_variable`` (free-standing
    ``LpVariable`` is deprecated there and goes in PuLP 4), else ``LpVariable``."""
    if hasattr(prob, "add_variable"):
        return prob.add_variable(name, lowBound, upBound, cat=cat)
    return pulp.LpVariable(name, lowBound=lowBound, upBound=upBound, cat=cat)
