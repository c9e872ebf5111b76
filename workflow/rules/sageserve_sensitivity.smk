# SageServe: sensitivity of the headline LT-vs-Reactive saving (J §7.2.1, Fig 11) to the reading
# (paper text vs the authors' code, and the paper with one code choice swapped in) and to the
# theta headroom. One job per (reading, headroom, strategy); Reactive once per reading (it does not
# use theta); readings with the code's constant theta run once per strategy ("hna").
# Outputs: results/{scale}/sageserve/sensitivity/<reading>/<h0.70|reactive|hna>/<strategy>/.

# per scale: the runs.PRESETS window, and per reading the headrooms and LT strategies it runs
SAGESERVE_SENS = {
    # the quick window (East US, 12:00-16:00 of the peak day): a few points
    "quick": {"preset": "quick", "readings": {
        "paper": {"headrooms": [0.5, 0.7], "strategies": ["lt_i", "lt_ua"]},
        "code": {"headrooms": [None], "strategies": ["lt_i", "lt_ua"]},
    }},
    # the peak day, Llama-2 over the three regions (Fig 11's setting, sensitivity.SENS_PRESETS): the grid
    "full": {"preset": "peak_llama2", "readings": {
        "paper": {"headrooms": [0.4, 0.5, 0.6, 0.7, 0.8, 0.9], "strategies": ["lt_i", "lt_u", "lt_ua"]},
        "code": {"headrooms": [None], "strategies": ["lt_i", "lt_u", "lt_ua"]},
        "code_measured": {"headrooms": [0.5, 0.7, 0.9], "strategies": ["lt_i", "lt_u", "lt_ua"]},
        "paper_insample": {"headrooms": [0.5, 0.6, 0.7, 0.8, 0.9], "strategies": ["lt_i", "lt_ua"]},
        "paper_5030": {"headrooms": [0.5, 0.6, 0.7, 0.8], "strategies": ["lt_i", "lt_ua"]},
        "paper_nodelay": {"headrooms": [0.5, 0.7], "strategies": ["lt_i", "lt_ua"]},
        "paper_start8": {"headrooms": [0.5, 0.7], "strategies": ["lt_i", "lt_ua"]},
        "paper_period1": {"headrooms": [0.7], "strategies": ["lt_ua"]},
    }},
    # `--config tiny=true` (tests): one hour at 1/10 volume
    "tiny": {"preset": "tiny", "readings": {
        "paper": {"headrooms": [0.5, 0.7], "strategies": ["lt_ua"]},
        "code": {"headrooms": [None], "strategies": ["lt_i", "lt_ua"]},
    }},
}


def _sens_grid(scale):
    return SAGESERVE_SENS["tiny" if config.get("tiny") else scale]


def _sens_hdir(h):
    return "hna" if h is None else f"h{h:.2f}"


def sageserve_sens_summaries(wc):
    """Every run's summary.json of this scale's grid (Reactive once per reading)."""
    base = f"results/{wc.scale}/sageserve/sensitivity"
    out = []
    for reading, g in _sens_grid(wc.scale)["readings"].items():
        out.append(f"{base}/{reading}/reactive/reactive/summary.json")
        out += [f"{base}/{reading}/{_sens_hdir(h)}/{s}/summary.json" for h in g["headrooms"] for s in g["strategies"]]
    return out


def _sens_headroom_arg(wc):
    if wc.hdir in ("reactive", "hna"):
        return ""
    return f"--headroom {float(wc.hdir[1:])}"


rule sageserve_sens_run:
    """One (reading, headroom, strategy) run of the LT-savings sensitivity study."""
    input:
        [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/systems/sageserve").glob("*.py"))],
    output:
        summary="results/{scale}/sageserve/sensitivity/{reading}/{hdir}/{strategy}/summary.json",
        hourly="results/{scale}/sageserve/sensitivity/{reading}/{hdir}/{strategy}/hourly.csv",
    params:
        preset=lambda wc: _sens_grid(wc.scale)["preset"],
        headroom=_sens_headroom_arg,
        seed=lambda wc: int(config["seed"]),
    wildcard_constraints:
        scale="quick|full",
        reading=r"[a-z0-9_]+",
        hdir=r"reactive|hna|h[0-9]\.[0-9]{2}",
        strategy="reactive|lt_i|lt_u|lt_ua",
    benchmark:
        "results/{scale}/benchmarks/sageserve/sens_{reading}_{hdir}_{strategy}.tsv"
    shell:
        "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.systems.sageserve.sensitivity run --reading {wildcards.reading}"
        " --strategy {wildcards.strategy} {params.headroom} --preset {params.preset} --seed {params.seed}"
        " -o results/{wildcards.scale}/sageserve/sensitivity/{wildcards.reading}/{wildcards.hdir}/{wildcards.strategy}"


rule sageserve_sens_collect:
    """All runs of the grid in one table (+ the hour-by-hour table) for notebook sens_lt_savings."""
    input:
        sageserve_sens_summaries,
    output:
        runs="results/{scale}/sageserve/sensitivity/runs.csv",
        hourly="results/{scale}/sageserve/sensitivity/runs_hourly.csv",
    wildcard_constraints:
        scale="quick|full",
    shell:
        "{RUN_ENV} {PY} -m servesim.systems.sageserve.sensitivity collect {input} -o {output.runs}"
