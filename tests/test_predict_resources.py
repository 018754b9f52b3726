"""Co-located resource predictions (coloc.predict.resources) on tiny profiled-like tables built from Gavel's."""

import numpy as np
import pandas as pd
import pytest
import torch

from coloc.datasets import load_gavel
from coloc.devices import device_table
from coloc.predict import Tables
from coloc.predict.protocols import folds
from coloc.predict.resources import (
    NoResources,
    ResourceEGGAT,
    evaluate_resources,
    labelled_pairs,
    measured_resources,
    resource_scores,
)

NAMES = ["resnet18-cifar10-b32", "resnet18-cifar10-b128", "lm-wikitext2-b10", "lm-wikitext2-b40",
         "recommendation-ml20m-b1024"]
CPU = "cpu:Test CPU x2"
TINY = {"hidden": 8, "heads": 2, "layers": 1, "max_epochs": 3, "patience": 2, "batch_size": 4, "edge": "constant"}


@pytest.fixture(scope="module")
def gavel_tables(mirror, workloads_of) -> Tables:
    torch.set_num_threads(1)
    solo, pairs = load_gavel(mirror / "gavel" / "simulation_throughputs.json")
    solo = solo[(solo["device"] == "k80") & solo["workload"].isin(NAMES)].reset_index(drop=True)
    pairs = pairs[(pairs["device"] == "k80") & pairs["workload_a"].isin(NAMES)
                  & pairs["workload_b"].isin(NAMES)].reset_index(drop=True)
    return Tables(workloads_of(NAMES), solo, pairs, device_table(["k80"]))


@pytest.fixture(scope="module")
def profiled(gavel_tables) -> Tables:
    """The same jobs on a CPU, with made-up per-job CPU utilization and memory, solo and in pairs."""
    solo = gavel_tables.solo.assign(device=CPU)
    solo["cpu_util"] = 60.0 + 5 * np.arange(len(solo))
    solo["mem_bytes"] = 1e8 * (1 + np.arange(len(solo)))
    pairs = gavel_tables.pairs[gavel_tables.pairs["feasible"]].reset_index(drop=True).assign(device=CPU)
    use = solo.set_index("workload")
    for side in ("a", "b"):
        pairs[f"cpu_util_{side}"] = use.loc[pairs[f"workload_{side}"], "cpu_util"].to_numpy() * pairs[f"norm_{side}"]
        pairs[f"mem_bytes_{side}"] = use.loc[pairs[f"workload_{side}"], "mem_bytes"].to_numpy() * 1.05
    return Tables(gavel_tables.workloads, solo, pairs, device_table([CPU]))


def test_gavel_tables_have_no_resources_and_say_so(gavel_tables):
    with pytest.raises(NoResources, match=r"no per-job resource columns.*solo has \['device', 'workload', 'throughput'"):
        measured_resources(gavel_tables)


def test_resources_are_the_columns_measured_solo_and_in_pairs(profiled):
    assert measured_resources(profiled) == ["cpu_util", "mem_bytes"]
    no_mem = profiled.with_pairs(profiled.pairs.drop(columns=["mem_bytes_a", "mem_bytes_b"]))
    assert measured_resources(no_mem) == ["cpu_util"]


def test_targets_are_co_located_over_solo_use(profiled):
    model = ResourceEGGAT()
    model.resources_ = ["cpu_util", "mem_bytes"]
    pairs = labelled_pairs(profiled, model.resources_)
    y = model._targets(pairs, profiled).numpy()
    assert y.shape == (len(pairs), 2, 2)
    np.testing.assert_allclose(y[:, 0, 0], pairs["norm_a"], rtol=1e-5)  # cpu_util_a = solo x norm_a
    np.testing.assert_allclose(y[:, :, 1], 1.05, rtol=1e-5)


def test_pairs_without_a_finite_positive_use_are_no_labels(profiled):
    pairs = profiled.pairs.copy()
    pairs.loc[0, "cpu_util_b"] = np.nan
    pairs.loc[1, "mem_bytes_a"] = 0.0
    kept = labelled_pairs(profiled.with_pairs(pairs), ["cpu_util", "mem_bytes"])
    assert len(kept) == len(pairs) - 2


def test_scores_are_mean_and_max_relative_error():
    predictions = pd.DataFrame({"dataset": "profiled", "protocol": "random5", "predictor": "egat", "seed": 0,
                                "resource": "cpu_util", "use": [50.0, 40.0, 80.0], "pred_use": [55.0, 40.0, 60.0]})
    row = resource_scores(predictions).iloc[0]
    # errors 10 %, 0 %, 25 %: mean 11.667 %, max 25 %
    assert (row.mean_error_pct, row.max_error_pct, row.n) == (pytest.approx(35 / 3), pytest.approx(25.0), 3)


def test_out_of_fold_use_is_the_ratio_times_solo_use_and_never_sees_the_test_labels(profiled):
    notes = []
    out = evaluate_resources(profiled, "profiled", "random5", [0], k=3, options=TINY, notes=notes)
    assert not notes
    n_pairs = len(labelled_pairs(profiled, ["cpu_util", "mem_bytes"]))
    assert len(out) == n_pairs * 2 * 2 * 2  # pairs x jobs x resources x predictors (egat, mean)
    assert np.isfinite(out["pred_use"]).all() and (out["pred_use"] > 0).all()
    mean = out[(out["predictor"] == "mean") & (out["resource"] == "mem_bytes")]
    np.testing.assert_allclose(mean["pred_use"], mean["solo"] * 1.05, rtol=1e-5)

    fold = folds(profiled, "random5", 0, 3)[0]
    changed = profiled.pairs.copy()
    test_rows = changed.merge(fold.test[["workload_a", "workload_b"]]).index
    assert len(test_rows) > 0
    model = ResourceEGGAT(seed=0, **TINY).fit(fold.train)
    queries = pd.DataFrame({"device": [CPU], "workload": [fold.test.iloc[0].workload_a],
                            "co_runners": [(fold.test.iloc[0].workload_b,)]})
    changed_tables = profiled.with_pairs(changed.assign(cpu_util_a=changed["cpu_util_a"] * 3))
    ratios = model.predict_ratios(queries, profiled)
    assert ratios.equals(model.predict_ratios(queries, changed_tables))  # the context's pair labels are unused
    use = model.predict_use(queries, profiled)
    solo = profiled.solo.set_index("workload").loc[queries.workload[0], ["cpu_util", "mem_bytes"]].to_numpy(float)
    np.testing.assert_allclose(use.to_numpy()[0], ratios.to_numpy()[0] * solo)
