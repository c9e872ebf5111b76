"""What periodic control actors (autoscalers, forecasters, planners) see and may do.

Defined in `servesim.control` (a leaf module below both `servesim.policies` and `servesim.fleet`,
so policies need not import the fleet) and re-exported here under the names fleet code uses.
"""

from ..control import Action, Actor, Drain, EndpointKey, EndpointStats, FleetView, Move, Scale, State

__all__ = ["Action", "Actor", "Drain", "EndpointKey", "EndpointStats", "FleetView", "Move", "Scale", "State"]
