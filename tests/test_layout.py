"""Where a module's tests are: found from its name.

The tests of `lib/coloc/<package>/<module>.py` are in `tests/test_<package>_<module>.py` and
`tests/test_<package>_<module>_<topic>.py`; a top-level module's in `tests/test_<module>[_<topic>].py`; a package's
`__init__` in `tests/test_<package>[_<topic>].py`. A module without such a file says in `ELSEWHERE` which test files
test it and why; a test file named after no module or package says in `NOT_MODULE_TESTS` what it tests.
"""
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib" / "coloc"
TESTS = Path(__file__).resolve().parent

# module -> (the test files that test it, why it has none of its own name); shrink it by naming tests after modules
ELSEWHERE = {
    "datasets/gavel": ("test_datasets test_datasets_properties", "Gavel's parser, on the real file and on corrupted copies"),
    "datasets/philly": ("test_datasets test_datasets_properties", "the Philly trace's parser, real and corrupted"),
    "datasets/tables": ("test_datasets test_predict_user_source", "the shared checks and save_table, through the parsers"),
    "datasets/profiled": ("test_datasets_registry", "a record only (its tables are the profiler's): the registry's tests"),
    "datasets/gavel_lucid": ("test_datasets_registry test_predict_protocols", "the cross pair's tables and protocol"),
    "cli": ("test_probe_cli test_sources test_readme", "each runs its subcommand through coloc.cli.main"),
    "plots/claims": ("test_report test_workflow", "its figures are drawn by the CI run; the report test finds each"),
    "plots/data": ("test_report test_workflow", "its figures are drawn by the CI run; the report test finds each"),
    "plots/features": ("test_report test_workflow", "its figures are drawn by the CI run; the report test finds each"),
    "plots/predictors": ("test_plots", "a protocol without utilization predictions, among the plots package's"),
    "plots/profiling": ("test_profiler_tables test_profiler_sets", "beside the profiler tables each figure draws"),
    "plots/testbed": ("test_testbed_experiment", "the testbed script draws its scatter"),
    "policies/coloc_online": ("test_policies_coloc_rule test_policies_coloc_search", "coloc's rule in its online "
                              "form: tested beside the rule and the search it shares"),
    "policies/exclusive": ("test_policies", "fifo and sjf on hand-made cases and a small trace"),
    "policies/isacpp_released": ("test_policies_isacpp", "beside the paper's ISACPP it differs from"),
    "policies/oracle": ("test_policies test_sim_view_hides_truth", "the one policy given the truth, and only it"),
    "predict/base": ("test_predict_models test_predict_protocols", "the predictor interface, on every predictor"),
    "predict/baselines": ("test_predict_models", "every registered predictor is tested there"),
    "predict/blend": ("test_predict_models", "its weights on a real slice of Gavel's data"),
    "predict/completion": ("test_predict_probes", "matrix completion of a probed job"),
    "predict/encodings": ("test_predict_models", "no label reaches its own encoding, on real data"),
    "predict/evaluate": ("test_predict_models test_predict_probes", "the evaluation's outputs and folds"),
    "predict/inputs": ("test_predict_models test_predict_registry", "the labels the predictors train on"),
    "predict/interactions": ("test_predict_models", "the interaction model on real data"),
    "predict/references": ("test_predict_probes test_probe_cli", "the reference co-runners of the probes"),
    "predict/stage": ("test_predict_models test_predict_user_source", "the predictors stage on tiny data"),
    "profiler/errors": ("test_profiler_tables", "the profiler's refusals, raised by each part"),
    "profiler/extrapolation": ("test_profiler_sets", "the product-of-pairs error of the sets table"),
    "profiler/measure": ("test_profiler_journal test_profiler_sweep", "its records through the journal and sweeps"),
    "profiler/outcome": ("test_profiler_tables", "each measurement's outcome in the tables"),
    "profiler/worker": ("test_profiler_sweep", "every real sweep runs its jobs in workers"),
    "published": ("test_claims test_studies_calibrate", "the papers' numbers where they are compared"),
    "recipe_memory": ("test_memory", "the recipe's memory estimate beside the measured memory"),
    "sim/job": ("test_sim_cluster_counts test_policies_lone", "jobs made by hand for the cluster and the policies"),
    "sim/metrics": ("test_sim_engine test_sim_traces", "the summaries of runs by hand"),
    "studies/experiment": ("test_sim_predictions test_studies_scenarios", "one run of a policy, by its scenarios"),
    "testbed/process": ("test_testbed_runner", "every runner test starts its jobs' processes"),
    "workloads/attention": ("test_workloads", "every job type of the registry builds and trains there"),
    "workloads/catalog": ("test_workloads", "every job type of the registry builds and trains there"),
    "workloads/gavel": ("test_workloads", "every job type of the registry builds and trains there"),
    "workloads/multibranch": ("test_workloads", "every job type of the registry builds and trains there"),
    "workloads/recipe": ("test_workloads", "every job type of the registry builds and trains there"),
    "workloads/resnets": ("test_workloads", "every job type of the registry builds and trains there"),
    "workloads/sequence": ("test_workloads", "every job type of the registry builds and trains there"),
    "workloads/vision": ("test_workloads", "every job type of the registry builds and trains there"),
}

# test file -> what it tests that is not one library module or package
NOT_MODULE_TESTS = {
    "test_bench_sim_scale": "the simulator's speed at scale",
    "test_compare_runs": "scripts/compare_runs.py",
    "test_docs": "the docs' pages",
    "test_docs_extending": "docs/extending.md's example policy",
    "test_environment": "the development environment",
    "test_envs": "the rules' conda environments",
    "test_fit_testbed": "scripts/fit_testbed.py",
    "test_gpu_dataset": "scripts/gpu_dataset.py",
    "test_layout": "this rule",
    "test_notebook_defaults": "the notebooks' parameters",
    "test_report": "the Snakemake report of the CI run",
    "test_slurm": "the CI sweep under SLURM",
    "test_workflow": "the Snakemake workflow",
}


def modules() -> list[str]:
    """Every library module as `<package>/<module>`, a package as itself (its `__init__`); the root package aside."""
    names = []
    for path in sorted(LIB.rglob("*.py")):
        parts = path.relative_to(LIB).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts:
            names.append("/".join(parts))
    return names


def named_after(test: str, module: str) -> bool:
    """Whether the test file `test` (its stem) is named after `module` by the rule."""
    key = "test_" + module.replace("/", "_")
    return test == key or test.startswith(key + "_")


def stems_of_tests() -> list[str]:
    return sorted(path.stem for path in TESTS.glob("test_*.py"))


def test_the_rule_reads_a_name_as_a_module_and_a_topic():
    assert named_after("test_policies_coloc_search", "policies/coloc")
    assert named_after("test_policies_coloc", "policies/coloc")
    assert named_after("test_policies_coloc_search", "policies")
    assert not named_after("test_policies_coloc_online", "policies/coloc_probe")
    assert not named_after("test_policies_colocx", "policies/coloc")
    assert not named_after("test_policy_coloc", "policies/coloc")


def test_every_library_module_has_a_test_file_named_after_it_or_says_where_its_tests_are():
    tests = stems_of_tests()
    unnamed = [m for m in modules() if m not in ELSEWHERE and not any(named_after(t, m) for t in tests)]
    assert unnamed == [], (f"library modules without a test file named after them: {unnamed}; name their tests "
                           "tests/test_<package>_<module>[_<topic>].py, or say in ELSEWHERE which tests cover them")


def test_each_module_said_to_be_tested_elsewhere_exists_has_no_test_of_its_own_name_and_names_real_tests():
    tests, known = stems_of_tests(), set(modules())
    assert sorted(set(ELSEWHERE) - known) == [], "ELSEWHERE names modules that do not exist"
    named = sorted(m for m in ELSEWHERE if any(named_after(t, m) for t in tests))
    assert named == [], f"these modules now have tests named after them: remove them from ELSEWHERE: {named}"
    missing = sorted({f for files, _ in ELSEWHERE.values() for f in files.split()} - set(tests))
    assert missing == [], f"ELSEWHERE names test files that do not exist: {missing}"


def test_every_test_file_is_named_after_a_module_or_package_or_says_what_it_tests():
    known, tests = modules(), stems_of_tests()
    stray = [t for t in tests if t not in NOT_MODULE_TESTS and not any(named_after(t, m) for m in known)]
    assert stray == [], (f"test files named after no library module or package: {stray}; rename them "
                         "test_<package>_<module>[_<topic>].py, or say in NOT_MODULE_TESTS what they test")
    listed = sorted(t for t in NOT_MODULE_TESTS if t not in tests or any(named_after(t, m) for m in known))
    assert listed == [], f"NOT_MODULE_TESTS lists files that are missing or named after a module: {listed}"
