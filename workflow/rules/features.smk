# Stage 2: model-graph features of every job type in the zoo (FLOPs, parameters, activation and
# input bytes, operator counts), measured on the meta device; the workloads table and its figures.


rule features:
    input:
        notebook=NOTEBOOKS / "02_features.ipynb",
        code=code_of(NOTEBOOKS / "02_features.ipynb"),
    output:
        workloads="data/processed/workloads.parquet",
        flops_figure=report("figures/features/flops_vs_params.png", caption="../report/features.rst",
                            category="3 Features"),
        correlation_figure=report("figures/features/feature_correlations.png", caption="../report/features.rst",
                                  category="3 Features"),
        operator_figure=report("figures/features/operator_mix.png", caption="../report/features.rst",
                               category="3 Features"),
    params:
        names=as_yaml({"names": config["features"]["names"]}),
    threads: config["features"]["workers"]
    resources:
        mem_mb=2000,
        runtime=20,
    log:
        notebook="results/notebooks/02_features.ipynb",
    conda:
        ENVS / "torch.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p workloads_path {output.workloads:q} -p flops_figure_path {output.flops_figure:q} "
        "-p correlation_figure_path {output.correlation_figure:q} "
        "-p operator_figure_path {output.operator_figure:q} "
        "-p workers {threads:q} -y {params.names:q}"


ALL_OUTPUTS.extend(rules.features.output)


rule memory:
    input:
        notebook=NOTEBOOKS / "02_memory.ipynb",
        code=code_of(NOTEBOOKS / "02_memory.ipynb"),
        workloads=rules.features.output.workloads,
        pairs="data/processed/pairs.parquet",
    output:
        memory="data/processed/memory.parquet",
        agreement=report("results/memory/fit_agreement.csv", caption="../report/memory.rst", category="3 Features"),
    resources:
        mem_mb=2000,
        runtime=10,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/02_memory.ipynb",
    conda:
        ENVS / "torch.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p workloads_path {input.workloads:q} -p pairs_path {input.pairs:q} "
        "-p memory_path {output.memory:q} -p agreement_path {output.agreement:q}"


ALL_OUTPUTS.extend(rules.memory.output)
