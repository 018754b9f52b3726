"""The comparison's arithmetic, without processes: the predictions, the comparison table, the measured sets."""
import pandas as pd
import pytest

from coloc.testbed import compare


def test_a_pair_prediction_never_sees_its_own_measurement():
    base = pd.DataFrame({"device": "d", "workload_a": ["a", "a", "a", "b", "b", "c"],
                         "workload_b": ["a", "b", "c", "b", "c", "c"], "norm_a": [.5, .6, .7, .4, .8, .9],
                         "norm_b": [.5, .3, .2, .4, .6, .9], "feasible": True})
    changed = base.copy()
    changed.loc[1, ["norm_a", "norm_b"]] = [0.05, 0.99]  # the pair (a, b) measured otherwise
    before, after = compare.out_of_fold_norms(base), compare.out_of_fold_norms(changed)
    assert before[("d", "a", "b")] == after[("d", "a", "b")] and before[("d", "b", "a")] == after[("d", "b", "a")]
    assert before[("d", "a", "c")] != after[("d", "a", "c")]  # the other pairs' fits do see it


def test_the_comparison_table_by_hand():
    real = {"p": pd.DataFrame({"job_id": [0, 1], "workload": "w", "jct": [10.0, 20.0], "submit_time": 0.0,
                               "finish_time": [10.0, 20.0]}),
            "q": pd.DataFrame({"job_id": [0, 1], "workload": "w", "jct": [12.0, 30.0], "submit_time": 0.0,
                               "finish_time": [12.0, 30.0]})}
    sims = {"sim": {"p": pd.DataFrame({"job_id": [0, 1], "jct": [11.0, 16.0], "submit_time": 0.0,
                                       "finish_time": [11.0, 16.0]}),
                    "q": pd.DataFrame({"job_id": [0, 1], "jct": [6.0, 30.0], "submit_time": 0.0,
                                       "finish_time": [6.0, 30.0]})}}
    table = compare.table(real, sims).set_index("policy")
    assert table.loc["p", "jct_mean_error"] == pytest.approx(13.5 / 15 - 1)
    assert table.loc["p", "makespan_error"] == pytest.approx(16 / 20 - 1)
    assert table.loc["p", "ratio_median"] == pytest.approx((1.1 + 0.8) / 2)
    assert table.loc["q", "ratio_p10"] == pytest.approx(0.5 + 0.1 * 0.5)
    assert table.loc[["p", "q"], "rank_real"].tolist() == [1, 2]
    assert table.loc[["p", "q"], "rank_sim"].tolist() == [1, 2]
    assert compare.disagreements(compare.table(real, sims)) == []
    sims["sim"]["q"]["jct"] = [5.0, 10.0]
    assert compare.disagreements(compare.table(real, sims)) == [
        "sim: p vs q: real 15.0 s vs 21.0 s, simulated 13.5 s vs 7.5 s"]


def test_a_measured_set_of_three_replaces_the_product_of_its_pairs_and_only_it():
    solo = pd.DataFrame({"device": "d", "workload": ["a", "b", "c"], "throughput": 1.0})
    pairs = pd.DataFrame({"device": "d", "workload_a": ["a", "a", "a", "b", "b", "c"],
                          "workload_b": ["a", "b", "c", "b", "c", "c"], "norm_a": [.5, .6, .7, .4, .8, .9],
                          "norm_b": [.5, .3, .2, .4, .6, .9], "feasible": True})
    sets = pd.DataFrame({"device": "d", "set": "a+b+c", "workload": ["a", "b", "c"], "partners": ["b+c", "a+c", "a+b"],
                         "norm": [0.25, 0.2, 0.15], "feasible": True})
    truth = compare.MeasuredSets(solo, pairs, sets, "d")
    assert truth.norm("d", "a", ("c", "b")) == 0.25 and truth.norm("d", "c", ("a", "b")) == 0.15
    assert truth.norm("d", "a", ("b", "b")) == pytest.approx(0.6 * 0.6)  # not measured: the product of pairs
    assert truth.norm("d", "a", ("b",)) == 0.6 and truth.used_sets == {("d", "a", ("b", "c")), ("d", "c", ("a", "b"))}
