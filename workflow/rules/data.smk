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
    log:
        "logs/fetch/{dataset}.log",
    shell:
        "{RUN_ENV} {PY} -m servesim.cli fetch {wildcards.dataset}"
        " --mirror {params.mirror:q} {params.download} > {log} 2>&1"
