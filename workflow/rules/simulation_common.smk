# Helpers of the simulation stage (workflow/rules/simulation.smk): the sweep from config, per-run parameters.

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
