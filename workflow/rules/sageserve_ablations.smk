# SageServe studies beyond the main text's runs (one job per point; outputs under
# results/{scale}/sageserve/ablations/<study>/):
#   appa      journal App. A: LT-UA vs Reactive on A100 vs H100 and at IW:NIW 9:1 / 1:1
#   fig14     journal Fig 14: Llama-4 Scout as a fifth model (Reactive / LT-I / LT-U / LT-UA)
#   ltua_thr  the authors' repository: LT-UA threshold sweep (code and paper readings)
#   interval  the authors' repository: reactive scaling-interval sweep, Model A and Model B, day 0, 6 h
# Each study's index.json (rule sageserve_ablation_index) lists its points for this scale; the
# notebooks read it. `tiny` (config tiny=true) runs a few points on the tiny preset.

# quick: East US, 06:00-14:00 of the peak day at half volume: the morning ramp, where scalers
# differ, at about the cost of 2 h of the peak at full volume
ABL_STRATEGY_WINDOW = {"quick": "--preset day_east --window-h 30 38 --volume-scale 0.5", "full": "--preset full",
                       "tiny": "--preset tiny"}
ABL_APPA_VARIANTS = {
    # App. A's main setting is the H100 profile (J §7.1); A100 is the hardware ablation
    "h100": "--hardware h100-80gb",
    "a100": "--hardware a100-80gb",
    "iwniw9": "--hardware h100-80gb --iw-niw-ratio 9",
    "iwniw1": "--hardware h100-80gb --iw-niw-ratio 1",
}
ABL_THR_WINDOW = {
    # the threshold acts at the day's ramps, which a window around the peak does not contain
    "quick": ABL_STRATEGY_WINDOW["quick"],
    "full": "--preset full --models llama-2-70b",  # the repository's sweep: Model A, 3 regions, the peak day
    "tiny": "--preset tiny",
}
ABL_THR_GRID = {
    "quick": {"code": [2, 5, 10], "paper": [2, 10]},
    "full": {"code": list(range(2, 11)), "paper": list(range(2, 11))},
    "tiny": {"code": [2, 5, 10], "paper": [2]},  # the claims name thresholds 2 / 5 / 10
}
ABL_INTERVAL_MODELS = {"a": "llama-2-70b", "b": "bloom-176b"}  # the authors' Model A / Model B
ABL_INTERVAL_WINDOW = {
    # day 0 (Monday), first 6 h, as the repository's sweep; quick: East US only
    "quick": "--preset quick --window-h 0 6",
    "full": "--preset full --window-h 0 6",
    "tiny": "--preset tiny --window-h 0 1",
}
ABL_INTERVALS = {"quick": [15, 60, 240, 960], "full": [15, 60, 240, 960], "tiny": [15, 60, 240, 960]}
ABL_STUDIES = ("appa", "fig14", "ltua_thr", "interval")


def abl_points(study: str, scale: str) -> dict:
    """point name -> runs.py arguments (without -o/--seed) for one study at one scale."""
    s = "tiny" if config.get("tiny") else scale
    if study == "appa":
        return {f"{v}__{st}": f"--strategy {st} {ABL_STRATEGY_WINDOW[s]} {args}"
                for v, args in ABL_APPA_VARIANTS.items() for st in ("reactive", "lt_ua")}
    if study == "fig14":
        return {st: f"--strategy {st} {ABL_STRATEGY_WINDOW[s]} --fifth-model llama-4-scout --hardware h100-80gb"
                for st in ("reactive", "lt_i", "lt_u", "lt_ua")}
    if study == "ltua_thr":
        return {f"{r}_thr{t}": f"--strategy lt_ua --reading {r} --lt-ua-threshold {t} {ABL_THR_WINDOW[s]}"
                for r, ts in ABL_THR_GRID[s].items() for t in ts}
    if study == "interval":
        return {f"{k}_int{i}": f"--strategy reactive --reading code --scaling-interval {i} {ABL_INTERVAL_WINDOW[s]}"
                               f" --models {m}"
                for k, m in ABL_INTERVAL_MODELS.items() for i in ABL_INTERVALS[s]}
    raise ValueError(f"unknown SageServe ablation study {study!r}; known: {ABL_STUDIES}")


rule sageserve_ablation_run:
    """One point of a SageServe ablation / sweep study (see abl_points)."""
    input:
        [str(f.relative_to(ROOT)) for f in sorted((ROOT / "src/servesim/systems/sageserve").glob("*.py"))],
        "src/servesim/workload/gen_sageserve.py",
        dataset_marker("sageserve"),  # the Splitwise profile (instance_models.py)
    output:
        summary="results/{scale}/sageserve/ablations/{study}/{point}/summary.json",
        hours="results/{scale}/sageserve/ablations/{study}/{point}/instance_hours.parquet",
        requests="results/{scale}/sageserve/ablations/{study}/{point}/requests.parquet",
        ts="results/{scale}/sageserve/ablations/{study}/{point}/timeseries.parquet",
    params:
        args=lambda wc: abl_points(wc.study, wc.scale)[wc.point],
        seed=lambda wc: int(config["seed"]),
    wildcard_constraints:
        scale="quick|full",
        study="|".join(ABL_STUDIES),
        point=r"[A-Za-z0-9_]+",
    benchmark:
        "results/{scale}/benchmarks/sageserve/ablation_{study}_{point}.tsv"
    shell:
        "{RUN_ENV} OMP_NUM_THREADS=1 {PY} -m servesim.systems.sageserve.runs {params.args} --seed {params.seed}"
        " -o results/{wildcards.scale}/sageserve/ablations/{wildcards.study}/{wildcards.point}"


rule sageserve_ablation_index:
    """The points of one study at this scale: what the notebook reads."""
    input:
        lambda wc: [f"results/{wc.scale}/sageserve/ablations/{wc.study}/{p}/summary.json"
                    for p in abl_points(wc.study, wc.scale)],
    output:
        "results/{scale}/sageserve/ablations/{study}/index.json",
    params:
        points=lambda wc: abl_points(wc.study, wc.scale),
    wildcard_constraints:
        scale="quick|full",
        study="|".join(ABL_STUDIES),
    run:
        import json

        pts = {p: {"dir": f"{wildcards.study}/{p}", "args": a} for p, a in params.points.items()}
        with open(output[0], "w") as fh:
            json.dump({"study": wildcards.study, "scale": wildcards.scale, "tiny": bool(config.get("tiny")),
                       "points": pts}, fh, indent=1, sort_keys=True)
            fh.write("\n")
