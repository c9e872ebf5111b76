"""PuLP helpers shared by the systems' optimisation models (SageServe's ILP, OServe's flows)."""

from __future__ import annotations

import pulp


def variable(prob: pulp.LpProblem, name: str, lowBound=None, upBound=None, cat: str = "Continuous"):
    """A variable owned by ``prob``: PuLP >= 3.3's ``add_variable`` (free-standing
    ``LpVariable`` is deprecated there and goes in PuLP 4), else ``LpVariable``."""
    if hasattr(prob, "add_variable"):
        return prob.add_variable(name, lowBound, upBound, cat=cat)
    return pulp.LpVariable(name, lowBound=lowBound, upBound=upBound, cat=cat)


#: thread count of HiGHS's process-wide scheduler as last set through :func:`highs`
_highs_threads: int | None = None


def highs(threads: int = 1, **kwargs) -> pulp.HiGHS:
    """A PuLP HiGHS solver with a fixed thread count; every HiGHS solve in the package goes here.

    HiGHS runs MIPs on one process-wide scheduler whose size is fixed by the first solve; a later
    solve asking for another ``threads`` fails (PuLP reports "Not Solved"). So a change of thread
    count (or the first call, whatever solved before) resets the scheduler first.
    """
    global _highs_threads
    if _highs_threads != threads:
        import highspy

        highspy.Highs.resetGlobalScheduler(True)
        _highs_threads = threads
    return pulp.HiGHS(msg=False, threads=threads, **kwargs)
