# Helpers of the simulation stage (workflow/rules/simulation.smk): the sweep from config, per-run parameters.
from coloc.sim import experiment

SIM = config["simulation"]
SIM_RUN = "results/sim/{trace}/{policy}/seed{seed}_gpus{gpus}_load{load}"


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
    """The out-of-fold Gavel prediction files the run's policy declares it reads ({} for the others)."""
    return {kind: prediction_file(kind, "gavel", SIM["protocol"]) for kind in experiment.prediction_files(wildcards.policy)}


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
