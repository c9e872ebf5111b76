"""servesim.perf: how long one engine iteration takes (see `base.StepTimeModel`)."""

from .base import LinearStepTime, StepTimeModel

__all__ = ["StepTimeModel", "LinearStepTime"]
