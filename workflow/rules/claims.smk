# Stage 6: the claims table. Each headline claim of Horus and ISACPP next to coloc's measurement of the same
# comparison (coloc.claims; verdict rules in its docstring), from the simulation summary, the predictors stage's
# scores and the scheduling delay, in coloc's setting and in the paper's; the claims map (coloc.claims_map) runs each
# simulated claim's group in the paper's setting, coloc's, and one factor moved at a time. Every value from the config
# reaches the shell quoted ({...:q}).
include: "claims_common.smk"


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
        **CLAIMS_PAIRS,
    output:
        claims=report("results/claims.csv", caption="../report/claims.rst", category="1 Claims"),
        brief=report("results/claims_brief.csv", caption="../report/claims.rst", category="1 Claims"),
        # the table as a page of its own: the report shows an HTML result in a frame that opens at its top
        page=report("results/claims.html", caption="../report/claims.rst", category="1 Claims"),
        horus_labels=report("results/horus_labels.csv", caption="../report/horus_labels.rst", category="1 Claims"),
        claims_map=report("results/claims_map.csv", caption="../report/claims_map.rst", category="1 Claims"),
        map_figure=report("figures/claims/claims_map.png", caption="../report/claims_map.rst", category="1 Claims"),
    params:
        settings=as_yaml({"headlines": {name: float(spec["headline"])
                                        for name, spec in config["simulation"]["scenario_specs"].items()},
                          "pair_predictor_3090": CLAIMS_PREDICTOR_3090,
                          "scenarios": {name: CLAIMS["groups"][name]["scenario"] for name in CLAIMS["groups"]},
                          "clusters": {group["scenario"]: SIM["scenario_specs"][group["scenario"]]["cluster"]
                                       for group in CLAIMS["groups"].values()},
                          "pairs_paths": CLAIMS_PAIRS,
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
        "-p claims_path {output.claims:q} -p brief_path {output.brief:q} -p page_path {output.page:q} "
        "-p horus_labels_path {output.horus_labels:q} "
        "-p claims_map_path {output.claims_map:q} -p map_figure_path {output.map_figure:q} "
        "-y {params.settings:q}"


ALL_OUTPUTS.extend(rules.claims.output)
