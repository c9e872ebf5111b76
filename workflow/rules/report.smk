# The claims report (the project's progress meter) and provenance, per scale.


rule claims_report:
    input:
        metrics=lambda wc: [f for f in all_figure_outputs(wc.scale) if f.endswith("metrics.json")],
        claims=sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow/claims").glob("*.yaml")),
        # the checker and its schema: an edit to either re-checks every claim
        checker=["src/servesim/analysis/claims.py", "workflow/schemas/claims.schema.yaml"],
    output:
        md="results/{scale}/claims_report.md",
        csv="results/{scale}/claims_report.csv",
    params:
        env=RUN_ENV,
        py=PY,
        root=str(ROOT),
    log:
        "logs/{scale}/claims_report.log",
    conda:
        CONDA_ENV
    wildcard_constraints:
        scale=SCALE_RE,
    shell:
        "{params.env} {params.py} -m servesim.cli claims"
        " --scale {wildcards.scale} --root {params.root:q} --md {output.md} --csv {output.csv} > {log} 2>&1"


rule provenance:
    input:
        "results/{scale}/claims_report.csv",
        "traces/MANIFEST",
        "workflow/config.yaml",
    output:
        "results/{scale}/provenance.json",
    params:
        seed=SEED,
        env=RUN_ENV,
        py=PY,
        root=str(ROOT),
    log:
        "logs/{scale}/provenance.log",
    conda:
        CONDA_ENV
    wildcard_constraints:
        scale=SCALE_RE,
    shell:
        "{params.env} {params.py} -m servesim.cli provenance"
        " --scale {wildcards.scale} --root {params.root:q} --seed {params.seed} -o {output} > {log} 2>&1"
