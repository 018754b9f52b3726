# The real testbed (docs/testbed.md): a trace of real training jobs on this machine's devices under each policy,
# held against the simulator's replay of it on the tables profiled on the same devices. Not part of the default run
# (its 20-minute budget on 2 cores comes first): `snakemake --cores all testbed` runs config/testbed.yaml (about 10
# minutes on 2 quiet cores). The run's folder results/testbed/run/ (profiling log, each policy's journal) is its
# resume state, not an output: a rerun redoes only what it lacks. It takes every core: other jobs running meanwhile
# would slow the real jobs and not their replay.


rule testbed:
    input:
        notebook=NOTEBOOKS / "07_testbed.ipynb",
        code=code_of(NOTEBOOKS / "07_testbed.ipynb"),
        config="config/testbed.yaml",
    output:
        comparison=report("results/testbed/comparison.csv", caption="../report/testbed.rst", category="8 Testbed"),
        per_job="results/testbed/per_job.csv",
        summary="results/testbed/summary.json",
        scatter=report("figures/testbed/jct_scatter.png", caption="../report/testbed.rst", category="8 Testbed"),
    params:
        run_dir="results/testbed/run",
    threads: workflow.resource_settings.cores or 1  # --cores; unset under a cluster executor (slurm_extra below)
    resources:
        mem_mb=8000,
        runtime=40,
        slurm_extra="--exclusive",
    log:
        notebook="results/notebooks/07_testbed.ipynb",
    conda:
        ENVS / "torch.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p config_path {input.config:q} -p run_dir {params.run_dir:q} -p comparison_path {output.comparison:q} "
        "-p per_job_path {output.per_job:q} -p summary_path {output.summary:q} -p scatter_path {output.scatter:q}"
