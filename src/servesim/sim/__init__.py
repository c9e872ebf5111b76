"""servesim.sim: the discrete-event simulator of LLM-serving instances (exact and fast).

Public API:
- :class:`Kernel` (clock, event heap, arrival streams) and the ``PRIO_*`` tie-break constants;
- :class:`Instance` + :class:`InstanceConfig` (one replica with continuous batching; vLLM V1 by
  default, other policies in :mod:`servesim.sim.schedulers`; waiting-queue orders by tier and
  deadline in :mod:`servesim.sim.queue_orders`), :class:`InstanceListener`;
- :class:`Req` (live per-request record), :data:`REQUEST_COLUMNS` + :class:`RequestLog` +
  :func:`request_frame` (the result table);
- :class:`Cluster` (N instances + router + workload driver) returning :class:`SimResult`;
- routers (:mod:`servesim.sim.routers`: the one router implementation and its name registry,
  shared with the fleet) and the time-series :class:`Sampler`.
"""

from .cluster import Cluster, SimResult
from .instance import MODES, Instance, InstanceConfig, InstanceListener
from .kernel import PRIO_ARRIVAL, PRIO_CONTROL, PRIO_INSTANCE, PRIO_SAMPLE, Kernel, SimulationError
from .queue_orders import QUEUE_ORDERS, QueueOrder, get_order
from .request_log import REQUEST_COLUMNS, RequestLog, empty_request_frame, request_frame
from .request import Req
from .routers import (
    ROUTERS,
    CallableRouter,
    HeapRouter,
    InstanceLoad,
    JSQTokens,
    LeastOutstanding,
    ListRouter,
    MostFreeKV,
    PowerOfTwo,
    RandomRouter,
    RoundRobin,
    Router,
    WeightedRouter,
    make_router,
    register_router,
)
from .schedulers import SchedulerPolicy, get_policy, policy_names, register
from .timeseries import TIMESERIES_COLUMNS, Sampler

__all__ = [
    "Cluster", "SimResult", "Instance", "InstanceConfig", "InstanceListener", "MODES",
    "Kernel", "SimulationError", "PRIO_ARRIVAL", "PRIO_CONTROL", "PRIO_INSTANCE", "PRIO_SAMPLE",
    "REQUEST_COLUMNS", "RequestLog", "request_frame", "empty_request_frame", "Req",
    "Router", "ListRouter", "HeapRouter", "RoundRobin", "RandomRouter", "PowerOfTwo",
    "LeastOutstanding", "JSQTokens", "MostFreeKV", "WeightedRouter", "CallableRouter", "InstanceLoad", "ROUTERS", "make_router",
    "register_router",
    "SchedulerPolicy", "get_policy", "policy_names", "register", "Sampler", "TIMESERIES_COLUMNS",
    "QUEUE_ORDERS", "QueueOrder", "get_order",
]
