"""The predictors' error metrics by hand: the scores of one set of predictions, the score table by group."""
import numpy as np
import pandas as pd
import pytest

from coloc.predict.metrics import rmsle, score_table, scores


def test_scores_against_hand_computed_values():
    y, p = np.array([0.5, 1.0, 0.25, 0.8]), np.array([0.6, 0.9, 0.25, 0.4])
    s = scores(y, p)
    assert s["MAE"] == pytest.approx((0.1 + 0.1 + 0 + 0.4) / 4)
    assert s["MAPE"] == pytest.approx(100 * (0.2 + 0.1 + 0 + 0.5) / 4)
    assert s["max_error"] == pytest.approx(0.4)
    assert s["R2"] == pytest.approx(1 - np.sum((p - y) ** 2) / np.sum((y - y.mean()) ** 2))
    assert s["RMSLE"] == pytest.approx(np.sqrt(np.mean((np.log1p(p) - np.log1p(y)) ** 2)))
    assert rmsle([0.1], [-1.0]) == pytest.approx(np.log1p(0.1))  # negative predictions clip to 0
    with pytest.raises(ValueError, match="NaN"):
        scores([0.5], [np.nan])


def test_score_table_counts_a_self_pairs_two_jobs_and_groups_by_job_family():
    """coloc.pairs.directed's rule: a self-pair's two jobs are two samples (each with its own label)."""
    pred = pd.DataFrame({
        "predictor": "p", "seed": 0, "device": ["k80", "k80"], "workload_a": ["aa-x-b8", "aa-x-b8"],
        "workload_b": ["aa-x-b8", "bb-y-b4"], "norm_a": [0.5, 0.5], "norm_b": [0.4, 0.4],
        "pred_norm_a": [0.5, 0.55], "pred_norm_b": [0.5, 0.2]})
    table = score_table(pred, ["predictor", "seed"]).set_index(["scope", "key"])
    assert table.loc[("overall", "all"), "n"] == 4
    # family aa: the self-pair's jobs (errors 0 and 25%) and job a of the second pair (10%)
    assert table.loc[("family", "aa"), "n"] == 3
    assert table.loc[("family", "aa"), "MAPE"] == pytest.approx((0 + 25 + 10) / 3)
    assert table.loc[("family", "bb"), "MAPE"] == pytest.approx(50.0)
    assert table.loc[("device", "k80"), "max_error"] == pytest.approx(0.2)
