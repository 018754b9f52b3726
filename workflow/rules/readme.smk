import shlex

# The README's result tables, written from this run's outputs (coloc.readme): results/readme.md always, and the
# marked sections of README.md and docs/results.md themselves where config readme.fill is true (the default run;
# never the CI run). Each scenario's headline point comes from its spec.


rule readme:
    input:
        code=code_of("coloc.readme"),
        claims="results/claims_brief.csv",
        claims_map="results/claims_map.csv",
        predictors="results/predictors/summary.csv",
        scenarios="results/sim/summary.parquet",
    output:
        sections="results/readme.md",
    params:
        fill="--fill" if config["readme"]["fill"] else "",
        documents=" ".join(shlex.quote(str(REPO / d)) for d in ("README.md", "docs/results.md")),  # the workflow's own, wherever the run's working directory is
        headlines=" ".join(shlex.quote(f"{s}={SIM['scenario_specs'][s]['headline']}") for s in SIM["scenarios"]),
    resources:
        mem_mb=1000,
        runtime=5,
        cpus_per_task=1,
    log:
        "logs/readme.log",
    conda:
        ENVS / "tables.yaml"
    shell:
        "python -m coloc.cli readme --results results --readme {params.documents} --headlines {params.headlines} "
        "--sections-out {output.sections:q} {params.fill} 2>&1 | tee {log:q}"


ALL_OUTPUTS.extend(rules.readme.output)
