# Scheduling delay (ISACPP Fig. 16): one notebook run times one scheduling round of each policy against the number
# of queued jobs (coloc.studies.delay) and draws the figure; it reads the Gavel prediction files its policies declare.
from coloc.policies import prediction_needs
from coloc.studies import delay
from coloc.sim.predictions import FILES

DELAY = config["scheduling_delay"]
delay.check_policies(DELAY["policies"])  # a name that is not a plain registered policy stops here, before any job
DELAY_READS = sorted({FILES[need] for name in DELAY["policies"] for need in prediction_needs(name)})

# The out-of-fold Gavel files (predictions, utilization) the configured policies read, by kind.
DELAY_INPUTS = {kind: prediction_file(kind, "gavel", config["simulation"]["protocol"]) for kind in DELAY_READS}


DELAY_SETTINGS = as_yaml({
    **{key: DELAY[key] for key in ("policies", "queued_jobs", "clusters", "gpus_per_node", "busy_share", "seeds",
                                   "repeats", "median_duration_s", "duration_sigma", "gpu_mix", "families")},
    **{key: config["simulation"][key] for key in ("reference_device", "max_jobs_per_gpu", "protocol",
                                                  "predictor_norm", "predictor_util")},
    **{f"{kind}_path": DELAY_INPUTS.get(kind, "") for kind in ("predictions", "utilization")},
})


rule scheduling_delay:
    input:
        **DELAY_INPUTS,
        notebook=NOTEBOOKS / "05_scheduling_delay.ipynb",
        code=code_of(NOTEBOOKS / "05_scheduling_delay.ipynb"),
        solo="data/processed/solo.parquet",
        pairs="data/processed/pairs.parquet",
        memory="data/processed/memory.parquet",
    output:
        table="results/sim/scheduling_delay.parquet",
        figure=report("figures/sim/scheduling_delay.png", caption="../report/scheduling_delay.rst",
                      category="7 Scheduling delay"),
    params:
        settings=DELAY_SETTINGS,
    resources:
        mem_mb=2000,
        runtime=30,
        cpus_per_task=1,
    log:
        notebook="results/notebooks/05_scheduling_delay.ipynb",
    conda:
        ENVS / "tables.yaml"
    shell:
        "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
        "-p solo_path {input.solo:q} -p pairs_path {input.pairs:q} -p memory_path {input.memory:q} "
        "-p table_out {output.table:q} -p figure_out {output.figure:q} -y {params.settings:q}"


ALL_OUTPUTS.extend(rules.scheduling_delay.output)
