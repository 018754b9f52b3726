"""coloc.pairs: a pair gives two directed rows (job a next to job b, then job b next to job a), a self-pair too; a
keyed mean averages the rows that share a key."""
import pandas as pd
import pytest

from coloc.pairs import directed, keyed_mean, twin_columns


def two_pairs() -> pd.DataFrame:
    """x next to y and x next to x, on a K80, at rows 5 and 9 (a filtered table's index)."""
    return pd.DataFrame({"device": "k80", "workload_a": ["x", "x"], "workload_b": ["y", "x"], "norm_a": [0.5, 0.6],
                         "norm_b": [0.7, 0.8], "pred_a": [0.4, 0.6], "pred_b": [0.9, 0.6], "feasible": True},
                        index=[5, 9])


def test_a_pair_gives_job_a_then_job_b_and_a_self_pair_gives_two_rows():
    rows = directed(two_pairs())
    assert twin_columns(two_pairs()) == ["norm", "pred"]
    assert list(rows.index) == [0, 1, 2, 3]
    assert rows[["device", "workload", "other", "norm", "pred", "feasible"]].values.tolist() == [
        ["k80", "x", "y", 0.5, 0.4, True], ["k80", "x", "x", 0.6, 0.6, True],
        ["k80", "y", "x", 0.7, 0.9, True], ["k80", "x", "x", 0.8, 0.6, True]]


def test_a_table_without_both_job_columns_is_refused_naming_the_column():
    with pytest.raises(KeyError, match=r"pairs table: missing column 'workload_b'; has \['device', 'workload_a'\]"):
        directed(pd.DataFrame({"device": ["k80"], "workload_a": ["x"]}))


def test_a_keyed_mean_averages_the_rows_of_a_key():
    rows = directed(two_pairs())  # the self-pair's two jobs share the key (k80, x, x): 0.6 and 0.8
    assert keyed_mean(rows, "norm") == pytest.approx({("k80", "x", "x"): 0.7, ("k80", "x", "y"): 0.5,
                                                      ("k80", "y", "x"): 0.7})
    assert keyed_mean(rows, ["norm", "pred"]) == {("k80", "x", "x"): pytest.approx((0.7, 0.6)),
                                                 ("k80", "x", "y"): pytest.approx((0.5, 0.4)),
                                                 ("k80", "y", "x"): pytest.approx((0.7, 0.9))}
