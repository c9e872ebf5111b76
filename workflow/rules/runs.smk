# The heavy jobs declared in workflow/runs/<paper>.yaml (kind `run`): simulations, sweep points,
# forecast evaluations, tables gathered from other runs. One rule per (paper, module, outputs), all
# made by the loop below; a job is `python -m <module> [command] <args> [--seed] -o <run dir>`.
# Its inputs are the newest of the servesim files the module imports (transitively: an edit to any
# of them makes it the newest; common.smk's newest_source), its datasets and the runs it
# gathers, so an edit anywhere in the package re-runs exactly the jobs that import it; an edit to
# a run's declared arguments re-runs it through Snakemake's `params` trigger.


_RULE_NAMES = set()
for _key, _names in RUN_GROUPS.items():
    _paper, _kind, _outputs = _key[0], _key[1], _key[4]
    if _kind != "run":
        continue

    rule:
        name:
            run_rule_name(_key, _RULE_NAMES)
        input:
            unpack(lambda wc, paper=_paper: run_inputs(paper, wc)),
        output:
            [f"results/{{scale}}/{_paper}/{{job}}/{o}" for o in _outputs],
        params:
            cmd=lambda wc, paper=_paper: run_command(paper, wc),
            env=RUN_ENV,
            py=PY,
        log:
            f"logs/{{scale}}/{_paper}/{{job}}.log",
        benchmark:
            f"results/{{scale}}/benchmarks/{_paper}/{{job}}.tsv"
        conda:
            CONDA_ENV
        wildcard_constraints:
            scale=SCALE_RE,
            job="|".join(re.escape(n) for n in _names),
        shell:
            "{params.env} OMP_NUM_THREADS=1 {params.py} -m {params.cmd} > {log} 2>&1"
