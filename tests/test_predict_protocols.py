"""Cross-validation protocols and error metrics (no model fitting: fast)."""

import itertools

import numpy as np
import pandas as pd
import pytest

from coloc.datasets import family_of
from coloc.devices import device_table
from coloc.predict.base import Tables, pair_labels, pair_queries
from coloc.predict.protocols import ProtocolSkipped, derived_seed, folds, util_folds

WORKLOADS = ["aa-x-b8", "aa-x-b16", "bb-y-b4", "bb-y-b8", "cc-z-b2"]
DEVICES = ["k80", "v100"]


def synthetic_tables(devices=DEVICES, names=WORKLOADS, infeasible=("bb-y-b8", "cc-z-b2")) -> Tables:
    """Made-up tables with the contracts' columns (for protocol mechanics only)."""
    rng = np.random.default_rng(0)
    workloads = pd.DataFrame({"workload": names, "family": [family_of(w) for w in names],
                              "batch_size": [int(w.rsplit("-b", 1)[1]) for w in names],
                              "flops_step": rng.uniform(1e9, 1e11, len(names))})
    solo = pd.DataFrame([{"device": d, "workload": w, "throughput": rng.uniform(1, 10)} for d in devices for w in names])
    rows = []
    for d in devices:
        for a, b in itertools.combinations_with_replacement(names, 2):
            feasible = (a, b) != infeasible
            na, nb = (rng.uniform(0.3, 1), rng.uniform(0.3, 1)) if feasible else (np.nan, np.nan)
            rows.append({"device": d, "workload_a": a, "workload_b": b, "tput_a": 1.0, "tput_b": 1.0,
                         "norm_a": na, "norm_b": nb, "feasible": feasible})
    return Tables(workloads, solo, pd.DataFrame(rows), device_table(devices))


def pair_keys(frame):
    return set(zip(frame["device"], frame["workload_a"], frame["workload_b"], strict=True))


def test_random_folds_partition_the_feasible_pairs():
    tables = synthetic_tables()
    feasible = pair_keys(tables.pairs[tables.pairs["feasible"]])
    fs = folds(tables, "random5", seed=3)
    assert len(fs) == 5
    tests = [pair_keys(f.test) for f in fs]
    assert set().union(*tests) == feasible and sum(map(len, tests)) == len(feasible)
    for f in fs:
        assert not pair_keys(f.train.pairs) & pair_keys(f.test)
        assert f.test["feasible"].all()
        assert len(f.train.workloads) == len(WORKLOADS)  # every job type stays known
    again = folds(tables, "random5", seed=3)
    other = folds(tables, "random5", seed=4)
    assert [pair_keys(f.test) for f in again] == tests
    assert [pair_keys(f.test) for f in other] != tests


def test_leave_one_family_out_removes_the_family_everywhere():
    tables = synthetic_tables()
    fs = folds(tables, "lofo")
    assert [f.held_out for f in fs] == ["aa", "bb", "cc"]
    for f in fs:
        fam = f.held_out
        touching = tables.pairs[tables.pairs["feasible"] & (
            (tables.pairs["workload_a"].map(family_of) == fam) | (tables.pairs["workload_b"].map(family_of) == fam))]
        assert pair_keys(f.test) == pair_keys(touching)
        assert fam not in set(f.train.workloads["family"])
        assert fam not in set(f.train.solo["workload"].map(family_of))
        assert fam not in set(f.train.pairs["workload_a"].map(family_of)) | set(f.train.pairs["workload_b"].map(family_of))


def test_leave_one_job_type_out_keeps_the_rest_of_its_family():
    tables = synthetic_tables()
    fs = folds(tables, "lojo")
    assert [f.held_out for f in fs] == sorted(WORKLOADS)
    for f in fs:
        job = f.held_out
        touching = tables.pairs[tables.pairs["feasible"] & ((tables.pairs["workload_a"] == job)
                                                            | (tables.pairs["workload_b"] == job))]
        assert pair_keys(f.test) == pair_keys(touching)
        trained = set(f.train.pairs["workload_a"]) | set(f.train.pairs["workload_b"])
        assert job not in set(f.train.workloads["workload"]) | set(f.train.solo["workload"]) | trained
        assert set(WORKLOADS) - {job} == set(f.train.workloads["workload"])  # its family's other job types stay


def test_cross_device_trains_on_the_other_devices():
    tables = synthetic_tables(devices=["k80", "p100", "v100"])
    fs = folds(tables, "xdevice")
    assert [f.held_out for f in fs] == ["k80", "p100", "v100"]
    for f in fs:
        assert set(f.test["device"]) == {f.held_out}
        assert f.held_out not in set(f.train.solo["device"]) | set(f.train.pairs["device"]) | set(f.train.devices["name"])


def test_protocols_that_do_not_apply_say_why():
    with pytest.raises(ProtocolSkipped, match="need at least 2"):
        folds(synthetic_tables(devices=["v100"]), "xdevice")
    with pytest.raises(ProtocolSkipped, match="1 family"):
        folds(synthetic_tables(names=["aa-x-b8", "aa-x-b16"], infeasible=()), "lofo")
    with pytest.raises(ProtocolSkipped, match="1 job type"):
        folds(synthetic_tables(names=["aa-x-b8"], infeasible=()), "lojo")
    with pytest.raises(KeyError, match="unknown protocol"):
        folds(synthetic_tables(), "random10")


def test_utilization_folds_hold_out_whole_job_types():
    tables = synthetic_tables()
    fs = util_folds(tables, "random5", seed=1)
    held = [set(f.test["workload"]) for f in fs]
    assert set().union(*held) == set(WORKLOADS) and sum(map(len, held)) == len(WORKLOADS)
    for f in fs:
        assert not set(f.train.solo["workload"]) & set(f.test["workload"])
        assert set(f.test["device"]) == set(DEVICES)  # a job type is held out on every device
    for f in util_folds(tables, "xdevice"):
        assert set(f.train.solo["device"]) == set(DEVICES) - {f.held_out}
    lojo = util_folds(tables, "lojo")
    assert [set(f.test["workload"]) for f in lojo] == [{w} for w in sorted(WORKLOADS)]
    assert all(f.held_out not in set(f.train.solo["workload"]) for f in lojo)


def test_derived_seeds_are_stable_and_distinct():
    assert derived_seed(0, "a") == derived_seed(0, "a")
    assert len({derived_seed(0, "a"), derived_seed(0, "b"), derived_seed(1, "a")}) == 3


def test_pair_labels_skip_infeasible_pairs_and_keep_both_jobs():
    tables = synthetic_tables()
    labels = pair_labels(tables.pairs)
    n = int(tables.pairs["feasible"].sum())
    assert len(labels) == 2 * n and np.isfinite(labels["norm"]).all()
    feasible = tables.pairs[tables.pairs["feasible"]].reset_index(drop=True)
    assert labels.loc[0, "co_runners"] == (feasible.loc[0, "workload_b"],)
    assert labels.loc[n, "workload"] == feasible.loc[0, "workload_b"] and labels.loc[n, "norm"] == feasible.loc[0, "norm_b"]
    assert len(pair_queries(feasible)) == 2 * n


@pytest.mark.parametrize("groups", [None, "family", "workload", "device"])
def test_inner_folds_fill_every_row_once_and_never_fit_on_its_pair(groups):
    from coloc.predict.protocols import inner_folds

    tables = synthetic_tables()
    pairs = tables.pairs[tables.pairs["feasible"]].reset_index(drop=True)
    n = len(pairs)
    parts = inner_folds(pairs, groups, seed=0, k=4, name="test")
    filled = np.sum([fill for _, fill in parts], axis=0)
    assert filled.tolist() == [1] * (2 * n)
    jobs = pd.concat([pairs["workload_a"], pairs["workload_b"]], ignore_index=True)
    for fit_pairs, fill in parts:
        rows_pair = np.flatnonzero(fill) % n
        assert not fit_pairs[rows_pair].any()  # a row's own pair is never fitted on
        if groups == "family":  # the filled jobs' family is absent from the fit pairs
            fam = {family_of(w) for w in jobs[fill]}
            fitted = pairs[fit_pairs]
            assert not fam & (set(fitted["workload_a"].map(family_of)) | set(fitted["workload_b"].map(family_of)))
        if groups == "workload":  # the filled jobs' job types are absent from the fit pairs
            fitted = pairs[fit_pairs]
            assert not set(jobs[fill]) & (set(fitted["workload_a"]) | set(fitted["workload_b"]))
        if groups == "device":
            assert not set(pairs.loc[rows_pair, "device"]) & set(pairs.loc[fit_pairs, "device"])
    if groups == "workload":  # job types dealt into at most k folds, not one fit per job type
        assert len(parts) == 4


# ---------------------------------------------------------------------------- cross-dataset (xdataset)

GAVEL_LIKE = ["aa-x-b8", "aa-x-b16", "bb-y-b4", "cc-z-b2"]  # cc: this source's only
LUCID_LIKE = ["aa-x-b32", "bb-y-b4", "bb-y-b64", "dd-w-b8"]  # dd: this source's only; bb-y-b4 in both


def two_sources() -> Tables:
    """Two made-up sources (Gavel-like on two GPUs, Lucid-like on one) joined as the cross dataset is."""
    from coloc.datasets.gavel_lucid import cross_tables

    first = synthetic_tables(devices=["k80", "v100"], names=GAVEL_LIKE, infeasible=("aa-x-b16", "cc-z-b2"))
    second = synthetic_tables(devices=["rtx3090"], names=LUCID_LIKE, infeasible=())
    solo, pairs = cross_tables((first.solo, first.pairs), (second.solo, second.pairs))
    workloads = pd.concat([first.workloads, second.workloads]).drop_duplicates("workload").reset_index(drop=True)
    return Tables(workloads, solo, pairs, device_table(["k80", "v100", "rtx3090"]))


def test_cross_tables_keep_the_families_both_sources_measured_in_pairs():
    from coloc.datasets.gavel_lucid import cross_tables

    first = synthetic_tables(devices=["k80"], names=GAVEL_LIKE, infeasible=())
    second = synthetic_tables(devices=["rtx3090"], names=LUCID_LIKE, infeasible=())
    # a family the second source measured alone only (as Lucid's BERT) is not shared either
    second_solo = pd.concat([second.solo, pd.DataFrame({"device": ["rtx3090"], "workload": ["cc-z-b2"],
                                                        "throughput": [1.0]})], ignore_index=True)
    solo, pairs = cross_tables((first.solo, first.pairs), (second_solo, second.pairs))
    for frame in (pairs["workload_a"], pairs["workload_b"], solo["workload"]):
        assert set(frame.map(family_of)) == {"aa", "bb"}
    assert set(solo.loc[solo["source"] == "gavel", "workload"]) == {"aa-x-b8", "aa-x-b16", "bb-y-b4"}
    assert set(solo.loc[solo["source"] == "lucid", "workload"]) == {"aa-x-b32", "bb-y-b4", "bb-y-b64"}
    assert dict(pairs.groupby("source")["device"].unique().map(list)) == {"gavel": ["k80"], "lucid": ["rtx3090"]}
    # every pair of the shared families' three job types on each side is kept (3 + 2 + 1, self-pairs included)
    assert (pairs["source"] == "gavel").sum() == (pairs["source"] == "lucid").sum() == 6


def test_cross_dataset_holds_out_each_source_in_turn_and_trains_on_the_other():
    tables = two_sources()
    devices = {"gavel": {"k80", "v100"}, "lucid": {"rtx3090"}}
    fs = folds(tables, "xdataset")
    assert [f.held_out for f in fs] == ["gavel", "lucid"]  # both directions
    for f in fs:
        held, other = devices[f.held_out], set().union(*(d for s, d in devices.items() if s != f.held_out))
        assert set(f.test["device"]) == held and set(f.test["source"]) == {f.held_out}
        feasible = tables.pairs[tables.pairs["feasible"] & tables.pairs["device"].isin(held)]
        assert pair_keys(f.test) == pair_keys(feasible)  # every feasible pair of the held-out source is tested
        assert f.test["feasible"].all()
        for trained in (f.train.pairs["device"], f.train.solo["device"], f.train.devices["name"]):
            assert set(trained) == other  # none of the held-out source's devices reach the fit
        assert set(f.train.pairs["source"]) == set(f.train.solo["source"]) == set(devices) - {f.held_out}
        trained = (set(f.train.pairs["workload_a"]) | set(f.train.pairs["workload_b"])
                   | set(f.train.solo["workload"]))
        assert {family_of(w) for w in trained | set(f.test["workload_a"]) | set(f.test["workload_b"])} == {"aa", "bb"}


def test_cross_dataset_utilization_folds_hold_out_a_source_s_solo_rows():
    tables = two_sources()
    fs = util_folds(tables, "xdataset")
    assert [f.held_out for f in fs] == ["gavel", "lucid"]
    for f in fs:
        held = tables.solo[tables.solo["source"] == f.held_out]
        assert set(zip(f.test["device"], f.test["workload"], strict=True)) == set(zip(held["device"], held["workload"], strict=True))
        assert not set(f.train.solo["device"]) & set(held["device"])
        assert not set(f.train.pairs["device"]) & set(held["device"])
        assert set(f.train.solo["source"]) == {"gavel", "lucid"} - {f.held_out}


def test_cross_dataset_on_one_source_says_why():
    with pytest.raises(ProtocolSkipped, match="no 'source' column"):
        folds(synthetic_tables(), "xdataset")
    tables = two_sources()
    one = Tables(tables.workloads, tables.solo.assign(source="gavel"), tables.pairs.assign(source="gavel"),
                 tables.devices)
    with pytest.raises(ProtocolSkipped, match="one data source only"):
        folds(one, "xdataset")
    with pytest.raises(ProtocolSkipped, match="one data source only"):
        util_folds(one, "xdataset")
    shared = tables.pairs.copy()
    shared.loc[shared.index[0], "device"] = "rtx3090"  # a Gavel row on Lucid's device
    with pytest.raises(ProtocolSkipped, match="two sources"):
        folds(Tables(tables.workloads, tables.solo, shared, tables.devices), "xdataset")


def test_dataset_protocols_keep_the_cross_protocol_apart_and_a_dataset_s_own_list():
    from coloc.predict.stage import dataset_protocols

    protocols = ["random5", "lofo", "xdevice", "xdataset", "lofo-probe-0"]
    assert dataset_protocols("gavel", protocols) == ["random5", "lofo", "xdevice", "lofo-probe-0"]
    assert dataset_protocols("gavel-lucid", protocols) == ["xdataset"]
    only = {"lucid": ["lofo", "random5"]}
    assert dataset_protocols("lucid", protocols, only) == ["random5", "lofo"]  # in the configured order
    assert dataset_protocols("gavel", protocols, only) == ["random5", "lofo", "xdevice", "lofo-probe-0"]
    with pytest.raises(ValueError, match="dataset_protocols.lucid.*lojo"):
        dataset_protocols("lucid", protocols, {"lucid": ["lojo"]})
