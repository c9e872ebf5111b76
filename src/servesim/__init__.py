"""servesim: simulate and replay LLM-serving fleets.

Layers, each importing only from the ones listed before it:
workload, catalog -> metrics -> perf -> sim -> fleet, policies -> forecast -> systems -> engine -> analysis.
(`analysis.outputs` is a leaf helper that notebooks use; it imports nothing from servesim.)
"""

__version__ = "0.1.0"
