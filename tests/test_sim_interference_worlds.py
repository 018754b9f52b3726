"""Interference worlds (measured, flat:<s>, none), no cap but memory, and the paper's profiled-pairs setting."""
import math
from pathlib import Path

import pytest
import yaml
from sim_cases import ABC, Scripted, tables, trace
from test_studies_scenarios import SETTINGS, a_testbed, two_devices

from coloc import config as cfg, policies
from coloc.sim import ClusterSpec, GroundTruth, Predictions, SimulationError, simulate
from coloc.sim.interference import parse_world
from coloc.sim.view import SchedulerView, jobs_per_gpu
from coloc.studies import experiment, scenarios

CONFIG = Path(__file__).resolve().parents[1] / "config"
TWO_GPUS = ClusterSpec((("v100", 2),), gpus_per_node=2)
# job 1 (type a, 100 s) and job 2 (type b, 60 s), both at 0; ABC's measured pair (a, b) is (0.5, 0.8)
TWO_JOBS = trace([(1, 0.0, 100.0, 1, "a"), (2, 0.0, 60.0, 1, "b")])


def truth_in(world: str, **kwargs) -> GroundTruth:
    solo, pairs = tables(ABC, **kwargs)
    return GroundTruth(solo, pairs, "v100", world=world)


def jcts(world: str, plan: dict) -> dict[int, float]:
    jobs = simulate(TWO_JOBS, truth_in(world), Scripted(plan), TWO_GPUS).jobs
    return dict(zip(jobs["job_id"], jobs["jct"], strict=True))


@pytest.mark.parametrize("world, expected", [
    # b at 0.8 ends at 60 / 0.8 = 75; a has done 75 x 0.5 = 37.5 of 100, the rest alone: 75 + 62.5 = 137.5
    ("measured", {1: 137.5, 2: 75.0}),
    # each at 1 / 1.2: b ends at 72, a has done 60, the rest alone: 72 + 40 = 112
    ("flat:0.2", {1: 112.0, 2: 72.0}),
    # sharing costs nothing: each its own duration
    ("none", {1: 100.0, 2: 60.0}),
])
def test_two_jobs_sharing_one_of_two_gpus_finish_as_the_world_says(world, expected):
    assert jcts(world, {1: (0,), 2: (0,)}) == pytest.approx(expected, rel=1e-12)
    assert jcts(world, {1: (0,), 2: (1,)}) == pytest.approx({1: 100.0, 2: 60.0}, rel=1e-12)  # apart: every world alike


@pytest.mark.parametrize("world", ["measured", "flat:0.2", "none"])
def test_memory_fit_stays_measured_in_every_world(world):
    truth = truth_in(world, infeasible=(("a", "d"),), tputs={"a": 10.0, "b": 10.0, "c": 10.0, "d": 10.0})
    rows = trace([(1, 0.0, 100.0, 1, "a"), (2, 0.0, 60.0, 1, "d")])
    with pytest.raises(SimulationError, match="infeasible on v100"):
        simulate(rows, truth, Scripted({1: (0,), 2: (0,)}), TWO_GPUS)
    assert not truth.feasible("v100", ["a", "d"]) and truth.feasible("v100", ["a", "b"])


def test_a_flat_world_slows_three_jobs_by_one_factor_not_a_product():
    spec = ClusterSpec((("v100", 1),), gpus_per_node=1, max_jobs_per_gpu=3)
    rows = trace([(1, 0.0, 80.0, 1, "a"), (2, 0.0, 80.0, 1, "a"), (3, 0.0, 80.0, 1, "b")])
    jobs = simulate(rows, truth_in("flat:0.25"), Scripted({1: (0,), 2: (0,), 3: (0,)}), spec).jobs
    assert list(jobs["jct"]) == pytest.approx([100.0] * 3, rel=1e-12)  # each at 1 / 1.25 = 0.8 of solo speed
    measured = truth_in("measured")
    assert measured.norm("v100", "a", ["a", "b"]) == pytest.approx(0.6 * 0.5)  # the measured world's product of pairs


def test_the_oracle_sees_the_worlds_pairs_and_the_truth_is_named_after_the_world():
    truth = truth_in("flat:0.2")
    assert set(truth.pair_norms().values()) == {1 / 1.2}
    assert Predictions.from_truth(truth).norm("v100", "a", "b") == 1 / 1.2
    assert experiment.truth_name("gavel", "flat:0.2") == "flat 20% (Gavel's memory fit)"
    assert experiment.truth_name("lucid", "none") == "none: sharing free (Lucid, RTX 3090's memory fit)"
    assert experiment.truth_name("gavel") == "measured (Gavel)"
    assert Predictions.from_truth(truth).source.startswith("ORACLE: ")


@pytest.mark.parametrize("bad", ["flat", "flat:", "flat:-0.1", "flat:nan", "flat:inf", "flat:101", "Measured",
                                 "none:0", "slow", "", 0.2, None])
def test_a_bad_world_is_refused_naming_the_key_and_the_forms(bad):
    forms = "expected 'measured', 'none' or 'flat:<s>' with s a number in \\[0, 100\\]"
    with pytest.raises(ValueError, match=f"RunConfig.world {bad!r}: {forms}".replace("(", "\\(").replace(")", "\\)")
                       .replace("+", "\\+")):
        experiment.RunConfig("testbed", "fifo", 0, "v100:2", world=bad)
    with pytest.raises(ValueError, match="GroundTruth world"):
        truth_in(bad)


def test_the_config_check_names_the_world_key():
    config, schema = (yaml.safe_load((CONFIG / name).read_text()) for name in ("config.yaml", "config.schema.yaml"))
    config["simulation"]["world"] = "flat:-1"
    config["simulation"]["scenario_specs"]["poisson"]["world"] = "slow"
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, schema)
    message = str(err.value)
    assert "simulation.world 'flat:-1': expected 'measured', 'none' or 'flat:<s>'" in message
    assert "simulation.scenario_specs.poisson.world 'slow': expected 'measured', 'none' or 'flat:<s>'" in message
    config["simulation"]["world"] = "flat:0.2"
    config["simulation"]["scenario_specs"]["poisson"]["world"] = "none"
    for group in config["claims"]["groups"].values():  # coloc's setting in the claims map is the scenario's world
        if "world" in group["factors"]:
            group["factors"]["world"]["coloc"] = "flat:0.2"
    cfg.check(config, schema)  # accepted


def test_a_scenarios_world_reaches_its_runs_tables_and_its_resume_folder(tmp_path):
    solo, pairs = two_devices()
    flat = scenarios.run_policy("t", "fifo", a_testbed(seeds=[0], world="flat:0.2"), SETTINGS, solo, pairs, None,
                                log=lambda _: None)
    assert set(flat["summary"]["world"]) == {"flat:0.2"} and set(flat["jobs"]["world"]) == {"flat:0.2"}
    default = scenarios.run_policy("t", "fifo", a_testbed(seeds=[0]), SETTINGS, solo, pairs, None,
                                   log=lambda _: None)
    assert set(default["summary"]["world"]) == {"measured"}
    spec = a_testbed()
    here = scenarios.resume_folder(tmp_path, "t", "fifo", spec, {**SETTINGS, "world": "measured"}, [])
    assert here != scenarios.resume_folder(tmp_path, "t", "fifo", spec, {**SETTINGS, "world": "none"}, [])
    assert here != scenarios.resume_folder(tmp_path, "t", "fifo", {**spec, "world": "none"},
                                           {**SETTINGS, "world": "measured"}, [])


# ----- no cap but memory ---------------------------------------------------------------------------

def test_a_null_cap_leaves_each_policys_own_limit_and_else_no_cap():
    assert jobs_per_gpu(policies.get("isacpp"), None) is None  # no limit of its own: memory alone
    assert jobs_per_gpu(policies.get("horus"), None) == 3
    assert jobs_per_gpu(policies.get("gandiva"), None) == 2
    assert jobs_per_gpu(policies.get("fifo"), None) == 1
    assert jobs_per_gpu(policies.get("isacpp"), 4) == 4 and jobs_per_gpu(policies.get("horus"), 2) == 2


def test_a_null_cap_lets_memory_alone_decide_how_many_share_a_gpu():
    """Five jobs of types that all fit pairwise share GPU 0 with no cap; with the default cap of 2 the third is
    refused. The truth of five is the product of its pairs, counted as crowded (extrapolated) time."""
    spec = ClusterSpec((("v100", 1),), gpus_per_node=1, max_jobs_per_gpu=None)
    rows = trace([(i, 0.0, 10.0, 1, "c") for i in range(5)])
    jobs = simulate(rows, truth_in("measured"), Scripted({i: (0,) for i in range(5)}), spec).jobs
    assert list(jobs["jct"]) == pytest.approx([10.0 / 0.9 ** 4] * 5, rel=1e-12)  # c next to 4 c's: 0.9^4
    assert (jobs["crowded_time"] == jobs["run_time"]).all()
    with pytest.raises(Exception, match="already holds 2 jobs \\(cap 2\\)"):
        simulate(rows, truth_in("measured"), Scripted({i: (0,) for i in range(5)}), TWO_GPUS)


def test_a_null_cap_goes_from_the_config_to_the_run():
    config = scenarios.run_config("isacpp", a_testbed(max_jobs_per_gpu=None), SETTINGS,
                                  scenarios.Point(0, "interval_s", 0))
    assert config.max_jobs_per_gpu is None and config.cluster_spec().cap == float("inf")
    view = SchedulerView.for_policy(policies.get("horus"), config.cluster_spec(), None, None)
    assert view.cluster.cap == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_a_cap_that_is_not_a_positive_integer_or_none_is_refused(bad):
    with pytest.raises(ValueError, match=f"max_jobs_per_gpu {bad!r}; expected an integer >= 1, or None"):
        ClusterSpec((("v100", 2),), max_jobs_per_gpu=bad)


# ----- the paper's assumption: every pair profiled ---------------------------------------------------

def test_profiled_pairs_feed_the_truths_pairs_labelled_as_the_papers_assumption():
    solo, pairs = two_devices()
    truth = GroundTruth(solo, pairs, "v100")
    config = scenarios.run_config("isacpp@profiled-pairs", a_testbed(), SETTINGS, scenarios.Point(0, "interval_s", 0))
    assert (config.protocol, config.predictor_norm) == ("profiled-pairs", "profiled-pairs")
    read = experiment.load_predictions(config, "", "", truth)
    assert read.norm("k80", "a", "b") == 0.5 and read.norm("v100", "b", "a") == 0.8
    assert read.source == "measured pairs (the paper's assumption: every pair profiled): measured (Gavel)"
    assert not read.oracle
    with pytest.raises(ValueError, match="reads the truth's pairs \\(profiled-pairs\\), not the pair predictions file"):
        experiment.load_predictions(config, "elsewhere/lofo.parquet", "", truth)
    horus = scenarios.run_config("horus@profiled-pairs", a_testbed(), SETTINGS, scenarios.Point(0, "interval_s", 0))
    with pytest.raises(ValueError, match="'horus' reads none"):
        experiment.load_predictions(horus, "", "", truth)


def test_a_profiled_pairs_run_says_so_in_its_summary():
    solo, pairs = two_devices()
    runs = scenarios.run_policy("t", "isacpp@profiled-pairs", a_testbed(seeds=[0]), SETTINGS, solo, pairs, None,
                                log=lambda _: None)
    summary = runs["summary"]
    assert set(summary["prediction_source"]) == {
        "measured pairs (the paper's assumption: every pair profiled): measured (Gavel)"}
    assert set(summary["protocol"]) == {"profiled-pairs"} and set(summary["predictor_norm"]) == {"profiled-pairs"}


def test_profiled_pairs_need_no_pair_file_and_read_random5_utilization():
    assert experiment.file_protocols("isacpp@profiled-pairs", "profiled-pairs") == {}
    assert experiment.file_protocols("isacpp", "lofo") == {"predictions": "lofo"}
    assert experiment.file_protocols("horus", "random5") == {"utilization": "random5"}


def test_the_config_check_takes_profiled_pairs_only_where_pair_predictions_are_read():
    config, schema = (yaml.safe_load((CONFIG / name).read_text()) for name in ("config.yaml", "config.schema.yaml"))
    cfg.check(config, schema)  # the default: isacpp@profiled-pairs in the testbed
    config["simulation"]["scenario_specs"]["poisson"]["policies"] += [
        "horus@profiled-pairs", "isacpp~egat@profiled-pairs", "coloc@profiled-pairs", "isacpp@profiled"]
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, schema)
    message = str(err.value)
    assert "'@profiled-pairs' gives measured pairs in place of pair predictions, and policy 'horus' reads none" in message
    assert "'~egat' names a pair predictor, but '@profiled-pairs' reads the measured pairs in its place" in message
    assert "coloc@profiled-pairs" not in message
    assert "protocol 'profiled' of 'isacpp@profiled' is not among predictors.protocols" in message


def test_the_default_config_runs_isacpps_own_settings_in_the_testbed():
    config = yaml.safe_load((CONFIG / "config.yaml").read_text())
    testbed = config["simulation"]["scenario_specs"]["isacpp-testbed"]["policies"]
    assert {"isacpp", "isacpp@random5", "isacpp@profiled-pairs", "isacpp~egat-profiled"} <= set(testbed)
    # on ISACPP's graphs egat-profiled predicts a pair as egat does: its random5 run is config/paper.yaml's
    paper = yaml.safe_load((CONFIG / "paper.yaml").read_text())
    assert "isacpp~egat-profiled@random5" in paper["simulation"]["scenario_specs"]["isacpp-testbed"]["policies"]
    assert "random5" in paper["predictors"]["models"]["egat-profiled"]["protocols"]
    assert config["simulation"]["world"] == "measured"
    assert parse_world(config["simulation"]["world"]) == ("measured", pytest.approx(float("nan"), nan_ok=True))


def test_a_world_other_than_the_runs_truths_is_refused():
    solo, pairs = tables(ABC)
    config = experiment.RunConfig("testbed", "fifo", 0, "v100:2", world="none", gpus_per_node=2)
    with pytest.raises(ValueError, match="truth's world 'measured' is not the run's 'none'"):
        experiment.run(config, {"source": "testbed", "n_jobs": 3}, solo, pairs, None,
                       truth=GroundTruth(solo, pairs, "v100"))


def test_outside_the_measured_world_a_shared_gpus_measured_utilization_does_not_apply():
    solo, pairs = tables(ABC)
    solo["gpu_util"], pairs["pair_gpu_util"] = 50.0, 80.0
    measured = GroundTruth(solo, pairs, "v100")
    flat = GroundTruth(solo, pairs, "v100", world="flat:0.2")
    assert measured.gpu_util("v100", ["a", "b"]) == 0.8 and measured.gpu_util("v100", ["a"]) == 0.5
    assert math.isnan(flat.gpu_util("v100", ["a", "b"])) and flat.gpu_util("v100", ["a"]) == 0.5
