# Paper scale one paper at a time (resumable: a paper's finished jobs are kept), and its part of
# the published snapshot `results-full/` (copied and stamped with the commit by `servesim snapshot`).
# The groups (calibration: the simulator against vLLM; workload) are published the same way.
for _paper in GROUPS:

    rule:
        name:
            f"full_{_paper}"
        input:
            all_figure_outputs("full", [_paper]),

    rule:
        name:
            f"publish_{_paper}"
        input:
            all_figure_outputs("full", [_paper]),
        output:
            f"results-full/{_paper}/STAMP.json",
        params:
            env=RUN_ENV,
            py=PY,
            root=str(ROOT),
            paper=_paper,
        log:
            f"logs/full/publish_{_paper}.log",
        localrule: True  # it writes into the checkout's results-full/, never on a cluster node
        conda:
            CONDA_ENV
        shell:
            "{params.env} {params.py} -m servesim.cli snapshot --paper {params.paper} --no-freshness-check"
            " --root {params.root:q} > {log} 2>&1"
