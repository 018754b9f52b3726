# Stage 4: trace-driven cluster simulation. One notebook run per (trace, policy, seed, gpus, load);
# a gather rule makes one table of all runs; a figure rule plots it (a figure change reruns no simulation).

SIM = config["simulation"]
SIM_RUN = "results/sim/{trace}/{policy}/seed{seed}_gpus{gpus}_load{load}"
# Prediction files each predictive policy reads (out-of-fold, made by the predictors stage).
SIM_PREDICTION_FILES = {
    "horus": ["utilization"],
    "isacpp": ["predictions", "utilization"],
    "coloc": ["predictions"],
    "coloc-fifo": ["predictions"],
}


wildcard_constraints:
    trace="[A-Za-z0-9_]+",
    policy="[A-Za-z0-9_~-]+",
    seed="[0-9]+",
    gpus="[0-9]+",
    load="[0-9.]+",


def sim_runs(kind):
    """Every run's `kind` file (summary, jobs, utilization) for the configured sweep."""
    out = []
    for trace in SIM["traces"]:
        loads = SIM["trace_specs"][trace].get("loads", SIM["loads"])
        out += expand(f"{SIM_RUN}/{kind}.parquet", trace=trace, policy=SIM["policies"], seed=SIM["seeds"],
                      gpus=SIM["gpus"], load=loads)
    return out


def sim_prediction_inputs(wildcards):
    """The out-of-fold prediction files the run's policy reads ({} for non-predictive policies)."""
    protocol = SIM["protocol"]
    wanted = SIM_PREDICTION_FILES.get(wildcards.policy.split("~")[0], [])
    return {kind: f"data/processed/{kind}_{protocol}.parquet" for kind in wanted}


def sim_prediction_paths(wildcards):
    paths = sim_prediction_inputs(wildcards)
    return as_yaml({"predictions_path": paths.get("predictions", ""),
                    "utilization_path": paths.get("utilization", "")})


def sim_trace_spec(wildcards):
    spec = {k: v for k, v in SIM["trace_specs"][wildcards.trace].items() if k != "loads"}
    return as_yaml({"trace_spec": spec})


SIM_SETTINGS = as_yaml({key: SIM[key] for key in ("device", "reference_device", "gpus_per_node",
                                                   "max_jobs_per_gpu", "restart_cost_s", "protocol",
                                                   "predictor_norm", "predictor_util", "util_bin_s")})


rule simulate:
    input:
        unpack(sim_prediction_inputs),
        notebook=NOTEBOOKS / "04_simulation.ipynb",
        solo="data/processed/solo.parquet",
        pairs="data/processed/pairs.parquet",
        trace="data/processed/trace.parquet",
    output:
        jobs=f"{SIM_RUN}/jobs.parquet",
        summary=f"{SIM_RUN}/summary.parquet",
        utilization=f"{SIM_RUN}/utilization.parquet",
    params:
        spec=sim_trace_spec,
        predictions=sim_prediction_paths,
        settings=SIM_SETTINGS,
    log:
        notebook="results/notebooks/04_simulation/{trace}/{policy}/seed{seed}_gpus{gpus}_load{load}.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook} {log.notebook} -k python3 --cwd . "
        "-p trace_name {wildcards.trace} -p policy {wildcards.policy} -p seed {wildcards.seed} "
        "-p gpus {wildcards.gpus} -p load {wildcards.load} "
        "-p solo_path {input.solo} -p pairs_path {input.pairs} -p trace_path {input.trace} "
        "-p jobs_out {output.jobs} -p summary_out {output.summary} -p utilization_out {output.utilization} "
        "-y {params.spec:q} -y {params.predictions:q} -y {params.settings:q}"


rule simulation_summary:
    input:
        notebook=NOTEBOOKS / "04_simulation_summary.ipynb",
        summaries=sim_runs("summary"),
        jobs=sim_runs("jobs"),
        utilization=sim_runs("utilization"),
    output:
        summary="results/sim/summary.parquet",
        csv="results/sim/summary.csv",
        jobs="results/sim/jobs.parquet",
        utilization="results/sim/utilization.parquet",
    params:
        paths=as_yaml({"summary_paths": sim_runs("summary"), "jobs_paths": sim_runs("jobs"),
                       "utilization_paths": sim_runs("utilization")}),
    log:
        notebook="results/notebooks/04_simulation_summary.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook} {log.notebook} -k python3 --cwd . "
        "-p summary_out {output.summary} -p summary_csv_out {output.csv} -p jobs_out {output.jobs} "
        "-p utilization_out {output.utilization} -y {params.paths:q}"


rule simulation_figures:
    input:
        notebook=NOTEBOOKS / "04_simulation_figures.ipynb",
        summary=rules.simulation_summary.output.summary,
        jobs=rules.simulation_summary.output.jobs,
        utilization=rules.simulation_summary.output.utilization,
    output:
        expand("figures/sim/{kind}_{trace}.png", kind=["policies", "jct_cdf", "utilization"], trace=SIM["traces"]),
        sweep="figures/sim/load_sweep.png",
    params:
        settings=as_yaml({"traces": SIM["traces"], "headline_gpus": SIM["headline"]["gpus"],
                          "headline_load": SIM["headline"]["load"]}),
    log:
        notebook="results/notebooks/04_simulation_figures.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook} {log.notebook} -k python3 --cwd . "
        "-p summary_path {input.summary} -p jobs_path {input.jobs} -p utilization_path {input.utilization} "
        "-p figures_dir figures/sim -y {params.settings:q}"


ALL_OUTPUTS.extend([rules.simulation_summary.output.summary, rules.simulation_summary.output.csv])
ALL_OUTPUTS.extend(rules.simulation_figures.output)
