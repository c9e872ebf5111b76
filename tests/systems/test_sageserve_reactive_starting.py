"""Reactive's KV utilisation and instances still starting (SageServeConfig.reactive_count_starting)."""

from servesim.fleet.control import EndpointStats
from servesim.fleet.lifecycle import State
from servesim.policies.autoscalers import ReactiveAutoscaler
from servesim.systems.sageserve.config import SageServeConfig
from servesim.systems.sageserve.strategies import scenario_dict


def _stats(ready, starting, draining=0, kv=0.8):
    counts = {State.READY: ready, State.LOADING: starting, State.DRAINING: draining}
    return EndpointStats("m", "r", counts, outstanding=10, pending_tokens=0, queued=0, kv_util=kv,
                         arrivals_rate=0.0, prompt_token_rate=0.0, window_s=60.0)


def test_kv_util_ignores_or_dilutes_starting_instances():
    st = _stats(ready=3, starting=1, draining=1)
    # default (paper): the memory of the instances that hold it, 0.8 > 0.7 scales out again
    assert ReactiveAutoscaler().utilisation(st) == 0.8
    # counted: 4 instances hold memory at 0.8 mean, one starting is empty -> 0.8 * 4 / 5
    assert abs(ReactiveAutoscaler(kv_count_starting=True).utilisation(st) - 0.64) < 1e-12
    assert ReactiveAutoscaler(kv_count_starting=True).utilisation(_stats(3, 0)) == 0.8


def test_sageserve_reactive_option_reaches_the_scaler():
    import pandas as pd

    wl = pd.DataFrame({"model": ["llama-2-70b"], "region": ["eastus"]})
    assert SageServeConfig().reactive_count_starting is False
    for flag in (False, True):
        sc = scenario_dict("reactive", wl, SageServeConfig(reactive_count_starting=flag), 60.0)
        assert sc["autoscaler"]["kv_count_starting"] is flag
