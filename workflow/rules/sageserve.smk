# SageServe heavy computation (strategy, tier-policy, burst and week runs). Outputs under results/{scale}/sageserve/

# Fig 17: forecasters on the synthetic O365 week (per-scale volume and length)
SAGESERVE_FORECAST = {
    "quick": {"scale": 1.0, "days": 2},   # full volume: thinner traffic makes per-minute demand noise-dominated
    "full": {"scale": 1.0, "days": 7},
    "tiny": {"scale": 0.2, "days": 1},
}


def _sageserve_forecast_args(wc):
    p = SAGESERVE_FORECAST["tiny" if config.get("tiny") else wc.scale]
    return f"--scale {p['scale']} --days {p['days']} --seed {int(config['seed'])}"


rule sageserve_forecast_eval:
    """Journal Fig 17: rolling hourly forecasts of every (forecaster, window) pair."""
    input:
        [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/forecast").glob("*.py"))],
        "src/servesim/workload/gen_sageserve.py",
    output:
        "results/{scale}/sageserve/forecast/fig17_eval.csv",
        "results/{scale}/sageserve/forecast/fig17_eval_series.csv",
    params:
        args=_sageserve_forecast_args,
    wildcard_constraints:
        scale="quick|full",
    benchmark:
        "results/{scale}/benchmarks/sageserve/forecast_eval.tsv"
    shell:
        "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.forecast.evaluate {params.args} -o {output[0]}"


# One job per strategy so a cluster runs them side by side (journal Figs 11-13).
SAGESERVE_RUN_STRATEGIES = ["reactive", "lt_i", "lt_u", "lt_ua", "siloed", "chiron"]


rule sageserve_run:
    """One SageServe strategy on the fleet simulator (preset per scale; paper reading)."""
    input:
        [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/systems/sageserve").glob("*.py"))],
    output:
        summary="results/{scale}/sageserve/runs/{strategy}/summary.json",
        hours="results/{scale}/sageserve/runs/{strategy}/instance_hours.parquet",
        ts="results/{scale}/sageserve/runs/{strategy}/timeseries.parquet",
        requests="results/{scale}/sageserve/runs/{strategy}/requests.parquet",
        lifecycle="results/{scale}/sageserve/runs/{strategy}/lifecycle.parquet",
    params:
        preset=lambda wc: "tiny" if config.get("tiny") else wc.scale,
        seed=lambda wc: int(config["seed"]),
    wildcard_constraints:
        scale="quick|full",
        strategy="|".join(SAGESERVE_RUN_STRATEGIES),
    benchmark:
        "results/{scale}/benchmarks/sageserve/run_{strategy}.tsv"
    shell:
        "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.systems.sageserve.runs --strategy {wildcards.strategy}"
        " --preset {params.preset} --seed {params.seed} -o results/{wildcards.scale}/sageserve/runs/{wildcards.strategy}"


# Journal Fig 16a: the long-term strategies on the burst trace (8x load in the first minute of each hour).
rule sageserve_burst_run:
    """One long-term strategy on the burst trace (preset burst_<scale>; paper reading)."""
    input:
        [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/systems/sageserve").glob("*.py"))],
    output:
        summary="results/{scale}/sageserve/runs_burst/{strategy}/summary.json",
        ts="results/{scale}/sageserve/runs_burst/{strategy}/timeseries.parquet",
    params:
        preset=lambda wc: "burst_tiny" if config.get("tiny") else f"burst_{wc.scale}",
        seed=lambda wc: int(config["seed"]),
    wildcard_constraints:
        scale="quick|full",
        strategy="lt_i|lt_u|lt_ua",
    benchmark:
        "results/{scale}/benchmarks/sageserve/burst_{strategy}.tsv"
    shell:
        "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.systems.sageserve.runs --strategy {wildcards.strategy}"
        " --preset {params.preset} --seed {params.seed} -o results/{wildcards.scale}/sageserve/runs_burst/{wildcards.strategy}"


# Journal Fig 15: instance queue order by tier (FCFS / EDF / PF / DPA) under SageServe (LT-UA) on a
# contended fleet (preset tier_<scale>: at most 6 Llama-2 instances in East US over the peak, so
# KV memory fills and queues form; IW-N TTFT SLA 5.6 s), NIW held in the queue manager; one job per
# policy. "dpa_taun1" is DPA with tau_n = 1 s instead of 10 s (tau_n, tau_p are not in the paper).
SAGESERVE_TIER_POLICIES = ["fcfs", "edf", "pf", "dpa", "dpa_taun1"]
SAGESERVE_TIER_STRATEGY = "lt_ua"
SAGESERVE_TIER_ARGS = {"dpa_taun1": "--tier-policy dpa --dpa-tau-n 1"}


rule sageserve_tier_run:
    """LT-UA with one tier policy ordering every instance's waiting queue (paper reading)."""
    input:
        [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/systems/sageserve").glob("*.py"))],
    output:
        summary="results/{scale}/sageserve/runs_tier/{policy}/summary.json",
        requests="results/{scale}/sageserve/runs_tier/{policy}/requests.parquet",
    params:
        preset=lambda wc: "tier_tiny" if config.get("tiny") else f"tier_{wc.scale}",
        seed=lambda wc: int(config["seed"]),
        strategy=SAGESERVE_TIER_STRATEGY,
        policy_args=lambda wc: SAGESERVE_TIER_ARGS.get(wc.policy, f"--tier-policy {wc.policy}"),
    wildcard_constraints:
        scale="quick|full",
        policy="|".join(SAGESERVE_TIER_POLICIES),
    benchmark:
        "results/{scale}/benchmarks/sageserve/tier_{policy}.tsv"
    shell:
        "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.systems.sageserve.runs --strategy {params.strategy}"
        " {params.policy_args} --preset {params.preset} --seed {params.seed}"
        " -o results/{wildcards.scale}/sageserve/runs_tier/{wildcards.policy}"


# Journal Fig 16b: the week (quick: a Thursday-noon-to-Sunday window at 1/5 volume; full: the week).
rule sageserve_week_run:
    """One strategy over the week preset of this scale (paper reading)."""
    input:
        [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/systems/sageserve").glob("*.py"))],
    output:
        summary="results/{scale}/sageserve/runs_week/{strategy}/summary.json",
        requests="results/{scale}/sageserve/runs_week/{strategy}/requests.parquet",
    params:
        preset=lambda wc: "week_tiny" if config.get("tiny") else f"week_{wc.scale}",
        seed=lambda wc: int(config["seed"]),
    wildcard_constraints:
        scale="quick|full",
        strategy="reactive|lt_i|lt_u|lt_ua",
    benchmark:
        "results/{scale}/benchmarks/sageserve/week_{strategy}.tsv"
    shell:
        "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.systems.sageserve.runs --strategy {wildcards.strategy}"
        " --preset {params.preset} --seed {params.seed} -o results/{wildcards.scale}/sageserve/runs_week/{wildcards.strategy}"


# Journal Fig 8 / Table 1 (Siloed vs Unified, per model): quick scale runs the 4 models of one
# region for two hours (preset models_quick); full scale copies the full-scale runs (4 models x 3
# regions, the peak day) so the two figures read one path at every scale.
SAGESERVE_MODELS_FILES = ["summary.json", "instance_hours.parquet", "timeseries.parquet", "requests.parquet"]


def _sageserve_models_shell(wc):
    out = f"results/{wc.scale}/sageserve/runs_models/{wc.strategy}"
    if wc.scale == "full" and not config.get("tiny"):
        src = f"results/full/sageserve/runs/{wc.strategy}"
        return f"mkdir -p {out} && " + " && ".join(f"cp {src}/{f} {out}/{f}" for f in SAGESERVE_MODELS_FILES)
    preset = "models_tiny" if config.get("tiny") else "models_quick"
    return (f"{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.systems.sageserve.runs --strategy {wc.strategy}"
            f" --preset {preset} --seed {int(config['seed'])} -o {out}")


rule sageserve_models_run:
    """Unified (reactive) or Siloed over the 4 models of one region (quick) / the full runs (full)."""
    input:
        lambda wc: ([f"results/full/sageserve/runs/{wc.strategy}/{f}" for f in SAGESERVE_MODELS_FILES]
                    if wc.scale == "full" and not config.get("tiny") else
                    [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/systems/sageserve").glob("*.py"))]),
    output:
        [f"results/{{scale}}/sageserve/runs_models/{{strategy}}/{f}" for f in SAGESERVE_MODELS_FILES],
    params:
        cmd=_sageserve_models_shell,
    wildcard_constraints:
        scale="quick|full",
        strategy="reactive|siloed",
    benchmark:
        "results/{scale}/benchmarks/sageserve/models_{strategy}.tsv"
    shell:
        "{params.cmd}"
