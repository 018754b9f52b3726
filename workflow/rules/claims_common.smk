# Helpers of the claims stage (workflow/rules/claims.smk): the claims map's runs, their inputs and parameters.
from coloc import claims_map
from coloc.policies.entry import PolicyEntry
from coloc.studies import experiment, scenarios

CLAIMS = config["claims"]


def claims_map_runs():
    """Every run the claims map makes (coloc.claims_map.plan of config claims.map_groups)."""
    groups = [claims_map.group_from_config(name, CLAIMS["groups"][name]) for name in CLAIMS["map_groups"]]
    specs = {g.scenario: SIM["scenario_specs"][g.scenario] for g in groups}
    return claims_map.plan(groups, specs, SIM["protocol"])


def claims_map_predictions():
    """'<policy>|<dataset>' -> [predictions file, utilization file] ('' where the run's policy reads none)."""
    out = {}
    for run in claims_map_runs():
        dataset = scenarios.dataset_of(run.spec)
        protocol = PolicyEntry.parse(run.policy).protocol_or(SIM["protocol"])
        files = {kind: prediction_file(kind, dataset, own)
                 for kind, own in experiment.file_protocols(run.policy, protocol).items()}
        out[f"{run.policy}|{dataset}"] = [files.get("predictions", ""), files.get("utilization", "")]
    return out


def claims_map_inputs(wildcards):
    """The truth tables of the mapped scenarios' datasets, the prediction files their runs read, the trace table
    where a mapped scenario slices it."""
    files = {}
    for run in claims_map_runs():
        folder = stage.dataset_folder(scenarios.dataset_of(run.spec))
        files[f"solo_{folder}"], files[f"pairs_{folder}"] = f"{folder}/solo.parquet", f"{folder}/pairs.parquet"
        if run.spec["trace"]["source"] == "philly":
            files["trace"] = "data/processed/trace.parquet"
    for i, path in enumerate(sorted({p for pair in claims_map_predictions().values() for p in pair if p})):
        files[f"predictions_{i}"] = path
    return files


# The measured pairs of the claims groups' datasets: the reasons name their job types (coloc.claims.paper_claims)
CLAIMS_PAIRS = {d: f"{stage.dataset_folder(d)}/pairs.parquet"
                for d in sorted({scenarios.dataset_of(SIM["scenario_specs"][g["scenario"]])
                                 for g in CLAIMS["groups"].values()})}
# isacpp's pair predictor on the RTX 3090, named in the reasons: the isacpp-3090 group's scenario's
_SPEC_3090 = SIM["scenario_specs"].get(CLAIMS["groups"].get("isacpp-3090", {}).get("scenario"), {})
CLAIMS_PREDICTOR_3090 = _SPEC_3090.get("predictor_norm", SIM["predictor_norm"])


CLAIMS_MAP_PARAMS = as_yaml({
    "claims": CLAIMS,
    "scenario_specs": {name: SIM["scenario_specs"][CLAIMS["groups"][name]["scenario"]] for name in CLAIMS["map_groups"]},
    "settings": {key: SIM[key] for key in scenarios.SETTINGS},
    "tables": {d: {"solo": f"{stage.dataset_folder(d)}/solo.parquet", "pairs": f"{stage.dataset_folder(d)}/pairs.parquet"}
               for d in sorted({scenarios.dataset_of(r.spec) for r in claims_map_runs()})},
    "prediction_paths": claims_map_predictions(),
})
