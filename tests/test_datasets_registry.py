"""coloc.datasets's registry: a dataset is one registered module; a toy one registered here (not in lib) flows
through the config check, the predictors stage's helpers and a short simulation, and an unknown one is refused."""
import copy
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from coloc import config as cfg, datasets
from coloc.datasets import Dataset, measured_label
from coloc.predict import stage
from coloc.studies import experiment, scenarios

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
WHERE = "simulation.scenario_specs.isacpp-testbed-3090"
SETTINGS = {"reference_device": "v100", "max_jobs_per_gpu": 4, "restart_cost_s": 30.0, "protocol": "lofo",
            "predictor_norm": "egat", "predictor_util": "horus", "util_bin_s": 3600.0}
SOLO_CSV = "device,workload,throughput\na100,resnet18-cifar10-b32,10\na100,lm-wikitext2-b20,4\n"
PAIRS_CSV = ("device,workload_a,workload_b,norm_a,norm_b\n"
             "a100,resnet18-cifar10-b32,resnet18-cifar10-b32,0.5,0.5\n"
             "a100,resnet18-cifar10-b32,lm-wikitext2-b20,0.8,0.6\n"
             "a100,lm-wikitext2-b20,lm-wikitext2-b20,0.7,0.7\n")


def toy_families() -> list[str]:
    return ["lm", "resnet18"]


# The toy dataset: a user-format CSV pair on an A100 (its parser is the users' CSV loader).
TOY = Dataset(name="toy", short="Toy", title="Toy A100", truth="Toy, A100", folder="data/processed/toy",
              label=measured_label("Toy"), devices=("a100",), reference_device="a100", families=toy_families,
              measures=(), sources=("toy_pairs", "toy_solo"), licence="CC0-1.0",
              load=datasets.load_user)


@pytest.fixture
def toy():
    datasets.register(TOY)
    try:
        yield TOY
    finally:
        datasets.unregister(TOY.name)


@pytest.fixture
def toy_tables(tmp_path):
    (tmp_path / "pairs.csv").write_text(PAIRS_CSV)
    (tmp_path / "solo.csv").write_text(SOLO_CSV)
    return TOY.load(tmp_path / "pairs.csv", tmp_path / "solo.csv")


def merged(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def toy_config(dataset: str = "toy", **predictors) -> dict:
    """The default config with its RTX 3090 testbed scenario moved to ``dataset`` on an A100 cluster."""
    spec = merged(DEFAULT["simulation"]["scenario_specs"]["isacpp-testbed-3090"],
                  {"dataset": dataset, "cluster": "a100:8", "trace": {"families": ["lm"]}})
    return merged(DEFAULT, {"simulation": {"scenario_specs": {"isacpp-testbed-3090": spec}}, "predictors": predictors})


def mistakes(config: dict) -> str:
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    return str(err.value)


def test_the_registry_holds_the_four_datasets_in_the_stages_order():
    assert datasets.names() == ["gavel", "profiled", "lucid", "gavel-lucid"]
    assert datasets.simulated() == ["gavel", "lucid"]
    lucid = datasets.get("lucid")
    assert (lucid.devices, lucid.reference_device, lucid.truth) == (("rtx3090",), "rtx3090", "Lucid, RTX 3090")
    assert datasets.get("gavel").devices == ("k80", "p100", "v100") and datasets.get("gavel").reference_device is None
    assert datasets.get("gavel-lucid").parts == ("gavel", "lucid")
    assert datasets.get("user-a100").folder == "data/processed/user/a100"


def test_each_datasets_sources_are_in_the_shipped_config_with_its_licence():
    sources = DEFAULT["sources"]
    for name in datasets.names():
        dataset = datasets.get(name)
        for key in dataset.sources:
            assert sources[key]["licence"].startswith(dataset.licence), (name, key)


def test_what_a_dataset_says_it_measured_is_what_its_parser_gives(raw_files):
    """``measures``, ``devices`` and ``families`` against the tables of each dataset with a parser, parsed from the
    checksummed raw files."""
    columns = {"utilization": {"gpu_util", "mem_util"}, "memory": {"mem_bytes"}}
    parsed = [name for name in datasets.names() if datasets.get(name).load]
    assert parsed == ["gavel", "lucid"]
    for name in parsed:
        dataset = datasets.get(name)
        solo, pairs = dataset.load(*(raw_files[key] for key in dataset.sources))
        assert set(solo["device"]) == set(dataset.devices)
        measured = {kind for kind, names in columns.items() if names <= set(solo.columns)}
        assert measured == set(dataset.measures), name
        # a trace draws from the families measured in pairs (Lucid's BERT, ResNet-50, Transformer: alone only)
        in_pairs = set(pairs["workload_a"].map(datasets.family_of)) | set(pairs["workload_b"].map(datasets.family_of))
        assert dataset.families() == sorted(in_pairs), name


def test_an_unknown_name_and_a_taken_one_are_refused_naming_the_registered():
    with pytest.raises(KeyError, match=r"unknown dataset 'nosuch'; expected one of \['gavel', 'profiled', 'lucid', "
                                       r"'gavel-lucid'\] or user-<name>"):
        datasets.get("nosuch")
    with pytest.raises(ValueError, match="dataset 'lucid': already registered"):
        datasets.register(Dataset(name="lucid", short="x", title="x", folder="x", label=measured_label("x")))
    with pytest.raises(ValueError, match="users' prefix"):
        datasets.register(Dataset(name="user-x", short="x", title="x", folder="x", label=measured_label("x")))
    with pytest.raises(ValueError, match=r"measures \['power'\]"):
        Dataset(name="x", short="x", title="x", folder="x", label=measured_label("x"), measures=("power",))


def test_a_toy_dataset_flows_through_the_config_check(toy):
    cfg.check(toy_config(dataset_protocols={"toy": DEFAULT["predictors"]["protocols"]}), SCHEMA)
    # the predictors section naming it is checked as for any dataset
    assert "predictors.dataset_models.toy[0]: 'nosuch' not among predictors.models" in mistakes(
        toy_config(dataset_models={"toy": ["nosuch"]}))
    # its own devices and families are what the check holds the scenario to
    message = mistakes(merged(toy_config(), {"simulation": {"scenario_specs": {"isacpp-testbed-3090": {
        "cluster": "rtx3090:4", "trace": {"families": ["dcgan"]}}}}}))
    assert f"{WHERE}.cluster: device types ['rtx3090'] in 'rtx3090:4' are not in Toy's data (has ['a100'])" in message
    assert f"{WHERE}.trace.families: families ['dcgan'] are not among Toy's job types' families ['lm', 'resnet18']" \
        in message


def test_without_the_toy_registered_its_name_is_refused_naming_the_key_and_the_registered_names():
    message = mistakes(toy_config(dataset_protocols={"toy": ["lofo"]}))
    assert (f"{WHERE}.dataset: 'toy' is not a registered dataset (coloc.datasets); expected one of ['gavel', "
            f"'lucid'] (registered: ['gavel', 'profiled', 'lucid', 'gavel-lucid'])") in message
    assert ("predictors.dataset_protocols.toy: unknown dataset 'toy'; expected one of ['gavel', 'profiled', 'lucid', "
            "'gavel-lucid']") in message
    # a registered dataset without a measured truth is not one a scenario runs on
    assert f"{WHERE}.dataset: 'profiled' is registered but has no measured truth" in mistakes(toy_config("profiled"))
    # a user's source named under datasets.user is a dataset the predictors section may name
    cfg.check(merged(DEFAULT, {"datasets": {"user": {"a100": {"pairs": "data/own/pairs.csv"}}},
                               "predictors": {"dataset_models": {"user-a100": ["mean"]}}}), SCHEMA)


def test_the_predictors_stage_runs_the_toy_under_every_protocol_but_the_cross_datasets(toy):
    assert stage.dataset_folder("toy") == "data/processed/toy"
    assert stage.dataset_protocols("toy", ["lofo", "xdataset", "random5"]) == ["lofo", "random5"]
    assert stage.dataset_protocols("gavel-lucid", ["lofo", "xdataset"]) == ["xdataset"]
    assert stage.source_label("toy", ["a100"], ["lm"]) == "Toy (measured, A100), families lm only"
    assert stage.run_file("scores", "toy", "lofo", ["lofo"]) == "data/processed/predictor_scores/toy/lofo.parquet"


def test_a_short_simulation_runs_on_the_toys_tables_from_its_parser(toy, toy_tables):
    solo, pairs = toy_tables
    assert sorted(solo["workload"]) == ["lm-wikitext2-b20", "resnet18-cifar10-b32"]
    cross = pairs[pairs["workload_a"] != pairs["workload_b"]]  # the rows are ordered a <= b: lm's numbers first
    assert cross[["tput_a", "tput_b"]].to_numpy().tolist() == [[pytest.approx(0.6 * 4), pytest.approx(0.8 * 10)]]
    spec = {"dataset": "toy", "trace": {"source": "testbed", "n_jobs": 6, "group_size": 3, "median_duration_s": 60,
                                        "duration_sigma": 1.0},
            "cluster": "a100:2", "gpus_per_node": 2, "policies": ["fifo"], "seeds": [0], "sweep": {"interval_s": [0]},
            "headline": 0, "max_jobs_per_gpu": 2, "util_bin_s": 60.0}
    out = scenarios.run_policy("t", "fifo", spec, SETTINGS, solo, pairs, None, log=lambda _: None)
    row = out["summary"].iloc[0]
    # the reference device is the toy's own, not simulation.reference_device (v100)
    assert (row["dataset"], row["reference_device"]) == ("toy", "a100")
    assert set(out["jobs"]["workload"]) <= {"lm-wikitext2-b20", "resnet18-cifar10-b32"} and len(out["jobs"]) == 6
    assert experiment.truth_name("toy") == "measured (Toy, A100)"
    with pytest.raises(ValueError, match=r"scenario dataset 'philly': expected one of \['gavel', 'lucid', 'toy'\]"):
        scenarios.dataset_of({**spec, "dataset": "philly"})


TOY_MODULE = '''"""A toy dataset: one pairs CSV in the users' format on an A100."""
from coloc.datasets import Dataset, measured_label
from coloc.datasets.user import load_user


def load(pairs_path):
    return load_user(pairs_path)


DATASET = Dataset(name="toy", short="Toy", title="Toy A100", truth="Toy, A100", folder="data/processed/toy",
                  label=measured_label("Toy"), devices=("a100",), reference_device="a100", sources=("toy_pairs",),
                  licence="CC0-1.0", load=load)
'''


@pytest.mark.slow
def test_a_dataset_module_and_its_sources_entry_are_all_the_workflow_needs(tmp_path):
    """A copy of the workflow with one module more in coloc/datasets (named in its registry's list) and its file
    under sources: the workflow downloads the file from the mirror, parses it into the toy's tables (rule
    dataset_tables) and plans the predictors stage on it under every protocol but the cross-dataset one."""
    import hashlib
    import shutil
    import sys

    from workflow_run import environment, planned

    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy2(REPO / "Snakefile", repo / "Snakefile")
    for part in ("workflow", "config", "notebooks", "lib"):
        shutil.copytree(REPO / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    package = repo / "lib" / "coloc" / "datasets"
    (package / "toy.py").write_text(TOY_MODULE)
    init = (package / "__init__.py").read_text()
    for old, new in (("import gavel, profiled, lucid, gavel_lucid", "import gavel, profiled, lucid, gavel_lucid, toy"),
                     ("(gavel, profiled, lucid, gavel_lucid):", "(gavel, profiled, lucid, gavel_lucid, toy):")):
        assert old in init
        init = init.replace(old, new)
    (package / "__init__.py").write_text(init)
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "pairs.csv").write_text(PAIRS_CSV)
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config["sources"]["toy_pairs"] = {"file": "toy/pairs.csv", "url": "https://example.org/toy/pairs.csv",
                                      "sha256": hashlib.sha256(PAIRS_CSV.encode()).hexdigest(), "licence": "CC0-1.0"}
    (repo / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    def snakemake(*args):
        return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=repo,
                              env=environment(mirror), capture_output=True, text=True, timeout=600)

    made = snakemake("data/processed/toy/pairs.parquet")
    assert made.returncode == 0, made.stderr[-4000:]
    expected = datasets.load_user(mirror / "toy" / "pairs.csv")[1]
    pd.testing.assert_frame_equal(pd.read_parquet(repo / "data" / "processed" / "toy" / "pairs.parquet"), expected)
    plan = snakemake("-n", "--forceall")
    assert plan.returncode == 0, plan.stderr[-4000:]
    toy_runs = sorted(job["output"][0] for job in planned(plan.stdout) if job["rule"] == "predictors"
                      and "/toy/" in job["output"][0])
    protocols = [p for p in config["predictors"]["protocols"] if p != "xdataset"]
    assert toy_runs == sorted(f"data/processed/predictions/toy/{p}.parquet" for p in protocols)
