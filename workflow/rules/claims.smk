# Stage 6: the claims table. Each headline claim of Horus and ISACPP next to coloc's measurement of the same
# comparison (coloc.claims; verdict rules in its docstring), from the simulation summary, the predictors stage's
# scores and the scheduling delay. Every value from the config reaches the shell quoted ({...:q}).


rule claims:
    input:
        notebook=NOTEBOOKS / "06_claims.ipynb",
        code=code_of(NOTEBOOKS / "06_claims.ipynb"),
        summary="results/sim/summary.parquet",
        util_scores="data/processed/utilization_scores.parquet",
        pair_scores="data/processed/predictor_scores.parquet",
        delay="results/sim/scheduling_delay.parquet",
    output:
        claims=report("results/claims.csv", caption="../report/claims.rst", category="1 Claims"),
        brief=report("results/claims_brief.csv", caption="../report/claims.rst", category="1 Claims"),
        # the table as a page of its own: the report shows an HTML result in a frame that opens at its top
        page=report("results/claims.html", caption="../report/claims.rst", category="1 Claims"),
        horus_labels=report("results/horus_labels.csv", caption="../report/horus_labels.rst", category="1 Claims"),
    params:
        settings=as_yaml({"headlines": {name: float(spec["headline"])
                                        for name, spec in config["simulation"]["scenario_specs"].items()
                                        if name in config["simulation"]["scenarios"]},
                          "pair_predictor_3090": config["simulation"]["scenario_specs"].get("isacpp-testbed-3090", {})
                          .get("predictor_norm", config["simulation"]["predictor_norm"]),
                          "isacpp_profiled_3090": "isacpp~egat-profiled" in config["simulation"]["scenario_specs"]
                          .get("isacpp-testbed-3090", {}).get("policies", [])}),
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
        "-p pair_scores_path {input.pair_scores:q} -p delay_path {input.delay:q} "
        "-p claims_path {output.claims:q} -p brief_path {output.brief:q} -p page_path {output.page:q} "
        "-p horus_labels_path {output.horus_labels:q} "
        "-y {params.settings:q}"


ALL_OUTPUTS.extend(rules.claims.output)
