# Stage 0: reference data, downloaded (or copied from a mirror) and checksummed, then parsed into tables.


wildcard_constraints:
    file="|".join(re.escape(f) for f in SOURCE_BY_FILE),


rule download:
    output:
        "data/raw/{file}",
    params:
        url=source_url,
        sha256=source_sha256,
        mirror=mirror_option(),
    log:
        "logs/download/{file}.log",
    conda:
        ENV
    shell:
        "coloc fetch --file {wildcards.file} --url {params.url} --sha256 {params.sha256} "
        "--raw-dir data/raw {params.mirror} 2>&1 | tee {log}"


rule data_tables:
    input:
        notebook=NOTEBOOKS / "00_data.ipynb",
        gavel=raw_path("gavel_throughputs"),
        philly=raw_path("philly_trace"),
    output:
        solo="data/processed/solo.parquet",
        pairs="data/processed/pairs.parquet",
        trace="data/processed/trace.parquet",
        heatmap="figures/data/interference_heatmap.png",
        trace_figure="figures/data/trace.png",
    params:
        trace=as_yaml({f"trace_{key}": value for key, value in config["trace"].items()}),
    log:
        notebook="results/notebooks/00_data.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook} {log.notebook} -k python3 --cwd . "
        "-p gavel_path {input.gavel} -p philly_path {input.philly} "
        "-p solo_path {output.solo} -p pairs_path {output.pairs} -p trace_path {output.trace} "
        "-p heatmap_path {output.heatmap} -p trace_figure_path {output.trace_figure} "
        "-y {params.trace:q}"


ALL_OUTPUTS.extend(rules.data_tables.output)
