"""servesim.fleet: regions, endpoints, pools, instance lifecycle, scenarios.

Python API::

    from servesim.fleet import load_scenario, run_scenario
    res = run_scenario(load_scenario("examples/scenarios/one_region.yaml"))
    res.requests, res.timeseries, res.instance_hours, res.lifecycle, res.summary

Layout: `lifecycle` (states, allowed edges, instance-hours ledger), `control` (actions and the
read-only view actors get; defined in the leaf `servesim.control`, with `State`), `core` (the
`Fleet`, made of `instances`: lifecycle, pools and actions; `requests`: the request path with
deferral and deadlines; `view`: read-only queries and samples), `scenario` (typed YAML config;
workload specs are `servesim.workload.spec`), `run` (`run_scenario` / `Result`), `engine_sim`
(servesim.sim instances as engines), `cli` (`servesim simulate`). Endpoint routers live in
`servesim.sim.routers` (re-exported by `servesim.policies`, with the autoscalers and global
routers); a scenario names each component by its registry name (`servesim.registry`,
docs/extending.md).

Holding requests outside routing (public API of `Fleet`; details in `servesim.fleet.core`)::

    fleet.set_arrival_hook(lambda i: wants_to_hold(i))   # True: request i is deferred
    fleet.release(i)                  # later: through the global router, as if it arrived now
    fleet.release(i, model, region)   # ... or straight to that endpoint (network latency paid)
    fleet.end_deferred(i, "timeout", "why")   # or end it unserved
    fleet.is_deferred(i), fleet.deferred      # queries

A request handle is its workload row index. ``release`` raises IndexError for an index that is
no request, ValueError for a request that is not deferred (not arrived, routed at arrival,
released already, ended) and KeyError for an unknown endpoint (it then stays deferred).

Deadlines (scenario key ``enforce_deadlines: [NIW]``; `Fleet(enforce_deadlines=...)`): requests of
the listed tiers still *waiting* when their ``deadline_s`` passes end ``timeout`` with a reason
naming where they waited: deferred, in transit/queued at their endpoint, or queued in an engine
and never admitted to a batch. Started requests run to their end. Default: report only.

Conversions: ``Move`` (and a scale-up that takes a pooled instance holding another model's
weights) switches the instance's model in place, in lifecycle state ``converting`` for the
model's ``lead.convert_s`` (default ``load_s``); converting hours are billed and booked under
the new model.
"""

from .control import Drain, EndpointStats, FleetView, Move, Scale
from .core import EndpointConfig, Fleet, LeadTimes
from .lifecycle import ALLOWED, InstanceLedger, LifecycleError, State
from .scenario import Scenario, ScenarioError, load_scenario, parse_scenario


def run_scenario(*args, **kwargs):
    """See `servesim.fleet.run.run_scenario` (imported lazily: it pulls in servesim.sim)."""
    from .run import run_scenario as _run

    return _run(*args, **kwargs)


__all__ = [
    "ALLOWED",
    "Drain",
    "EndpointConfig",
    "EndpointStats",
    "Fleet",
    "FleetView",
    "InstanceLedger",
    "LeadTimes",
    "LifecycleError",
    "Move",
    "Scale",
    "Scenario",
    "ScenarioError",
    "State",
    "load_scenario",
    "parse_scenario",
    "run_scenario",
]
