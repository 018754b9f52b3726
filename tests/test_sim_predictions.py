"""What predictive policies read: symmetric lookups, one prediction seed, repeated folds averaged."""
import math

import pandas as pd
import pytest
from sim_cases import ABC, tables, trace, truth_abc

from coloc.sim import Predictions
from coloc.sim.predictions import TOLERANCE
from coloc.studies import experiment


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


@pytest.mark.parametrize("column, value", [("pred_norm_a", -0.2), ("pred_norm_b", 0.0), ("pred_norm_a", 2.5),
                                           ("pred_norm_b", math.inf), ("pred_std_a", -0.1)])
def test_absurd_predictions_are_refused_naming_file_predictor_pair_and_value(tmp_path, column, value):
    rows = frame([("v100", "a", "b", "p", 0, 0.5, 0.7, 0.1, 0.1), ("v100", "a", "c", "p", 0, 0.6, 0.8, 0.1, 0.1)])
    rows.loc[1, column] = value
    path = tmp_path / "predictions_lofo.parquet"
    rows.to_parquet(path)
    with pytest.raises(ValueError) as refused:
        Predictions.from_files(path, None, "p", None)
    message = str(refused.value)
    assert str(path) in message and "predictor 'p'" in message and "('v100', 'a', 'c')" in message
    assert f"{column} = {value}; expected" in message


def test_absurd_utilization_is_refused():
    util = pd.DataFrame({"device": "v100", "workload": ["a", "b"], "predictor": "h", "pred_util": [0.4, -0.3]})
    with pytest.raises(ValueError, match=r"predictor 'h': \('v100', 'b'\): pred_util = -0.3; expected a utilization"):
        Predictions.from_frames(None, util, None, "h", source="utilization_lofo.parquet")


def run_config(policy="isacpp", **kwargs):
    return experiment.RunConfig("t", policy, 0, "v100:2", 1.0, predictor_norm="p", predictor_util="h", **kwargs)


def test_a_nan_prediction_for_a_feasible_pair_the_run_uses_is_refused():
    solo, pairs = tables(ABC)
    rows = [(d, a, b, "p", 0, na - 0.1, nb - 0.1, 0.0, 0.0) for (a, b), (na, nb) in ABC.items() for d in ["v100"]]
    rows[4] = ("v100", "b", "c", "p", 0, math.nan, math.nan, 0.0, 0.0)
    preds = Predictions.from_frames(frame(rows), None, "p", None, source="predictions_lofo.parquet")
    table = trace([(i, 10.0 * i, 100.0, 1, "bc"[i % 2]) for i in range(6)]).assign(cluster="x")
    with pytest.raises(ValueError, match=r"predictions_lofo.parquet\) lack 1 feasible pairs on v100 used by the "
                                         r"trace, e\.g\. \('b', 'c'\): NaN"):
        experiment.run(run_config("coloc"), {"source": "philly"}, solo, pairs, table, preds)


def test_a_utilization_file_given_but_missing_is_an_error_for_a_policy_that_reads_it(tmp_path, monkeypatch):
    # no registered policy reads utilization optionally today: isacpp is made to, for this test only
    from coloc.policies.isacpp import Isacpp
    monkeypatch.setattr(Isacpp, "optional", ("util",))
    norm = tmp_path / "predictions_lofo.parquet"
    frame([("v100", "a", "b", "p", 0, 0.5, 0.7, 0.0, 0.0)]).to_parquet(norm)
    missing = tmp_path / "utilization_lofo.parquet"
    with pytest.raises(FileNotFoundError, match="'isacpp' is given, and would use, the out-of-fold util predictions "
                                                "file .*utilization_lofo.parquet'?, which does not exist"):
        experiment.load_predictions(run_config("isacpp"), norm, missing)
    assert not experiment.load_predictions(run_config("isacpp"), norm, "").has_util()  # none given: none used
    assert experiment.load_predictions(run_config("fifo"), norm, missing) is None     # fifo reads neither
    with pytest.raises(FileNotFoundError, match="'horus' needs the out-of-fold util"):
        experiment.load_predictions(run_config("horus"), norm, missing)


def test_a_policy_naming_its_protocol_reads_only_that_protocols_file(tmp_path):
    folder = tmp_path / "gavel"
    folder.mkdir()
    for protocol in ("lofo", "random5"):
        frame([("v100", "a", "b", "p", 0, 0.5, 0.7, 0.0, 0.0)]).to_parquet(folder / f"{protocol}.parquet")
    config = run_config("coloc@random5", protocol="random5")
    assert experiment.load_predictions(config, folder / "random5.parquet", "").has_norm()
    with pytest.raises(ValueError, match=r"'coloc@random5' reads 'random5' predictions, but its norm file .*lofo.parquet"):
        experiment.load_predictions(config, folder / "lofo.parquet", "")


def test_predictor_parameters_reach_the_summary_row():
    solo, pairs = tables(ABC)
    rows = frame([(d, a, b, "p", 0, na, nb, 0.0, 0.0) for (a, b), (na, nb) in ABC.items() for d in ["v100"]])
    util = pd.DataFrame({"device": "v100", "workload": list("abc"), "predictor": "h", "pred_util": 0.3})
    table = trace([(i, 10.0 * i, 100.0, 1, "abc"[i % 3]) for i in range(6)]).assign(cluster="x")
    with_params = Predictions.from_frames(rows.assign(params='{"alpha": 1}'), util.assign(params='{"depth": 3}'),
                                          "p", "h")
    _, _, summary = experiment.run(run_config("isacpp"), {"source": "philly"}, solo, pairs, table, with_params)
    assert summary.loc[0, "predictor_norm_params"] == '{"alpha": 1}'
    assert summary.loc[0, "predictor_util_params"] == '{"depth": 3}'
    _, _, plain = experiment.run(run_config("isacpp"), {"source": "philly"}, solo, pairs, table,
                                 Predictions.from_frames(rows, util, "p", "h"))
    assert plain.loc[0, "predictor_norm_params"] == plain.loc[0, "predictor_util_params"] == ""
    with pytest.raises(ValueError, match="rows carry 2 different params"):
        Predictions.from_frames(rows.assign(params=['{"a": 1}', '{"a": 2}'] * 3), None, "p", None)
