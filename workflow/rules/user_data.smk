# Users' own measurements: each source of config datasets.user.<name> (a pairs CSV, an optional solo
# CSV; format in docs/own-measurements.md) becomes the canonical tables of the predictors stage's
# dataset user-<name> (predictors_common.smk: USER_DATASETS), scored under every protocol next to Gavel's.

# Helpers (USER_SOURCES, user_csvs, user_solo_param) live in predictors_common.smk.

if USER_SOURCES:

    rule user_data:
        input:
            unpack(user_csvs),
            notebook=NOTEBOOKS / "00_user_data.ipynb",
            code=code_of(NOTEBOOKS / "00_user_data.ipynb"),
        output:
            solo=f"{datasets.user.FOLDER}/solo.parquet",
            pairs=f"{datasets.user.FOLDER}/pairs.parquet",
        wildcard_constraints:
            name="|".join(USER_SOURCES),
        params:
            solo=user_solo_param,
        resources:
            mem_mb=1000,
            runtime=10,
            cpus_per_task=1,
        log:
            notebook="results/notebooks/00_user_data/{name}.ipynb",
        conda:
            ENVS / "sim.yaml"
        shell:
            "papermill {input.notebook:q} {log.notebook:q} -k python3 --cwd . -p name {wildcards.name:q} "
            "-p pairs_csv {input.pairs:q} -y {params.solo:q} "
            "-p solo_out {output.solo:q} -p pairs_out {output.pairs:q}"
