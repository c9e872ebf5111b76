"""servesim.perf: how long one engine iteration takes (see `base.StepTimeModel`).

Backends: `LinearStepTime` (trivial), `RooflineStepTime` (catalog prior), `FittedStepTime`
(few coefficients fitted by least squares), `TableStepTime` (interpolated profile tables with a
counted fallback), `VidurStepTime` (Vidur operator profiles + first-principles attention).
`build(spec, model=, hardware=, tp=, pp=)` makes one from a scenario's spec; `CachedStepTime`
memoises scalar calls of any backend (exact).
"""

from .base import LinearStepTime, StepTimeModel
from .cache import CachedStepTime
from .fitted import FittedStepTime, fit
from .registry import BackendError, backends, build, load_model_file, register, save_model_file
from .roofline import RooflineStepTime, fit_roofline
from .table import TableStepTime

__all__ = [
    "StepTimeModel", "LinearStepTime", "CachedStepTime", "FittedStepTime", "RooflineStepTime", "TableStepTime", "fit",
    "fit_roofline", "build", "register", "backends", "BackendError", "save_model_file", "load_model_file",
]
