# GPU step-time profiles (`servesim profile-gpu`, engine: src/servesim/perf/gpu_bench.py), on a node
# with a GPU and PyTorch (nothing else of servesim's is needed there):
#   snakemake --profile workflow/profiles/gpu gpu_bench
# Not part of quick/full: the tables committed under src/servesim/perf/data/gpu_bench/<hardware>/
# are what the perf layer and notebooks/calibration/perf_models read; this target re-measures them
# into results/gpu_bench/ (copy a complete run there, with its provenance.json, to replace them).
# Settings from the environment (the config schema is closed):
#   SERVESIM_GPU_BENCH_MODELS  model:tp:grid,... in priority order (default: the committed H100 set)
#   SERVESIM_GPU_BENCH_BUDGET_S  start no new step after this many seconds (default: no limit);
#     a run cut short keeps every finished table and says so in provenance.json ("complete": false)
#   SERVESIM_ENGINE_PYTHON  the interpreter on the GPU node (as for the engine rules)
GPU_BENCH_MODELS = os.environ.get(
    "SERVESIM_GPU_BENCH_MODELS",
    "qwen2.5-7b:1:aegaeon,llama-2-13b:1:aegaeon,yi-1.5-9b:1:aegaeon,llama-2-70b:8:splitwise,"
    "llama-2-70b:4:splitwise,bloom-176b:8:splitwise,llama-3.1-8b:1:splitwise,llama-2-7b:1:splitwise",
)
GPU_BENCH_BUDGET = os.environ.get("SERVESIM_GPU_BENCH_BUDGET_S", "inf")


rule gpu_bench_plan:
    """The plan (model shapes from the catalog, step grids) the GPU node runs."""
    output:
        "results/gpu_bench/plan.json",
    params:
        models=shlex.quote(GPU_BENCH_MODELS),
        env=RUN_ENV,
        py=PY,
    log:
        "logs/gpu_bench/plan.log",
    conda:
        CONDA_ENV
    shell:
        "{params.env} {params.py} -m servesim.cli profile-gpu --plan-out {output} --models {params.models} > {log} 2>&1"


rule gpu_bench:
    """Step-time tables and copy bandwidths measured on one GPU (resources: gpu=1)."""
    input:
        plan="results/gpu_bench/plan.json",
        script="src/servesim/perf/gpu_bench.py",
    output:
        directory("results/gpu_bench/measured"),
    params:
        budget=GPU_BENCH_BUDGET,
        py=ENGINE_PY,
    threads: 4
    resources:
        gpu=1,
    log:
        "logs/gpu_bench/run.log",
    conda:
        ENGINE_CONDA_ENV
    shell:
        "{params.py} {input.script} --plan {input.plan} --out {output} --budget-s {params.budget} > {log} 2>&1"
