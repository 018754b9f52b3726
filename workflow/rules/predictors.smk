# Stage 3: predictors (Horus, ISACPP's E-GGAT, baselines) cross-validated on Gavel's data and on the locally
# profiled tables. One job per (dataset, protocol) writes that run's out-of-fold predictions, utilization
# predictions and scores; a gather rule makes the stage's tables and the target check; a figures rule plots.
# Gavel's runs read no profiling output. Every value from the config reaches the shell quoted ({...:q}).


include: "predictors_common.smk"


rule predictors:
    input:
        unpack(predictor_tables),
        notebook=NOTEBOOKS / "03_predictors.ipynb",
        code=code_of(NOTEBOOKS / "03_predictors.ipynb"),
        workloads="data/processed/workloads.parquet",
    output:
        predictions=stage.RUN_FILES["predictions"],
        utilization=stage.RUN_FILES["utilization"],
        scores=stage.RUN_FILES["scores"],
        util_scores=stage.RUN_FILES["util_scores"],
    wildcard_constraints:
        dataset="|".join(PRED_DATASETS),
        protocol="|".join(PRED["protocols"]),
    params:
        settings=predictor_settings,
    threads: PRED["workers"]
    resources:
        mem_mb=4000,
        runtime=180,
    log:
        notebook="results/notebooks/03_predictors/{dataset}/{protocol}.ipynb",
    conda:
        ENVS / "predict.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p dataset {wildcards.dataset:q} -p protocol {wildcards.protocol:q} "
        "-p workloads_path {input.workloads:q} -p solo_path {input.solo:q} -p pairs_path {input.pairs:q} "
        "-p predictions_path {output.predictions:q} -p utilization_path {output.utilization:q} "
        "-p scores_path {output.scores:q} -p util_scores_path {output.util_scores:q} "
        "-p workers {threads:q} -y {params.settings:q}"


rule predictors_summary:
    input:
        notebook=NOTEBOOKS / "03_predictors_summary.ipynb",
        code=code_of(NOTEBOOKS / "03_predictors_summary.ipynb"),
        scores=predictor_runs("scores"),
        util_scores=predictor_runs("util_scores"),
    output:
        scores="data/processed/predictor_scores.parquet",
        util_scores="data/processed/utilization_scores.parquet",
        summary=report("results/predictors/summary.csv", caption="../report/predictors_summary.rst",
                       category="5 Predictors", subcategory="Scores"),
        targets=report("results/predictors/targets.csv", caption="../report/predictors_targets.rst",
                       category="5 Predictors", subcategory="Scores"),
        probes=report("results/predictors/probes.csv", caption="../report/predictors_probes.rst",
                      category="5 Predictors", subcategory="Probes"),
    params:
        settings=as_yaml({"score_paths": predictor_runs("scores"), "util_score_paths": predictor_runs("util_scores"),
                          "targets": PRED["targets"]}),
    resources:
        mem_mb=1500,
        runtime=15,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/03_predictors_summary.ipynb",
    conda:
        ENVS / "predict.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p scores_path {output.scores:q} -p util_scores_path {output.util_scores:q} "
        "-p summary_path {output.summary:q} -p targets_path {output.targets:q} -p probes_path {output.probes:q} "
        "-y {params.settings:q}"


rule predictors_figures:
    input:
        notebook=NOTEBOOKS / "03_predictors_figures.ipynb",
        code=code_of(NOTEBOOKS / "03_predictors_figures.ipynb"),
        predictions=predictor_runs("predictions"),
        utilization=expand(stage.RUN_FILES["utilization"], dataset="gavel", protocol=PLAIN_PROTOCOLS),
        scores=rules.predictors_summary.output.scores,
    output:
        gavel=[report(GAVEL_FIGURE.format(protocol=protocol, kind=kind), caption="../report/predictors_gavel.rst",
                      category="5 Predictors", subcategory=f"Gavel, {protocol}")
               for protocol in PLAIN_PROTOCOLS for kind in GAVEL_FIGURE_KINDS],
        probes=[report(path, caption="../report/predictors_probes.rst", category="5 Predictors", subcategory="Probes")
                for path in PROBE_FIGURES.values()],
        profiled=report(directory("figures/predictors/profiled"), patterns=["{name}.png"],
                        caption="../report/predictors_profiled.rst", category="5 Predictors",
                        subcategory="Profiled"),
    params:
        settings=as_yaml({
            "prediction_paths": {d: {p: prediction_file("predictions", d, p)
                                     for p in stage.dataset_protocols(d, PRED["protocols"], DATASET_PROTOCOLS)}
                                 for d in ("gavel", "profiled")},
            "utilization_paths": {p: prediction_file("utilization", "gavel", p) for p in PLAIN_PROTOCOLS},
            "gavel_figure_paths": {p: {k: GAVEL_FIGURE.format(protocol=p, kind=k) for k in GAVEL_FIGURE_KINDS}
                                   for p in PLAIN_PROTOCOLS},
            "probe_figure_paths": PROBE_FIGURES,
            "families": PRED["families"],
            "order": list(PRED["models"]),
        }),
    resources:
        mem_mb=3000,
        runtime=30,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/03_predictors_figures.ipynb",
    conda:
        ENVS / "predict.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p scores_path {input.scores:q} -p profiled_figures_dir {output.profiled:q} -y {params.settings:q}"


ALL_OUTPUTS.extend(rules.predictors_summary.output)
ALL_OUTPUTS.extend(rules.predictors_figures.output)
