# The heavy jobs declared in workflow/runs/<paper>.yaml (kind `run`): simulations, sweep points,
# forecast evaluations, tables gathered from other runs. One rule per (paper, module, outputs), all
# made by the loop below; a job is `python -m <module> [command] <args> [--seed] -o <run dir>`.
# Its inputs are the servesim files the module imports (transitively), its datasets and the runs it
# gathers, so an edit anywhere in the package re-runs exactly the jobs that import it; an edit to
# a run's declared arguments re-runs it through Snakemake's `params` trigger.


def run_spec(paper, wc):
    r = declared_runs(paper, wc.scale).get(wc.job)
    if r is None or r.same_as is not None:
        raise WorkflowError(f"workflow/runs/{paper}.yaml declares no job {wc.job!r} at {wc.scale} scale")
    return r


def run_inputs(paper, wc):
    r = run_spec(paper, wc)
    runs = declared_runs(paper, wc.scale)
    return {
        "src": module_sources(r.module),
        "data": [dataset_marker(ds) for ds in r.data],
        "runs": [f"{runs[n].dir}/summary.json" for n in r.collects],
    }


def run_command(paper, wc):
    """The job's command line after `python -m` (quoted)."""
    r = run_spec(paper, wc)
    runs = declared_runs(paper, wc.scale)
    out = f"{r.dir}/{r.out_file}" if r.out_file else r.dir
    words = [r.module] + ([r.command] if r.command else []) + [f"{runs[n].dir}/summary.json" for n in r.collects]
    words += list(r.args) + (["--seed", str(int(config["seed"]))] if r.seeded else []) + ["-o", out]
    return " ".join(shlex.quote(w) for w in words)


def _rule_name(key, taken):
    paper, kind, module, command = key[:4]
    base = re.sub(r"\W+", "_", f"run_{paper}_{module.rsplit('.', 1)[-1]}" + (f"_{command}" if command else ""))
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


_RULE_NAMES = set()
for _key, _names in RUN_GROUPS.items():
    _paper, _kind, _outputs = _key[0], _key[1], _key[4]
    if _kind != "run":
        continue

    rule:
        name:
            _rule_name(_key, _RULE_NAMES)
        input:
            unpack(lambda wc, paper=_paper: run_inputs(paper, wc)),
        output:
            [f"results/{{scale}}/{_paper}/{{job}}/{o}" for o in _outputs],
        params:
            cmd=lambda wc, paper=_paper: run_command(paper, wc),
        log:
            f"logs/{{scale}}/{_paper}/{{job}}.log",
        benchmark:
            f"results/{{scale}}/benchmarks/{_paper}/{{job}}.tsv"
        wildcard_constraints:
            scale=SCALE_RE,
            job="|".join(re.escape(n) for n in _names),
        shell:
            "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m {params.cmd} > {log} 2>&1"
