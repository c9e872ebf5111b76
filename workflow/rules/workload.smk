# Workloads as Parquet for the simulation rules: results/{scale}/workload/<generator>.parquet
# (the generators' quick/full scales are in servesim/workload/cli.py: SCALES). Seeded by config["seed"].


def _workload_inputs(wc):
    data = {"azure_code_week": ["azure-llm-2023"], "azure_conv_week": ["azure-llm-2023"],
            "oserve": ["azure-llm-2023"], "aegaeon_market": ["aegaeon"]}.get(wc.gen, [])
    return [dataset_marker(ds) for ds in data] + [str(p.relative_to(ROOT)) for p in sorted((SRC / "servesim" / "workload").glob("*.py"))]


rule workload_generate:
    """One generator's workload at a scale, validated and stored as Parquet."""
    input:
        _workload_inputs,
    output:
        "results/{scale}/workload/{gen}.parquet",
    log:
        "logs/{scale}/workload/{gen}.log",
    wildcard_constraints:
        scale="quick|full",
        gen="sageserve_week|azure_code_week|azure_conv_week|oserve|aegaeon_market",
    shell:
        "{RUN_ENV} {PY} -m servesim.workload.cli workload generate {wildcards.gen} --scale {wildcards.scale}"
        " --seed {config[seed]} -o {output} > {log} 2>&1"
