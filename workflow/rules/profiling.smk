# Stage 1: profile solo and co-located training of a few job types on this machine's device.
# The measurement log (config profiling.log) is the resume state, not an output: Snakemake never deletes it,
# so a rerun measures only what the log lacks. Delete the log to measure afresh.
# The rule takes every core: other jobs running meanwhile would distort the measurements.


rule profiling:
    input:
        notebook=NOTEBOOKS / "01_profiling.ipynb",
    output:
        solo="data/processed/profiled/solo.parquet",
        pairs="data/processed/profiled/pairs.parquet",
        jobs="data/processed/profiled/measurements.parquet",
        heatmap="figures/profiling/slowdown_heatmap.png",
        spread="figures/profiling/repeat_spread.png",
    params:
        measurement_log=config["profiling"]["log"],
        settings=as_yaml({key: value for key, value in config["profiling"].items() if key != "log"}),
    threads: workflow.cores
    log:
        notebook="results/notebooks/01_profiling.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook} {log.notebook} -k python3 --cwd . "
        "-p log_path {params.measurement_log} -p solo_path {output.solo} -p pairs_path {output.pairs} "
        "-p jobs_path {output.jobs} -p heatmap_path {output.heatmap} -p spread_path {output.spread} "
        "-y {params.settings:q}"


ALL_OUTPUTS.extend(rules.profiling.output)
