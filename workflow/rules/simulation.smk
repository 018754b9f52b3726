# Stage 4: trace-driven cluster simulation. One notebook run per (trace, policy, seed, gpus, load);
# a gather rule makes one table of all runs; a figure rule plots it (a figure change reruns no simulation).


include: "simulation_common.smk"


rule simulate:
    input:
        unpack(sim_prediction_inputs),
        notebook=NOTEBOOKS / "04_simulation.ipynb",
        code=code_of(NOTEBOOKS / "04_simulation.ipynb"),
        solo="data/processed/solo.parquet",
        pairs="data/processed/pairs.parquet",
        trace="data/processed/trace.parquet",
    output:
        jobs=f"{SIM_RUN}/jobs.parquet",
        summary=f"{SIM_RUN}/summary.parquet",
        utilization=f"{SIM_RUN}/utilization.parquet",
    params:
        spec=sim_trace_spec,
        predictions=sim_prediction_paths,
        settings=SIM_SETTINGS,
    log:
        notebook="results/notebooks/04_simulation/{trace}/{policy}/seed{seed}_gpus{gpus}_load{load}.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p trace_name {wildcards.trace:q} -p policy {wildcards.policy:q} -p seed {wildcards.seed:q} "
        "-p gpus {wildcards.gpus:q} -p load {wildcards.load:q} "
        "-p solo_path {input.solo:q} -p pairs_path {input.pairs:q} -p trace_path {input.trace:q} "
        "-p jobs_out {output.jobs:q} -p summary_out {output.summary:q} -p utilization_out {output.utilization:q} "
        "-y {params.spec:q} -y {params.predictions:q} -y {params.settings:q}"


rule simulation_summary:
    input:
        notebook=NOTEBOOKS / "04_simulation_summary.ipynb",
        code=code_of(NOTEBOOKS / "04_simulation_summary.ipynb"),
        summaries=sim_runs("summary"),
        jobs=sim_runs("jobs"),
        utilization=sim_runs("utilization"),
    output:
        summary="results/sim/summary.parquet",
        csv="results/sim/summary.csv",
        jobs="results/sim/jobs.parquet",
        utilization="results/sim/utilization.parquet",
    params:
        paths=as_yaml({"summary_paths": sim_runs("summary"), "jobs_paths": sim_runs("jobs"),
                       "utilization_paths": sim_runs("utilization")}),
    log:
        notebook="results/notebooks/04_simulation_summary.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p summary_out {output.summary:q} -p summary_csv_out {output.csv:q} -p jobs_out {output.jobs:q} "
        "-p utilization_out {output.utilization:q} -y {params.paths:q}"


rule simulation_figures:
    input:
        notebook=NOTEBOOKS / "04_simulation_figures.ipynb",
        code=code_of(NOTEBOOKS / "04_simulation_figures.ipynb"),
        summary=rules.simulation_summary.output.summary,
        jobs=rules.simulation_summary.output.jobs,
        utilization=rules.simulation_summary.output.utilization,
    output:
        expand("figures/sim/{kind}_{trace}.png", kind=["policies", "jct_cdf", "utilization"], trace=SIM["traces"]),
        sweep="figures/sim/load_sweep.png",
    params:
        settings=as_yaml({"traces": SIM["traces"], "headline_gpus": SIM["headline"]["gpus"],
                          "headline_load": SIM["headline"]["load"]}),
    log:
        notebook="results/notebooks/04_simulation_figures.ipynb",
    conda:
        ENV
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p summary_path {input.summary:q} -p jobs_path {input.jobs:q} -p utilization_path {input.utilization:q} "
        "-p figures_dir figures/sim -y {params.settings:q}"


ALL_OUTPUTS.extend([rules.simulation_summary.output.summary, rules.simulation_summary.output.csv])
ALL_OUTPUTS.extend(rules.simulation_figures.output)
