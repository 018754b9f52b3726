"""What predictive policies read: symmetric lookups, one prediction seed, repeated folds averaged."""
import math

import pandas as pd
import pytest
from sim_cases import ABC, truth_abc

from coloc.sim import Predictions
from coloc.sim.experiment import parse_policy
from coloc.sim.predictions import TOLERANCE


def frame(rows):
    return pd.DataFrame(rows, columns=["device", "workload_a", "workload_b", "predictor", "seed",
                                       "pred_norm_a", "pred_norm_b", "pred_std_a", "pred_std_b"])


def test_lookups_are_symmetric_and_seeded():
    rows = frame([("v100", "a", "b", "p", 0, 0.5, 0.7, 0.1, 0.2),
                  ("v100", "b", "a", "p", 1, 0.9, 0.3, math.nan, math.nan),   # other seed, swapped columns
                  ("v100", "a", "b", "q", 0, 0.1, 0.1, 0.0, 0.0)])
    seed0 = Predictions.from_frames(rows, None, "p", None, seed=0)
    assert (seed0.norm("v100", "a", "b"), seed0.norm("v100", "b", "a")) == (0.5, 0.7)
    assert (seed0.std("v100", "a", "b"), seed0.std("v100", "b", "a")) == (0.1, 0.2)
    seed1 = Predictions.from_frames(rows, None, "p", None, seed=1)
    assert (seed1.norm("v100", "a", "b"), seed1.norm("v100", "b", "a")) == (0.3, 0.9)
    assert seed1.std("v100", "a", "b") == 0.0  # no spread given
    assert Predictions.from_frames(rows, None, "p", None, seed=7).norm("v100", "a", "b") == 0.5  # smallest seed


def test_repeated_out_of_fold_rows_are_averaged_and_clipped():
    over = 1 + TOLERANCE / 2  # within the stated tolerance above 1: clipped to 1
    rows = frame([("v100", "a", "b", "p", 0, 0.4, over, 0.0, 0.0),
                  ("v100", "a", "b", "p", 0, 0.6, 1.0, 0.0, 0.0),
                  ("v100", "c", "c", "p", 0, 0.8, 0.6, 0.0, 0.0),
                  ("v100", "b", "c", "p", 0, math.nan, math.nan, 0.0, 0.0)])
    preds = Predictions.from_frames(rows, None, "p", None)
    assert preds.norm("v100", "a", "b") == pytest.approx(0.5)
    assert preds.norm("v100", "b", "a") == 1.0  # clipped: sharing never speeds a job up
    assert preds.norm("v100", "c", "c") == pytest.approx(0.7)
    with pytest.raises(KeyError, match="pair=\\('b', 'c'\\)"):
        preds.norm("v100", "b", "c")
    missing = preds.missing_pairs(truth_abc(), "v100", ["a", "b", "c"])
    assert ("a", "a") in missing and ("b", "c") in missing and ("a", "b") not in missing
    with pytest.raises(ValueError, match=r"lack 4 feasible pairs on v100 used by the trace, e\.g\. \('a', 'a'\): "
                                         r"no row; \('a', 'c'\): no row; \('b', 'b'\): no row; \('b', 'c'\): NaN"):
        preds.require_pairs(truth_abc(), "v100", ["a", "b", "c"])
    preds.require_pairs(truth_abc(), "v100", ["c"])  # c with c predicted; the pairs with a and b are not used


def test_unknown_predictor_and_bad_utilization_are_named():
    rows = frame([("v100", "a", "b", "p", 0, 0.4, 0.4, 0.0, 0.0)])
    with pytest.raises(ValueError, match="no rows for predictor 'zzz'; have \\['p'\\]"):
        Predictions.from_frames(rows, None, "zzz", None)
    util = pd.DataFrame({"device": ["v100"], "workload": ["a"], "predictor": ["h"], "pred_util": [math.nan]})
    with pytest.raises(ValueError, match="predictor 'h': \\('v100', 'a'\\): pred_util = nan; expected a utilization"):
        Predictions.from_frames(None, util, None, "h")


def test_oracle_predictions_are_the_measured_pairs():
    preds = Predictions.from_truth(truth_abc())
    assert preds.oracle and preds.source.startswith("ORACLE")
    assert preds.norm("v100", "b", "c") == ABC[("b", "c")][0]
    assert preds.norm("v100", "c", "b") == ABC[("b", "c")][1]


def test_policy_names_may_carry_a_predictor():
    assert parse_policy("coloc~lgbm", "egat") == ("coloc", "lgbm")
    assert parse_policy("isacpp", "egat") == ("isacpp", "egat")
