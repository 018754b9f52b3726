# Stage 6: the claims table. Each headline claim of Horus and ISACPP next to coloc's measurement of the same
# comparison (coloc.claims; verdict rules in its docstring), from the simulation summary, the predictors stage's
# scores and the scheduling delay, in coloc's setting and in the paper's; the claims map (coloc.claims_map) runs each
# simulated claim's group in the paper's setting, coloc's, and one factor moved at a time. Every value from the config
# reaches the shell quoted ({...:q}).
from coloc import claims_map
from coloc.sim import experiment, scenarios

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
        protocol = experiment.protocol_of(run.policy, SIM["protocol"])
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


CLAIMS_MAP_PARAMS = as_yaml({
    "claims": CLAIMS,
    "scenario_specs": {name: SIM["scenario_specs"][CLAIMS["groups"][name]["scenario"]] for name in CLAIMS["map_groups"]},
    "settings": {key: SIM[key] for key in scenarios.SETTINGS},
    "tables": {d: {"solo": f"{stage.dataset_folder(d)}/solo.parquet", "pairs": f"{stage.dataset_folder(d)}/pairs.parquet"}
               for d in sorted({scenarios.dataset_of(r.spec) for r in claims_map_runs()})},
    "prediction_paths": claims_map_predictions(),
})


rule claims_map:
    input:
        unpack(claims_map_inputs),
        notebook=NOTEBOOKS / "06_claims_map.ipynb",
        code=code_of(NOTEBOOKS / "06_claims_map.ipynb"),
        memory="data/processed/memory.parquet",
    output:
        summary="results/claims/map_summary.parquet",
    params:
        values=CLAIMS_MAP_PARAMS,
        work_dir="results/claims/map_runs",  # finished runs, kept while the rule runs (resume); removed when it succeeds
    resources:
        mem_mb=3000,
        runtime=60,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/06_claims_map.ipynb",
    conda:
        ENVS / "sim.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p memory_path {input.memory:q} -p trace_path data/processed/trace.parquet "
        "-p work_dir {params.work_dir:q} -p map_out {output.summary:q} -y {params.values:q}"


rule claims:
    input:
        notebook=NOTEBOOKS / "06_claims.ipynb",
        code=code_of(NOTEBOOKS / "06_claims.ipynb"),
        summary="results/sim/summary.parquet",
        util_scores="data/processed/utilization_scores.parquet",
        pair_scores="data/processed/predictor_scores.parquet",
        delay="results/sim/scheduling_delay.parquet",
        claims_map=rules.claims_map.output.summary,
    output:
        claims=report("results/claims.csv", caption="../report/claims.rst", category="1 Claims"),
        brief=report("results/claims_brief.csv", caption="../report/claims.rst", category="1 Claims"),
        horus_labels=report("results/horus_labels.csv", caption="../report/horus_labels.rst", category="1 Claims"),
        claims_map=report("results/claims_map.csv", caption="../report/claims_map.rst", category="1 Claims"),
        map_figure=report("figures/claims/claims_map.png", caption="../report/claims_map.rst", category="1 Claims"),
    params:
        settings=as_yaml({"headlines": {name: float(spec["headline"])
                                        for name, spec in config["simulation"]["scenario_specs"].items()},
                          "pair_predictor_3090": config["simulation"]["scenario_specs"].get("isacpp-testbed-3090", {})
                          .get("predictor_norm", config["simulation"]["predictor_norm"]),
                          "scenarios": {name: CLAIMS["groups"][name]["scenario"] for name in CLAIMS["groups"]},
                          "claims_section": CLAIMS, "default_protocol": SIM["protocol"]}),
    resources:
        mem_mb=2000,
        runtime=15,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/06_claims.ipynb",
    conda:
        ENVS / "predict.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p summary_path {input.summary:q} -p util_scores_path {input.util_scores:q} "
        "-p pair_scores_path {input.pair_scores:q} -p delay_path {input.delay:q} -p map_path {input.claims_map:q} "
        "-p claims_path {output.claims:q} -p brief_path {output.brief:q} -p horus_labels_path {output.horus_labels:q} "
        "-p claims_map_path {output.claims_map:q} -p map_figure_path {output.map_figure:q} "
        "-y {params.settings:q}"


ALL_OUTPUTS.extend(rules.claims.output)
