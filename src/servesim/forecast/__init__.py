"""servesim.forecast: demand forecasters behind one API (``fit(series)`` / ``predict(horizon)``).

ARIMA (statsmodels), Holt-Winters ETS (statsmodels, ``ets``), the multiplicative LSTM
(PyTorch, ``mlstm``; imported on first use), moving average, time-varying AR (recursive least squares with
forgetting) and a Gaussian HMM (Baum-Welch in numpy), plus rolling evaluation and
SageServe's hourly peak forecast (honest rolling by default, the authors' in-sample variant
as ``mode="insample"``).
"""

from .arima import Arima, insample_one_step
from .base import Forecaster, ForecastError
from .hmm import GaussianHMM
from .moving_average import MovingAverage
from .rolling import hourly_peak, mape, rolling_forecast, wape
from .tvar import TVAR



def _mlstm(**kwargs):
    # torch is imported only when an mLSTM is asked for (it is not a core dependency)
    from .mlstm import MLSTM

    return MLSTM(**kwargs)


def _ets(**kwargs):
    from .ets import HoltWinters

    return HoltWinters(**kwargs)


#: name -> class (or factory), for configs and notebooks
FORECASTERS = {"arima": Arima, "moving_average": MovingAverage, "tvar": TVAR, "hmm": GaussianHMM,
               "mlstm": _mlstm, "ets": _ets}


def make(name: str, **kwargs) -> Forecaster:
    """A forecaster by registry name, e.g. ``make("arima", order=(3, 1, 2))``."""
    try:
        cls = FORECASTERS[name]
    except KeyError:
        raise ForecastError(f"unknown forecaster {name!r}; known: {sorted(FORECASTERS)}") from None
    return cls(**kwargs)


__all__ = ["Arima", "Forecaster", "ForecastError", "GaussianHMM", "MovingAverage", "TVAR",
           "FORECASTERS", "make", "hourly_peak", "insample_one_step", "mape", "rolling_forecast", "wape"]
