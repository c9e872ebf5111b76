# The browsable HTML report of one scale: every figure with a caption generated from its notebook,
# the claims report as a table, provenance and runtimes. `snakemake --cores N quick_report` (or
# `full_report`) runs the scale's pipeline, then `snakemake --report` on it.
# Captions: rule report_pages writes one file per figure from its notebook; the single caption
# template workflow/report/figure.rst (named by the figure rule's report() flag) includes it.
from servesim.analysis import report_captions

report: "../report/workflow.rst"


# quick work on the report files: never sent to a cluster node
localrules: report_pages, html_report, quick_report, full_report, test_report


rule report_pages:
    input:
        figures=lambda wc: all_figure_outputs(wc.scale),
        claims_md="results/{scale}/claims_report.md",
        claims="results/{scale}/claims_report.csv",
        provenance="results/{scale}/provenance.json",
        notebooks=[f"notebooks/{g}/{f}.ipynb" for g, figs in FIGURES.items() for f in figs],
        claims_yaml=sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow/claims").glob("*.yaml")),
        # the published paper scale, shown beside this scale's figures and claims where it exists
        snapshot=[str(p.relative_to(ROOT)) for p in (ROOT / "results-full").glob("claims_report.csv")],
    output:
        captions=directory("results/{scale}/report/captions"),
        claims=report("results/{scale}/report/claims.html", caption="../report/claims.rst", category="Claims"),
        provenance=report("results/{scale}/report/provenance.html", caption="../report/provenance.rst",
                          category="Provenance"),
        runtimes=report("results/{scale}/report/runtimes.html", caption="../report/runtimes.rst",
                        category="Runtimes"),
    log:
        "logs/{scale}/report_pages.log",
    wildcard_constraints:
        scale=SCALE_RE,
    run:
        report_captions.write_report_pages(
            ROOT, wildcards.scale, FIGURES, captions_dir=output.captions, claims_html=output.claims,
            provenance_html=output.provenance, runtimes_html=output.runtimes,
        )


rule html_report:
    input:
        lambda wc: _report_pages(wc.scale),
        "results/{scale}/report/captions",
    output:
        "results/{scale}/report.html",
    params:
        config=_report_config,
        targets=lambda wc: " ".join(_report_pages(wc.scale)),
        env=RUN_ENV,
        py=PY,
    log:
        "logs/{scale}/html_report.log",
    conda:
        CONDA_ENV,
    wildcard_constraints:
        scale=SCALE_RE,
    # the report of the jobs behind the report pages (every figure of the scale); --nolock because
    # this job runs inside the Snakemake that holds the lock
    shell:
        "{params.env} {params.py} -m snakemake --nolock --cores 1 --quiet all --config {params.config}"
        " --report {output} {params.targets} > {log} 2>&1"


rule quick_report:
    """The quick scale's pipeline and its HTML report, results/quick/report.html."""
    input:
        "results/quick/report.html",


rule full_report:
    """The paper scale's pipeline and its HTML report, results/full/report.html."""
    input:
        "results/full/report.html",


rule test_report:
    """The test scale's pipeline (tiny parameters, as the tests use) and its HTML report."""
    input:
        "results/test/report.html",
