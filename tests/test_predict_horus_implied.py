"""Horus's second label: the implied utilization of the training pairs, and the model that learns it."""

import itertools

import numpy as np
import pandas as pd
import pytest

from coloc.predict import Tables, make_predictor, names
from coloc.predict.evaluate import utilization_oof
from coloc.predict.horus import implied_utilization
from coloc.predict.protocols import util_folds

NAMES = ["resnet18-cifar10-b32", "resnet18-cifar10-b128", "lm-wikitext2-b10", "lm-wikitext2-b40",
         "recommendation-ml20m-b1024", "recommendation-ml20m-b4096", "transformer-multi30k-b32",
         "transformer-multi30k-b128"]


@pytest.fixture(scope="module")
def gavel(gavel_tables_of) -> Tables:
    return gavel_tables_of(NAMES)


def synthetic_pairs(utils: dict, device: str = "v100") -> pd.DataFrame:
    """Every pair (self-pairs included) of jobs with these utilizations, slowed by exactly max(1, u_a + u_b)."""
    rows = []
    for a, b in itertools.combinations_with_replacement(sorted(utils), 2):
        norm = 1 / max(1.0, utils[a] + utils[b])
        rows.append({"device": device, "workload_a": a, "workload_b": b, "tput_a": norm, "tput_b": norm,
                     "norm_a": norm, "norm_b": norm, "feasible": True})
    return pd.DataFrame(rows)


def test_implied_utilization_recovers_the_utilizations_that_made_the_slowdowns():
    truth = {"a": 0.9, "b": 0.7, "c": 0.6, "d": 0.8}  # every pair sums above 1: each u is identified
    implied = implied_utilization(synthetic_pairs(truth)).set_index("workload")["util"]
    assert implied.to_dict() == pytest.approx(truth, abs=0.02)


def test_jobs_whose_slowdowns_are_one_get_utilizations_that_sum_to_at_most_one():
    truth = {"small": 0.3, "mid": 0.45, "big": 0.95}  # small + mid <= 1: they do not slow each other
    implied = implied_utilization(synthetic_pairs(truth)).set_index("workload")["util"]
    assert implied["small"] + implied["mid"] <= 1.0 + 1e-6
    assert implied["big"] == pytest.approx(0.95, abs=0.03)
    assert (implied.between(0, 1)).all()


def test_infeasible_pairs_and_other_devices_are_fitted_apart():
    pairs = pd.concat([synthetic_pairs({"a": 0.9, "b": 0.6}, "v100"), synthetic_pairs({"a": 0.5, "b": 0.8}, "k80")])
    pairs.loc[len(pairs)] = {"device": "k80", "workload_a": "a", "workload_b": "c", "tput_a": np.nan,
                             "tput_b": np.nan, "norm_a": np.nan, "norm_b": np.nan, "feasible": False}
    implied = implied_utilization(pairs).set_index(["device", "workload"])["util"]
    assert ("k80", "c") not in implied.index  # its only pair did not fit on the device
    assert implied[("v100", "a")] == pytest.approx(0.9, abs=0.02)
    assert implied[("k80", "a")] == pytest.approx(0.5, abs=0.02)


def test_horus_implied_learns_the_implied_label_of_its_training_pairs(gavel):
    assert "horus-implied" in names("util")
    model = make_predictor("horus-implied", seed=0, kind="util", params={"n_estimators": 60}).fit(gavel)
    labels = model.labels(gavel)
    assert set(labels["util_source"]) == {"implied"}
    implied = implied_utilization(gavel.pairs)
    assert labels.sort_values(["device", "workload"])["util"].to_numpy() == pytest.approx(
        implied.sort_values(["device", "workload"])["util"].to_numpy())
    pred = model.predict(labels["device"], labels["workload"], gavel)
    assert np.all((pred >= 0) & (pred <= 1))
    # learned, not the achieved-compute label: closer to its own label than the achieved model is
    achieved = make_predictor("horus", seed=0, kind="util", params={"n_estimators": 60}).fit(gavel)
    other = achieved.predict(labels["device"], labels["workload"], gavel)
    assert np.abs(pred - labels["util"]).mean() < np.abs(other - labels["util"]).mean()


def test_horus_implied_without_training_pairs_says_so(gavel):
    from coloc.predict import InsufficientData
    empty = gavel.with_pairs(gavel.pairs.iloc[:0])
    with pytest.raises(InsufficientData, match="horus-implied"):
        make_predictor("horus-implied", seed=0, kind="util").fit(empty)


def test_held_out_fold_pairs_never_reach_the_fit(gavel):
    """Scrambling every pair that involves a held-out job leaves that job's out-of-fold prediction unchanged."""
    folds = util_folds(gavel, "lofo", seed=0)
    if all(fold.train.pairs.empty for fold in folds):
        pytest.skip("utilization folds carry no training pairs yet (coloc.predict.protocols.util_folds)")
    models = {"horus-implied": {"params": {"n_estimators": 30}}}
    base = utilization_oof(gavel, "lofo", models, seeds=[0])
    family = "lm"
    held = gavel.pairs["workload_a"].str.startswith(family) | gavel.pairs["workload_b"].str.startswith(family)
    scrambled = gavel.pairs.copy()
    rng = np.random.default_rng(0)
    scrambled.loc[held, ["norm_a", "norm_b"]] = rng.uniform(0.1, 1.0, size=(int(held.sum()), 2))
    other = utilization_oof(gavel.with_pairs(scrambled), "lofo", models, seeds=[0])
    mine = base["held_out"] == family
    assert mine.any()
    assert base.loc[mine, "pred_util"].to_numpy() == pytest.approx(other.loc[mine, "pred_util"].to_numpy())
    assert not np.allclose(base.loc[~mine, "pred_util"], other.loc[~mine, "pred_util"])  # the scramble is seen


def test_horus_implied_is_scored_against_its_own_label(gavel):
    out = utilization_oof(gavel, "random5", {"horus-implied": {"params": {"n_estimators": 30}}, "horus": {}}, seeds=[0])
    implied = implied_utilization(gavel.pairs).set_index(["device", "workload"])["util"]
    mine = out[out["predictor"] == "horus-implied"]
    assert set(mine["util_source"]) == {"implied"} and len(mine) == len(gavel.solo)
    expected = implied.reindex(pd.MultiIndex.from_frame(mine[["device", "workload"]])).to_numpy()
    assert mine["util"].to_numpy() == pytest.approx(expected, nan_ok=True)
    assert set(out.loc[out["predictor"] == "horus", "util_source"]) == {"achieved"}
