# New job families in the simulator. The scenario simulation.scenario_specs[probing.scenario] with
# probing.new_share of its jobs from families held out of training; coloc-probe runs k probes of each such job
# (k in probing.probes) before placing it. One job runs every seed and k in-process (notebook 04_probe); a
# figure rule plots mean JCT against k. It reads the predictors stage's Gavel files of lofo-probe-<k> (lofo for
# k = 0) and of probing.seen_protocol: each must be among predictors.protocols (prediction_file says so).

from coloc.studies.probing import probe_protocol

PROBING = config.get("probing")

if PROBING:
    PROBE_SPEC = config["simulation"]["scenario_specs"][PROBING["scenario"]]
    PROBE_FILES = [prediction_file("predictions", "gavel", probe_protocol(k)) for k in PROBING["probes"]]
    PROBE_SEEN = prediction_file("predictions", "gavel", PROBING["seen_protocol"])
    SIM_SHARED = {key: config["simulation"][key] for key in ("reference_device", "max_jobs_per_gpu", "restart_cost_s",
                                                                "world")}

    rule probe_simulation:
        input:
            notebook=NOTEBOOKS / "04_probe.ipynb",
            code=code_of(NOTEBOOKS / "04_probe.ipynb"),
            solo="data/processed/solo.parquet",
            pairs="data/processed/pairs.parquet",
            probes=PROBE_FILES,
            seen=PROBE_SEEN,
        output:
            summary="results/sim/probe/summary.parquet",
            jobs="results/sim/probe/jobs.parquet",
        params:
            settings=as_yaml({"scenario": PROBING["scenario"], "scenario_spec": PROBE_SPEC, "probe_paths": PROBE_FILES,
                              **{key: PROBING[key] for key in ("new_families", "new_share", "probes", "probe_s",
                                                                "predictor", "seen_protocol")}, **SIM_SHARED}),
        resources:
            mem_mb=4000,
            runtime=60,
            cpus_per_task=1,
        log:
            notebook="results/notebooks/04_probe.ipynb",
        conda:
            ENVS / "predict.yaml"
        shell:
            "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
            "-p solo_path {input.solo:q} -p pairs_path {input.pairs:q} -p seen_path {input.seen:q} "
            "-p summary_out {output.summary:q} -p jobs_out {output.jobs:q} -y {params.settings:q}"

    rule probe_figures:
        input:
            notebook=NOTEBOOKS / "04_probe_figures.ipynb",
            code=code_of(NOTEBOOKS / "04_probe_figures.ipynb"),
            summary=rules.probe_simulation.output.summary,
        output:
            figure=report("figures/sim/probe_jct_against_k.png", caption="../report/sim_probe.rst",
                          category="6 Simulation", subcategory=PROBING["scenario"]),
            table=report("results/sim/probe/jct_against_k.csv", caption="../report/sim_probe.rst",
                         category="6 Simulation", subcategory=PROBING["scenario"]),
        params:
            settings=as_yaml({"headline": PROBE_SPEC["headline"]}),
        resources:
            mem_mb=2000,
            runtime=15,
            cpus_per_task=1,
        log:
            notebook="results/notebooks/04_probe_figures.ipynb",
        conda:
            ENVS / "predict.yaml"
        shell:
            "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . "
            "-p summary_path {input.summary:q} -p figure_out {output.figure:q} -p table_out {output.table:q} "
            "-y {params.settings:q}"

    ALL_OUTPUTS.extend(rules.probe_figures.output)
