# Stage 3: predictors (Horus, ISACPP's E-GGAT, baselines) fitted and cross-validated on Gavel's data
# and on the locally profiled tables; out-of-fold predictions for the simulator, the results table, figures.


rule predictors:
    input:
        notebook=NOTEBOOKS / "03_predictors.ipynb",
        workloads="data/processed/workloads.parquet",
        gavel_solo="data/processed/solo.parquet",
        gavel_pairs="data/processed/pairs.parquet",
        profiled_solo="data/processed/profiled/solo.parquet",
        profiled_pairs="data/processed/profiled/pairs.parquet",
    output:
        predictions=expand("data/processed/predictions_{protocol}.parquet", protocol=config["predictors"]["protocols"]),
        utilization=expand("data/processed/utilization_{protocol}.parquet", protocol=config["predictors"]["protocols"]),
        profiled_predictions=expand(
            "data/processed/profiled/predictions_{protocol}.parquet", protocol=config["predictors"]["protocols"]
        ),
        profiled_utilization=expand(
            "data/processed/profiled/utilization_{protocol}.parquet", protocol=config["predictors"]["protocols"]
        ),
        scores="data/processed/predictor_scores.parquet",
        util_scores="data/processed/horus_util_scores.parquet",
        summary="results/predictors/summary.csv",
        figures=expand(
            "figures/predictors/gavel_{protocol}_{kind}.png",
            protocol=config["predictors"]["protocols"],
            kind=["scatter", "error_cdf", "family_mape"],
        ),
    params:
        settings=as_yaml({key: config["predictors"][key] for key in ("protocols", "seeds", "folds", "families", "models", "targets")}),
    threads: config["predictors"]["workers"]
    log:
        notebook="results/notebooks/03_predictors.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook} {log.notebook} -k python3 --cwd . "
        "-p workloads_path {input.workloads} -p gavel_solo_path {input.gavel_solo} "
        "-p gavel_pairs_path {input.gavel_pairs} -p profiled_solo_path {input.profiled_solo} "
        "-p profiled_pairs_path {input.profiled_pairs} -p out_dir data/processed "
        "-p profiled_out_dir data/processed/profiled -p scores_path {output.scores} "
        "-p util_scores_path {output.util_scores} -p summary_path {output.summary} "
        "-p figures_dir figures/predictors -p workers {threads} -y {params.settings:q}"


ALL_OUTPUTS.extend(rules.predictors.output)
