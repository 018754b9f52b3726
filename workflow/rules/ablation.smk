# ISACPP's ablation of egat (without GPU / hyperparameter / model features, 1 to 5 blocks), MAPE per protocol on
# Gavel's data. Costs about ten times egat's share of the predictors stage, so it runs only when the config sets
# predictors.ablation.run (config/paper.yaml does); the rule exists either way (snakemake can ask for its table).

from coloc.predict import ablation

ABLATION = config["predictors"]["ablation"]
for _name, _options in ablation.variants(PRED["models"].get("egat", {}), ABLATION["layers"]).items():
    check_options(_name, _options, "pair")


rule ablation:
    input:
        notebook=NOTEBOOKS / "03_ablation.ipynb",
        code=code_of(NOTEBOOKS / "03_ablation.ipynb"),
        workloads="data/processed/workloads.parquet",
        solo="data/processed/solo.parquet",
        pairs="data/processed/pairs.parquet",
    output:
        scores="data/processed/ablation_scores.parquet",
        table=report("results/predictors/ablation.csv", caption="../report/predictors_ablation.rst",
                     category="5 Predictors", subcategory="Ablation"),
    params:
        settings=as_yaml({
            "egat_options": PRED["models"].get("egat", {}), "layers": ABLATION["layers"],
            "protocols": PRED["protocols"], "seeds": ABLATION["seeds"], "folds": PRED["folds"],
            "families": PRED["families"],
        }),
    threads: PRED["workers"]
    resources:
        mem_mb=4000,
        runtime=180,
    log:
        notebook="results/notebooks/03_ablation.ipynb",
    conda:
        ENVS / "predict.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p workloads_path {input.workloads:q} -p solo_path {input.solo:q} -p pairs_path {input.pairs:q} "
        "-p scores_path {output.scores:q} -p table_path {output.table:q} -p workers {threads:q} "
        "-y {params.settings:q}"


if ABLATION["run"]:
    ALL_OUTPUTS.extend(rules.ablation.output)
