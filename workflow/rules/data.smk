# Public data: copy from the local mirror or download, verify sha256 against traces/MANIFEST.


rule fetch:
    """Fetch and verify every dataset in traces/MANIFEST."""
    input:
        [dataset_marker(ds) for ds in DATASETS],


rule fetch_dataset:
    input:
        manifest="traces/MANIFEST",
    output:
        touch("traces/data/{dataset}/.verified"),
    params:
        mirror=config["data_mirror"],
        download="" if config["allow_download"] else "--no-download",
        env=RUN_ENV,
        py=PY,
    log:
        "logs/fetch/{dataset}.log",
    conda:
        CONDA_ENV
    shell:
        "{params.env} {params.py} -m servesim.cli fetch {wildcards.dataset}"
        " --mirror {params.mirror:q} {params.download} > {log} 2>&1"
