# Stage 1: profile solo and co-located training of a few job types on this machine's device: solo, every pair,
# and the chosen sets of 3 (profiling.sets), each compared with the product of its pairs (results/profiling/).
# The measurement log (config profiling.log) is the resume state, not an output: Snakemake never deletes it,
# so a rerun measures only what the log lacks. Delete the log to measure afresh.
# The rule takes every core (on a cluster, a node of its own): other jobs running meanwhile would distort the
# measurements.


rule profiling:
    input:
        notebook=NOTEBOOKS / "01_profiling.ipynb",
        code=code_of(NOTEBOOKS / "01_profiling.ipynb"),
    output:
        solo="data/processed/profiled/solo.parquet",
        pairs="data/processed/profiled/pairs.parquet",
        sets="data/processed/profiled/sets.parquet",
        jobs="data/processed/profiled/measurements.parquet",
        heatmap=report("figures/profiling/slowdown_heatmap.png", caption="../report/profiling_heatmap.rst",
                       category="4 Profiling"),
        spread=report("figures/profiling/repeat_spread.png", caption="../report/profiling_spread.rst",
                      category="4 Profiling"),
        extrapolation=report("results/profiling/extrapolation.csv", caption="../report/profiling_extrapolation.rst",
                             category="4 Profiling"),
        extrapolation_figure=report("figures/profiling/extrapolation.png",
                                    caption="../report/profiling_extrapolation.rst", category="4 Profiling"),
    params:
        measurement_log=config["profiling"]["log"],
        settings=as_yaml({key: value for key, value in config["profiling"].items() if key != "log"}),
    threads: workflow.resource_settings.cores or 1  # --cores; unset under a cluster executor (slurm_extra below)
    resources:
        mem_mb=8000,
        runtime=90,
        slurm_extra="--exclusive",
    log:
        notebook="results/notebooks/01_profiling.ipynb",
    conda:
        ENVS / "torch.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p log_path {params.measurement_log:q} -p solo_path {output.solo:q} -p pairs_path {output.pairs:q} "
        "-p sets_path {output.sets:q} -p jobs_path {output.jobs:q} -p heatmap_path {output.heatmap:q} "
        "-p spread_path {output.spread:q} -p extrapolation_path {output.extrapolation:q} "
        "-p extrapolation_figure_path {output.extrapolation_figure:q} "
        "-y {params.settings:q}"


ALL_OUTPUTS.extend(rules.profiling.output)
