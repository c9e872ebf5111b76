# servesim workflow. Targets:
#   snakemake --cores N            quick scale (the default target `quick`)
#   snakemake --cores N full       paper scale
#   snakemake --cores N <paper>    one paper (or group) at config["scale"] (default quick)
#   snakemake --cores N fetch      fetch and verify every dataset of traces/MANIFEST
#   snakemake -n                   what would run
# Rules live in workflow/rules/, one file per concern; figures are discovered from notebooks/.
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "workflow/config.yaml"


# `--config tiny=true` arrives as a string; booleans are spelled either way on the command line
for _key in ("allow_download", "tiny"):
    if isinstance(config.get(_key), (str, int)) and not isinstance(config.get(_key), bool):
        config[_key] = str(config[_key]).lower() in ("true", "1", "yes")

validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"


rule quick:
    """Every figure and table at quick scale, the claims report and provenance."""
    input:
        all_figure_outputs("quick"),
        "results/quick/claims_report.md",
        "results/quick/provenance.json",


rule full:
    """Every figure and table at paper scale, the claims report and provenance."""
    input:
        all_figure_outputs("full"),
        "results/full/claims_report.md",
        "results/full/provenance.json",


for _group in GROUPS:

    rule:
        name:
            _group
        input:
            all_figure_outputs(config["scale"], [_group]),


include: "workflow/rules/data.smk"
include: "workflow/rules/notebooks.smk"
include: "workflow/rules/report.smk"


# Concern-specific rule files (simulation runs, engine replays, ...), one per part.
for _smk in sorted(Path(workflow.basedir, "workflow", "rules").glob("*.smk")):
    if _smk.name not in CORE_RULE_FILES:

        include: str(_smk)
