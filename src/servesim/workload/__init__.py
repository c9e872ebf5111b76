"""servesim.workload: the request table (`schema`) and where it comes from."""

from .schema import COLUMNS, TIERS, WorkloadError, make, validate

__all__ = ["COLUMNS", "TIERS", "WorkloadError", "make", "validate"]
