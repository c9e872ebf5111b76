# One job per figure notebook, run with papermill. The executed notebook is the rule's log, so
# a failure shows the failing cell. Inputs: the notebook, the servesim files it imports
# (transitively), the datasets and the other rules' outputs declared in workflow/params/.
from servesim.analysis import report_captions


def figure_inputs(wc):
    nb = ROOT / "notebooks" / wc.group / f"{wc.fig}.ipynb"
    p = fig_params(wc.group, wc.fig)
    return {
        "notebook": str(nb.relative_to(ROOT)),
        "src": [str(f.relative_to(ROOT)) for f in closure(nb, SRC)],
        "data": [dataset_marker(ds) for ds in p.get("datasets", [])],
        "extra": [s.format(scale=wc.scale) for s in p.get("inputs", [])],
        "params": f"workflow/params/{wc.group}.yaml" if (ROOT / "workflow/params" / f"{wc.group}.yaml").exists() else [],
    }


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
    log:
        notebook="logs/{scale}/{group}/{fig}.ipynb",
    benchmark:
        "results/{scale}/benchmarks/{group}/{fig}.tsv"
    wildcard_constraints:
        scale="quick|full",
        group="|".join(GROUPS),
        fig=r"[A-Za-z0-9_]+",
    shell:
        "{RUN_ENV} {PY} -m papermill -k python3 --cwd notebooks/{wildcards.group} --no-progress-bar --log-level WARNING"
        " {input.notebook} {log.notebook} -y {params.json:q}"
