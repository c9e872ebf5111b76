"""servesim: simulate and replay LLM-serving fleets.

Layers, each importing only from the ones listed before it (docs/architecture.md;
tests/foundation/test_layers.py checks it, and that no modules import each other):
leaves (errors, _imports, registry, project_root, control, disk_cache) -> _yaml, tables, output_dir,
cli_errors, data -> workload, catalog -> metrics -> perf -> sim -> policies -> fleet -> forecast
-> systems -> engine -> analysis -> cli, cli_data.
"""

__version__ = "0.1.0"
