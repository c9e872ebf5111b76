# servesim workflow. Targets:
#   snakemake --cores N            quick scale (the default target `quick`)
#   snakemake --cores N full       paper scale
#   snakemake --cores N test       the small scale the test suite runs (every job, in minutes)
#   snakemake --cores N <paper>    one paper (or group) at config["scale"] (default quick)
#   snakemake --cores N full_<paper> / publish_<paper>   one paper at paper scale / and publish it
#                                  into results-full/ (stamped with the commit)
#   snakemake --cores N fetch      fetch and verify every dataset of traces/MANIFEST
#   snakemake -n                   what would run
# Rules live in workflow/rules/, one file per concern; figures are discovered from notebooks/, the
# heavy jobs (simulations, sweeps, engine replays) are declared per paper in workflow/runs/.
from snakemake.utils import min_version, validate

# jsonschema (config validation here, the runs' schema in common.smk) without its optional
# format checkers, one of which takes 1 s to import
from servesim.analysis.jsonschema_lite import hide_format_checkers

hide_format_checkers()

# the greedy scheduler of the profile reads no input sizes: do not stat every ready job's inputs
# before each scheduling round (servesim.analysis.snakemake_scheduling says what it cost)
from servesim.analysis.snakemake_scheduling import skip_unread_input_sizes

skip_unread_input_sizes()

min_version("9.0")


configfile: "workflow/config.yaml"


# snakemake lets a repeated key of the config file win silently: read it strictly too (an error)
from servesim._yaml import strict_yaml_load as _strict_yaml_load

_strict_yaml_load(open("workflow/config.yaml", encoding="utf-8-sig").read(), source="workflow/config.yaml")


# `--config allow_download=false` arrives as a string: read it as a boolean, and refuse anything
# else (`maybe`) before validation rather than coerce it to false
_flag = config.get("allow_download")
if not isinstance(_flag, bool):
    _text = str(_flag).strip().lower()
    if _text not in ("true", "1", "yes", "on", "false", "0", "no", "off"):
        raise ValueError(f"config allow_download={_flag!r}: expected a boolean (true/false, yes/no, on/off, 1/0)")
    config["allow_download"] = _text in ("true", "1", "yes", "on")

validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"


# At the end of a successful run, the slowest jobs it ran (their benchmark files written during
# this run), so a newcomer sees where the time went; nothing when it ran no benchmarked job
import time as _time

_RUN_START = _time.time()


onsuccess:
    import resource as _resource

    from servesim.analysis.benchmarks import slowest_summary

    _self = _resource.getrusage(_resource.RUSAGE_SELF)  # this process and its threads, not the jobs
    _slow = slowest_summary(ROOT / "results", since=_RUN_START,
                            scheduler=(_self.ru_utime + _self.ru_stime, _time.time() - _RUN_START))
    if _slow:
        print(_slow)


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


rule test:
    """Every figure and table at the test scale (tiny runs, the notebooks' `test` parameters)."""
    input:
        all_figure_outputs("test"),
        "results/test/claims_report.md",
        "results/test/provenance.json",


for _group in GROUPS:

    rule:
        name:
            _group
        input:
            all_figure_outputs(config["scale"], [_group]),


# Every rule file, listed (a new concern adds its file here).
include: "workflow/rules/data.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/engine.smk"
include: "workflow/rules/gpu.smk"
include: "workflow/rules/notebooks.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/html_report.smk"
include: "workflow/rules/publish.smk"
