# One job per figure notebook, run with papermill. The executed notebook is the rule's log, so
# a failure shows the failing cell. Inputs: the notebook, the newest of the servesim files it
# imports (transitively; common.smk's newest_source says why one stands for all), the datasets declared in workflow/params/ and the outputs of the runs it names
# there (`runs:`, entries of workflow/runs/<group>.yaml).
from servesim.analysis import report_captions


rule figure:
    input:
        unpack(figure_inputs),
    output:
        pdf="figures/{scale}/{group}/{fig}.pdf",
        # in the HTML report (workflow/rules/html_report.smk), captioned from its notebook
        png=report(
            "figures/{scale}/{group}/{fig}.png",
            caption="../report/figure.rst",
            category=lambda wc: report_captions.group_title(wc.group),
            labels=lambda wc: report_captions.figure_labels(ROOT, wc.group, wc.fig),
        ),
        data="results/{scale}/{group}/{fig}/data.csv",
        metrics="results/{scale}/{group}/{fig}/metrics.json",
    params:
        json=papermill_params,
        env=RUN_ENV,
        py=PY,
    log:
        notebook="logs/{scale}/{group}/{fig}.ipynb",
    benchmark:
        "results/{scale}/benchmarks/{group}/{fig}.tsv"
    conda:
        CONDA_ENV
    wildcard_constraints:
        scale=SCALE_RE,
        group="|".join(GROUPS),
        fig=r"[A-Za-z0-9_]+",
    shell:
        "{params.env} {params.py} -m servesim.analysis.papermill_run -k python3 --cwd notebooks/{wildcards.group} --no-progress-bar --log-level WARNING"
        " {input.notebook} {log.notebook} -y {params.json:q}"
