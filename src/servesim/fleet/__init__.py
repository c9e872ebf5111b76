"""servesim.fleet: regions, endpoints, pools, instance lifecycle, scenarios.

Python API::

    from servesim.fleet import load_scenario, run_scenario
    res = run_scenario(load_scenario("examples/scenarios/one_region.yaml"))
    res.requests, res.timeseries, res.instance_hours, res.lifecycle, res.summary

Layout: `lifecycle` (states, allowed edges, instance-hours ledger), `control` (actions and the
read-only view actors get), `core` (the `Fleet`), `scenario` (typed YAML config), `run`
(`run_scenario` / `Result`), `engine_sim` (servesim.sim instances as engines), `cli`
(`servesim simulate`). Routers and autoscalers live in `servesim.policies`.
"""

from .control import Drain, EndpointStats, FleetView, Move, Scale
from .core import EndpointConfig, Fleet, LeadTimes
from .lifecycle import ALLOWED, InstanceLedger, LifecycleError, State
from .scenario import Scenario, ScenarioError, load_scenario, parse_scenario


def run_scenario(*args, **kwargs):
    """See `servesim.fleet.run.run_scenario` (imported lazily: it pulls in servesim.sim)."""
    from .run import run_scenario as _run

    return _run(*args, **kwargs)


__all__ = ["Fleet", "EndpointConfig", "LeadTimes", "State", "ALLOWED", "InstanceLedger", "LifecycleError",
           "Scale", "Drain", "Move", "EndpointStats", "FleetView", "Scenario", "ScenarioError", "load_scenario",
           "parse_scenario", "run_scenario"]
