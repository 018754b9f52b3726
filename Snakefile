# coloc: every figure and table from the raw public data.  Run: snakemake --cores all
# Small run for tests and CI: snakemake --cores all --configfile config/ci.yaml
from pathlib import Path


configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/profiling.smk"
include: "workflow/rules/predictors.smk"
include: "workflow/rules/user_data.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/ablation.smk"
include: "workflow/rules/simulation.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/scheduling_delay.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/readme.smk"
include: "workflow/rules/testbed.smk"


rule all:
    default_target: True
    input:
        ALL_OUTPUTS,
