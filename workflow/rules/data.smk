# Stage 0: reference data, downloaded (or copied from a mirror) and checksummed, then parsed into tables.
# Every value from the config reaches the shell quoted ({...:q}): no config string is interpreted by a shell.

from coloc import datasets


wildcard_constraints:
    file="|".join(re.escape(f) for f in SOURCE_BY_FILE),


rule download:
    input:
        code=code_of("coloc.cli"),
    output:
        "data/raw/{file}",
    params:
        url=source_url,
        sha256=source_sha256,
        mirror=config.get("mirror") or "",  # COLOC_DATA_MIRROR still wins in `coloc fetch`
    resources:
        mem_mb=1000,
        runtime=10,
        cpus_per_task=1,
    log:
        "logs/download/{file}.log",
    conda:
        ENVS / "fetch.yaml"
    shell:
        "python -m coloc.cli fetch --file {wildcards.file:q} --url {params.url:q} --sha256 {params.sha256:q} "
        "--raw-dir data/raw --mirror={params.mirror:q} 2>&1 | tee {log:q}"


rule data_tables:
    input:
        notebook=NOTEBOOKS / "00_data.ipynb",
        code=code_of(NOTEBOOKS / "00_data.ipynb"),
        gavel=raw_path("gavel_throughputs"),
        philly=raw_path("philly_trace"),
    output:
        solo="data/processed/solo.parquet",
        pairs="data/processed/pairs.parquet",
        trace="data/processed/trace.parquet",
        heatmap=report("figures/data/interference_heatmap.png", caption="../report/data_interference.rst",
                       category="2 Data", subcategory="Gavel"),
        trace_figure=report("figures/data/trace.png", caption="../report/data_trace.rst", category="2 Data",
                            subcategory="Philly trace"),
    params:
        trace=as_yaml({f"trace_{key}": value for key, value in config["trace"].items()}),
    resources:
        mem_mb=1000,
        runtime=15,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/00_data.ipynb",
    conda:
        ENVS / "tables.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p gavel_path {input.gavel:q} -p philly_path {input.philly:q} "
        "-p solo_path {output.solo:q} -p pairs_path {output.pairs:q} -p trace_path {output.trace:q} "
        "-p heatmap_path {output.heatmap:q} -p trace_figure_path {output.trace_figure:q} "
        "-y {params.trace:q}"


ALL_OUTPUTS.extend(rules.data_tables.output)


# Lucid's RTX 3090 measurements (coloc.datasets.lucid): the lucid dataset, and with Gavel's tables the gavel-lucid one of
# the cross-dataset protocol (coloc.datasets.gavel_lucid: the families both measured in pairs).
rule lucid_tables:
    input:
        notebook=NOTEBOOKS / "00_lucid.ipynb",
        code=code_of(NOTEBOOKS / "00_lucid.ipynb"),
        pairs=raw_path("lucid_pairs"),
        solo=raw_path("lucid_solo"),
        gavel_solo=rules.data_tables.output.solo,
        gavel_pairs=rules.data_tables.output.pairs,
    output:
        solo="data/processed/lucid/solo.parquet",
        pairs="data/processed/lucid/pairs.parquet",
        cross_solo="data/processed/gavel-lucid/solo.parquet",
        cross_pairs="data/processed/gavel-lucid/pairs.parquet",
    resources:
        mem_mb=1000,
        runtime=10,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/00_lucid.ipynb",
    conda:
        ENVS / "predict.yaml"  # the parser checks job types against coloc.workloads (torch)
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p pairs_path {input.pairs:q} -p solo_path {input.solo:q} "
        "-p gavel_solo_path {input.gavel_solo:q} -p gavel_pairs_path {input.gavel_pairs:q} "
        "-p solo_out {output.solo:q} -p pairs_out {output.pairs:q} "
        "-p cross_solo_out {output.cross_solo:q} -p cross_pairs_out {output.cross_pairs:q}"


ALL_OUTPUTS.extend(rules.lucid_tables.output)


# Any other registered dataset with a parser and raw files (coloc.datasets: a module, and its files' entries under
# the config's sources): its tables in its folder, through its parser (notebook 00_dataset). The rules above make
# Gavel's and Lucid's (with the trace and the cross tables), so by default no dataset runs here.
MADE_TABLES = {str(rules.data_tables.output.solo), str(rules.lucid_tables.output.solo)}
PARSED_DATASETS = {datasets.get(d).folder: d for d in datasets.names()
                   if datasets.get(d).load and datasets.get(d).sources
                   and f"{datasets.get(d).folder}/solo.parquet" not in MADE_TABLES}


if PARSED_DATASETS:

    rule dataset_tables:
        input:
            notebook=NOTEBOOKS / "00_dataset.ipynb",
            code=code_of(NOTEBOOKS / "00_dataset.ipynb"),
            raw=lambda wildcards: [raw_path(s) for s in datasets.get(PARSED_DATASETS[wildcards.folder]).sources],
        output:
            solo="{folder}/solo.parquet",
            pairs="{folder}/pairs.parquet",
        wildcard_constraints:
            folder="|".join(re.escape(f) for f in PARSED_DATASETS),
        params:
            settings=lambda wildcards, input: as_yaml({"dataset": PARSED_DATASETS[wildcards.folder],
                                                       "raw_paths": list(input.raw)}),
        resources:
            mem_mb=1000,
            runtime=10,
            cpus_per_task=1,
        log:
            notebook="results/notebooks/00_dataset/{folder}.ipynb",
        conda:
            ENVS / "predict.yaml"  # a parser may check job types against coloc.workloads (torch)
        shell:
            "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . -y {params.settings:q} "
            "-p solo_out {output.solo:q} -p pairs_out {output.pairs:q}"
