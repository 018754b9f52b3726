"""coloc.studies.scenarios: a scenario's runs (seed x sweep point), heterogeneous clusters, resume, the testbed trace."""
import math

import numpy as np
import pandas as pd
import pytest
from sim_cases import ABC, tables

from coloc.sim import traces
from coloc.studies import experiment, scenarios

SETTINGS = {"reference_device": "v100", "max_jobs_per_gpu": 2, "restart_cost_s": 30.0, "protocol": "lofo",
            "predictor_norm": "p", "predictor_util": "h", "util_bin_s": 100.0}


def two_devices():
    """(solo, pairs) on v100 and k80 (k80 half as fast solo, the same co-location factors)."""
    v100, k80 = tables(ABC), tables(ABC, tputs={"a": 5.0, "b": 5.0, "c": 5.0}, device="k80")
    return pd.concat([v100[0], k80[0]], ignore_index=True), pd.concat([v100[1], k80[1]], ignore_index=True)


def a_testbed(**over):
    spec = {"trace": {"source": "testbed", "n_jobs": 9, "group_size": 3, "median_duration_s": 200.0},
            "cluster": "k80:2,v100:2", "gpus_per_node": 2, "policies": ["fifo"], "seeds": [0, 1],
            "sweep": {"interval_s": [0, 500]}, "headline": 0}
    return {**spec, **over}


def test_a_scenario_runs_every_seed_at_every_sweep_point():
    runs = scenarios.points(a_testbed())
    assert [(p.seed, p.sweep, p.point) for p in runs] == [(0, "interval_s", 0.0), (0, "interval_s", 500.0),
                                                          (1, "interval_s", 0.0), (1, "interval_s", 500.0)]
    assert runs[1].name == "seed0_interval_s500"


@pytest.mark.parametrize("sweep", [{"gpus": [1000000, 1000001]}, {"load": [1.0000001, 1.0000004]},
                                   {"interval_s": [0.1, 0.1 + 2 ** -50]}])
def test_distinct_sweep_values_that_print_alike_get_distinct_folders(sweep):
    """`:g` prints 1000000 and 1000001 both as 1e+06: two runs would share a resume folder, the first read twice."""
    names = [p.name for p in scenarios.points(a_testbed(sweep=sweep, seeds=[0]))]
    assert len(set(names)) == len(names) == 2, names
    key = next(iter(sweep))
    assert [float(n.removeprefix(f"seed0_{key}")) for n in names] == [float(v) for v in sweep[key]]


def test_sweep_values_equal_as_floats_are_refused():
    with pytest.raises(ValueError, match="share the folder name 'seed0_gpus9007199254740992.0'"):
        scenarios.points(a_testbed(sweep={"gpus": [2 ** 53, 2 ** 53 + 1]}, seeds=[0]))


def test_run_config_takes_the_swept_key_and_leaves_the_unused_one_nan():
    testbed = scenarios.run_config("fifo", a_testbed(), SETTINGS, scenarios.Point(3, "interval_s", 250.0))
    assert (testbed.seed, testbed.interval_s, testbed.cluster, testbed.gpus_per_node) == (3, 250.0, "k80:2,v100:2", 2)
    assert math.isnan(testbed.load)
    philly = {"trace": {"source": "philly", "load": 2.0}, "cluster": "v100:8", "gpus_per_node": 8}
    at_gpus = scenarios.run_config("fifo", philly, SETTINGS, scenarios.Point(0, "gpus", 16))
    assert (at_gpus.cluster, at_gpus.load) == ("v100:16", 2.0) and math.isnan(at_gpus.interval_s)
    with pytest.raises(ValueError, match="sweeping gpus needs a cluster of one device type"):
        scenarios.run_config("fifo", a_testbed(), SETTINGS, scenarios.Point(0, "gpus", 4))
    with pytest.raises(ValueError, match="trace source 'testbed' cannot sweep 'load'"):
        scenarios.run_config("fifo", a_testbed(), SETTINGS, scenarios.Point(0, "load", 1.0))


def test_a_tilde_on_horus_chooses_its_utilization_predictor_and_the_run_reads_it(tmp_path):
    config = scenarios.run_config("horus~implied", a_testbed(), SETTINGS, scenarios.Point(0, "interval_s", 0))
    assert (config.predictor_norm, config.predictor_util) == ("p", "implied")
    util = pd.DataFrame({"device": "v100", "workload": ["a", "a"], "predictor": ["h", "implied"],
                         "pred_util": [0.2, 0.7]})
    util.to_parquet(tmp_path / "utilization.parquet")
    read = experiment.load_predictions(config, "", tmp_path / "utilization.parquet")
    assert read.util("v100", "a") == 0.7


def test_the_testbed_trace_arrives_in_groups_with_the_same_jobs_at_every_interval():
    names = ["a", "b", "c"]
    at_once = traces.testbed(51, names, seed=4, interval_s=0.0)
    spread = traces.testbed(51, names, seed=4, interval_s=250.0)
    assert len(spread) == 51 and set(at_once["submit_time"]) == {0.0}
    assert list(spread["submit_time"][:7]) == [0.0, 0.0, 0.0, 250.0, 250.0, 250.0, 500.0]
    assert spread["submit_time"].max() == 16 * 250.0  # 17 groups of 3
    columns = ["job_id", "duration", "num_gpus", "workload"]
    pd.testing.assert_frame_equal(at_once[columns], spread[columns])
    assert set(spread["num_gpus"]) == {1} and set(spread["workload"]) <= set(names)
    other = traces.testbed(51, names, seed=5, interval_s=250.0)
    assert not other["duration"].equals(spread["duration"])
    many = traces.testbed(4000, names, seed=0, interval_s=1.0, median_duration_s=1800.0, duration_sigma=0.8)
    assert np.median(many["duration"]) == pytest.approx(1800.0, rel=0.05)
    with pytest.raises(ValueError, match="interval_s -1.0; expected a finite number >= 0"):
        traces.testbed(5, names, seed=0, interval_s=-1.0)


def test_a_heterogeneous_cluster_runs_jobs_on_both_device_types():
    solo, pairs = two_devices()
    tables_ = scenarios.run_policy("t", "fifo", a_testbed(seeds=[0]), SETTINGS, solo, pairs, None,
                                   log=lambda _: None)
    summary, jobs, util = tables_["summary"], tables_["jobs"], tables_["utilization"]
    assert list(summary["point"]) == [0.0, 500.0] and set(summary["gpus"]) == {4}
    assert set(summary["cluster"]) == {"k80:2,v100:2"} and summary["load"].isna().all()
    assert list(summary.columns[:5]) == ["scenario", "policy", "seed", "sweep", "point"]
    for frame in (jobs, util):
        assert {"scenario", "policy", "seed", "sweep", "point"} <= set(frame.columns)
    assert set(jobs["device"]) == {"k80", "v100"}  # 9 jobs at once on 4 GPUs: both types used
    # a job on k80 runs at half its v100 speed (fifo runs every job alone)
    alone = jobs[(jobs["point"] == 500.0) & (jobs["colocated_time"] == 0)]
    ratio = alone["run_time"] / alone["duration"]
    assert np.allclose(ratio[alone["device"] == "k80"], 2.0) and np.allclose(ratio[alone["device"] == "v100"], 1.0)
    assert summary.loc[0, "busy_share"] == pytest.approx(1.0)  # all 9 arrive at 0: the GPUs stay busy to the last start


def test_a_rerun_reads_finished_runs_back_and_runs_only_the_rest(tmp_path, monkeypatch):
    solo, pairs = two_devices()
    spec = a_testbed()
    first = scenarios.run_policy("t", "fifo", spec, SETTINGS, solo, pairs, None, work_dir=tmp_path,
                                 log=lambda _: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in scenarios.points(spec)]
    # a run interrupted while writing leaves only a hidden staging folder, never a run folder
    (tmp_path / "seed1_interval_s500" / "summary.parquet").unlink()
    (tmp_path / "seed1_interval_s500").rename(tmp_path / ".partial-seed1_interval_s500")
    ran = []
    real_run = experiment.run
    monkeypatch.setattr(experiment, "run", lambda config, *a, **k: ran.append(config) or real_run(config, *a, **k))
    again = scenarios.run_policy("t", "fifo", spec, SETTINGS, solo, pairs, None, work_dir=tmp_path,
                                 log=lambda _: None)
    assert [(c.seed, c.interval_s) for c in ran] == [(1, 500.0)]
    assert not (tmp_path / ".partial-seed1_interval_s500").exists()
    timed = ["sim_wall_s", "decision_ms_per_job"]  # wall-clock times: the only columns a rerun may change
    for name in scenarios.TABLES:
        pd.testing.assert_frame_equal(first[name].drop(columns=timed, errors="ignore"),
                                      again[name].drop(columns=timed, errors="ignore"))


def test_the_resume_folder_changes_with_the_definition_and_the_inputs(tmp_path):
    solo = tmp_path / "solo.parquet"
    solo.write_bytes(b"one")
    spec = a_testbed()
    here = scenarios.resume_folder(tmp_path, "t", "fifo", spec, SETTINGS, [solo, "", tmp_path / "missing"])
    assert here == scenarios.resume_folder(tmp_path, "t", "fifo", spec, SETTINGS, [solo])
    assert here != scenarios.resume_folder(tmp_path, "t", "fifo", a_testbed(seeds=[0]), SETTINGS, [solo])
    assert here != scenarios.resume_folder(tmp_path, "t", "gandiva", spec, SETTINGS, [solo])
    solo.write_bytes(b"two")
    assert here != scenarios.resume_folder(tmp_path, "t", "fifo", spec, SETTINGS, [solo])


def test_a_run_config_refuses_a_cluster_that_is_not_a_cluster_text():
    with pytest.raises(TypeError, match="RunConfig.cluster 2: expected ClusterSpec.parse text such as 'v100:64'"):
        experiment.RunConfig("t", "fifo", 0, 2, 1.0)
    assert experiment.RunConfig("t", "fifo", 0, "v100:2,k80:2").cluster_spec().total_gpus == 4


def test_a_utilization_series_of_too_many_bins_is_refused_not_looped_over():
    from coloc.sim.metrics import utilization_series

    timeline = pd.DataFrame({"time": [0.0, 5e4], "busy_gpus": [1, 0], "effective_gpus": [1.0, 0.0]})
    with pytest.raises(ValueError, match=r"util_bin_s = 0.001 s over a run of 50000 s gives 5e\+07 bins; expected at most"):
        utilization_series(timeline, 4, 0.001)
    assert len(utilization_series(timeline, 4, 3600.0)) == 14
