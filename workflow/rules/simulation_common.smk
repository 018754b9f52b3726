# Helpers of the simulation stage (workflow/rules/simulation.smk): scenarios from config, per-run parameters.
from coloc.policies.entry import LABEL_CHARS, PolicyEntry
from coloc.studies import experiment, footprint, scenarios

SIM = config["simulation"]
SIM_DIR = "results/sim/{scenario}/{policy}"
SIM_FIGURES = ["policies", "jct_density", "utilization", "sweep"]  # figures/sim/<scenario>/<figure>.png


wildcard_constraints:
    scenario="[A-Za-z0-9_-]+",
    policy=LABEL_CHARS,  # a policy entry's label (coloc.policies.entry)


def sim_runs(kind):
    """The `kind` file (summary, jobs, utilization) of every (scenario, policy) the config runs."""
    return [f"results/sim/{scenario}/{policy}/{kind}.parquet" for scenario in SIM["scenarios"]
            for policy in SIM["scenario_specs"][scenario]["policies"]]


def sim_dataset(wildcards):
    """The scenario's measured data (its spec's dataset: gavel or lucid)."""
    return scenarios.dataset_of(SIM["scenario_specs"][wildcards.scenario])


def sim_tables(wildcards):
    """The solo and pairs tables of the scenario's dataset: its ground truth."""
    folder = stage.dataset_folder(sim_dataset(wildcards))
    return {"solo": f"{folder}/solo.parquet", "pairs": f"{folder}/pairs.parquet"}


def sim_prediction_inputs(wildcards):
    """The out-of-fold prediction files of the scenario's dataset that the run's policy declares it reads ({} for
    the others), under simulation.protocol or the policy's '@<protocol>' ('@profiled-pairs': no pair file, the
    dataset's pairs table is the truth the run reads; random5 utilization, experiment.file_protocols)."""
    dataset = sim_dataset(wildcards)
    protocol = PolicyEntry.parse(wildcards.policy).protocol_or(SIM["protocol"])
    return {kind: prediction_file(kind, dataset, own)
            for kind, own in experiment.file_protocols(wildcards.policy, protocol).items()}


def sim_prediction_paths(wildcards):
    paths = sim_prediction_inputs(wildcards)
    return as_yaml({"predictions_path": paths.get("predictions", ""),
                    "utilization_path": paths.get("utilization", "")})


def sim_trace_input(wildcards):
    """The trace table, for a scenario whose trace is a slice of it (philly); {} for synthetic traces."""
    source = SIM["scenario_specs"][wildcards.scenario]["trace"]["source"]
    return {"trace": "data/processed/trace.parquet"} if source == "philly" else {}


def sim_trace_path(wildcards):
    """The trace table parameter as YAML: an empty path on the command line would vanish (papermill -p needs a value)."""
    return as_yaml({"trace_path": sim_trace_input(wildcards).get("trace", "")})


def sim_memory_mb(wildcards):
    """The simulate job's memory: its scenario's every run in one process (coloc.studies.footprint)."""
    return footprint.simulate_mb(SIM["scenario_specs"][wildcards.scenario])


def sim_scenario_spec(wildcards):
    return as_yaml({"scenario_spec": SIM["scenario_specs"][wildcards.scenario]})


SIM_SETTINGS = as_yaml({key: SIM[key] for key in scenarios.SETTINGS})
