# Stage 4: trace-driven cluster simulation of named scenarios (config simulation.scenario_specs). One notebook
# run per (scenario, policy) runs every seed x sweep point in-process; a gather rule makes one table of all
# runs; a figure rule plots it (a figure change reruns no simulation).


include: "simulation_common.smk"


rule simulate:
    input:
        unpack(sim_prediction_inputs),
        unpack(sim_trace_input),
        unpack(sim_tables),
        notebook=NOTEBOOKS / "04_simulation.ipynb",
        code=code_of(NOTEBOOKS / "04_simulation.ipynb"),
        memory="data/processed/memory.parquet",
    output:
        summary=f"{SIM_DIR}/summary.parquet",
        jobs=f"{SIM_DIR}/jobs.parquet",
        utilization=f"{SIM_DIR}/utilization.parquet",
    params:
        spec=sim_scenario_spec,
        predictions=sim_prediction_paths,
        trace=sim_trace_path,
        settings=SIM_SETTINGS,
        work_dir=f"{SIM_DIR}/runs",  # finished runs, kept while the rule runs (resume); removed when it succeeds
    resources:
        mem_mb=sim_memory_mb,
        runtime=60,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/04_simulation/{scenario}/{policy}.ipynb",
    conda:
        ENVS / "sim.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p scenario {wildcards.scenario:q} -p policy {wildcards.policy:q} "
        "-p solo_path {input.solo:q} -p pairs_path {input.pairs:q} -p memory_path {input.memory:q} "
        "-y {params.trace:q} "
        "-p work_dir {params.work_dir:q} "
        "-p summary_out {output.summary:q} -p jobs_out {output.jobs:q} -p utilization_out {output.utilization:q} "
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
        csv=report("results/sim/summary.csv", caption="../report/sim_summary.rst", category="6 Simulation",
                   subcategory="All runs"),
        jobs="results/sim/jobs.parquet",
        utilization="results/sim/utilization.parquet",
    params:
        paths=as_yaml({"summary_paths": sim_runs("summary"), "jobs_paths": sim_runs("jobs"),
                       "utilization_paths": sim_runs("utilization")}),
    resources:
        mem_mb=6000,
        runtime=30,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/04_simulation_summary.ipynb",
    conda:
        ENVS / "sim.yaml"
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
        [report(f"figures/sim/{scenario}/{figure}.png", caption=f"../report/sim_{figure}.rst", category="6 Simulation",
                subcategory=scenario) for scenario in SIM["scenarios"] for figure in SIM_FIGURES],
        regret=report("results/sim/regret.csv", caption="../report/sim_regret.rst", category="6 Simulation",
                      subcategory="Regret"),
        regret_figure=report("figures/sim/regret.png", caption="../report/sim_regret.rst", category="6 Simulation",
                             subcategory="Regret"),
    params:
        settings=as_yaml({"scenarios": SIM["scenarios"],
                          "headlines": {s: SIM["scenario_specs"][s]["headline"] for s in SIM["scenarios"]}}),
    resources:
        mem_mb=6000,
        runtime=30,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/04_simulation_figures.ipynb",
    conda:
        ENVS / "tables.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p summary_path {input.summary:q} -p jobs_path {input.jobs:q} -p utilization_path {input.utilization:q} "
        "-p figures_dir figures/sim -p regret_out {output.regret:q} -p regret_figure_out {output.regret_figure:q} "
        "-y {params.settings:q}"


ALL_OUTPUTS.extend([rules.simulation_summary.output.summary, rules.simulation_summary.output.csv])
ALL_OUTPUTS.extend(rules.simulation_figures.output)
