# Co-located resource use (ISACPP's resource network), where the profiler measured resources per job: the published
# E-GGAT with one output per resource, out of fold on every dataset (Gavel's has no resource columns: skipped, the
# reason in the table). Config predictors.resources; the options are checked before anything runs.

from coloc.predict.egat import EGGAT
from coloc.predict.registry import check_params

RESOURCES = config["predictors"]["resources"]
check_params(EGGAT, RESOURCES["options"], "predictors.resources.options")


rule resources:
    input:
        notebook=NOTEBOOKS / "03_resources.ipynb",
        code=code_of(NOTEBOOKS / "03_resources.ipynb"),
        workloads="data/processed/workloads.parquet",
        tables=[f"{datasets.get(d).folder}/{t}.parquet" for d in datasets.names() for t in ("solo", "pairs")],
    output:
        predictions="data/processed/resource_predictions.parquet",
        scores="data/processed/resource_scores.parquet",
        summary=report("results/predictors/resources.csv", caption="../report/predictors_resources.rst",
                       category="5 Predictors", subcategory="Resources"),
    params:
        settings=as_yaml({
            "dataset_paths": {d: {t: f"{datasets.get(d).folder}/{t}.parquet" for t in ("solo", "pairs")}
                              for d in datasets.names()},
            "protocols": RESOURCES["protocols"], "seeds": RESOURCES["seeds"], "folds": PRED["folds"],
            "options": RESOURCES["options"],
        }),
    resources:
        mem_mb=4000,
        runtime=60,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/03_resources.ipynb",
    conda:
        ENVS / "predict.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p workloads_path {input.workloads:q} -p predictions_path {output.predictions:q} "
        "-p scores_path {output.scores:q} -p summary_path {output.summary:q} -y {params.settings:q}"


ALL_OUTPUTS.extend(rules.resources.output)
