# The README's result tables, written from this run's outputs (coloc.readme): results/readme.md always, and the
# marked sections of README.md itself where config readme.fill is true (the default run; never the CI run).


rule readme:
    input:
        code=code_of("coloc.readme"),
        claims="results/claims_brief.csv",
        predictors="results/predictors/summary.csv",
        scenarios="results/sim/summary.parquet",
    output:
        sections="results/readme.md",
    params:
        fill="--fill" if config["readme"]["fill"] else "",
        readme=str(REPO / "README.md"),  # the workflow's own README, wherever the run's working directory is
    resources:
        mem_mb=1000,
        runtime=5,
        cpus_per_task=1,
    log:
        "logs/readme.log",
    conda:
        ENVS / "tables.yaml"
    shell:
        "python -m coloc.cli readme --results results --readme {params.readme:q} --sections-out {output.sections:q} "
        "{params.fill} 2>&1 | tee {log:q}"


ALL_OUTPUTS.extend(rules.readme.output)
