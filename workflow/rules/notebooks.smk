# One job per figure notebook, run with papermill. The executed notebook is the rule's log, so
# a failure shows the failing cell. Inputs: the notebook, the servesim files it imports
# (transitively), the datasets declared in workflow/params/ and the outputs of the runs it names
# there (`runs:`, entries of workflow/runs/<group>.yaml).


def figure_inputs(wc):
    nb = ROOT / "notebooks" / wc.group / f"{wc.fig}.ipynb"
    p = fig_params(wc.group, wc.fig)
    return {
        "notebook": str(nb.relative_to(ROOT)),
        "src": [str(f.relative_to(ROOT)) for f in closure(nb, SRC)],
        "data": [dataset_marker(ds) for ds in p.get("datasets", [])],
        "runs": [f for r in figure_runs(wc.group, wc.fig, wc.scale) for f in r.files],
        "params": f"workflow/params/{wc.group}.yaml" if (ROOT / "workflow/params" / f"{wc.group}.yaml").exists() else [],
    }


rule figure:
    input:
        unpack(figure_inputs),
    output:
        pdf="figures/{scale}/{group}/{fig}.pdf",
        png="figures/{scale}/{group}/{fig}.png",
        data="results/{scale}/{group}/{fig}/data.csv",
        metrics="results/{scale}/{group}/{fig}/metrics.json",
    params:
        json=papermill_params,
    log:
        notebook="logs/{scale}/{group}/{fig}.ipynb",
    benchmark:
        "results/{scale}/benchmarks/{group}/{fig}.tsv"
    wildcard_constraints:
        scale=SCALE_RE,
        group="|".join(GROUPS),
        fig=r"[A-Za-z0-9_]+",
    shell:
        "{RUN_ENV} {PY} -m papermill -k python3 --cwd notebooks/{wildcards.group} --no-progress-bar --log-level WARNING"
        " {input.notebook} {log.notebook} -y {params.json:q}"
