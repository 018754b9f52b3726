"""The models' registry and scikit-learn conventions, option checks, the stage's files and tables.

Fast: the models fitted here are small, on a slice of Gavel's data (4 job types of 2 families, 3 GPUs).
"""

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from coloc.predict import Tables, check_options, make_predictor, names, predict_pairs, registered, stage
from coloc.predict.base import params_of
from coloc.predict.evaluate import evaluate, scores_of
from coloc.predict.inputs import util_labels
from coloc.predict.protocols import folds, util_folds

NAMES = ["lm-wikitext2-b10", "lm-wikitext2-b40", "resnet18-cifar10-b32", "resnet18-cifar10-b128"]
# Parameters other than the defaults for every registered model: a clone must keep them.
CHANGED = {
    ("pair", "none"): {}, ("pair", "mean"): {}, ("pair", "linear"): {"alpha": 0.5},
    ("pair", "lgbm"): {"spread": False, "params": {"n_estimators": 20}},
    ("pair", "lgbm-enc"): {"params": {"n_estimators": 20, "num_leaves": 7}},
    ("pair", "horus"): {"util_params": {"n_estimators": 20}, "map_params": {"n_estimators": 10}},
    ("pair", "egat"): {"hidden": 8, "max_epochs": 2, "edge_params": {"params": {"n_estimators": 10}}},
    ("pair", "egat-const"): {"hidden": 8, "max_epochs": 2},
    ("pair", "egat-profiled"): {"hidden": 8, "max_epochs": 2},
    ("pair", "egat-selfloops"): {"hidden": 8, "max_epochs": 2, "self_loops": False},
    ("pair", "egat-profiled-selfloops"): {"hidden": 8, "max_epochs": 2},
    ("pair", "egat-coloc"): {"hidden": 8, "max_epochs": 2, "drop": ("gpu",)},
    ("pair", "interactions"): {"alphas": (1.0, 2.0)},
    ("pair", "completion"): {"rank": 1, "penalty": 2.0, "across_devices": False},
    ("pair", "blend"): {"members": {"interactions": {}, "mean": {}}, "grid": 2},
    ("util", "horus"): {"params": {"n_estimators": 20}},
    ("util", "horus-implied"): {"params": {"n_estimators": 20}},
    ("util", "mean"): {},
}


@pytest.fixture(scope="module")
def small(gavel_tables_of) -> Tables:
    return gavel_tables_of(NAMES)


def test_every_registered_model_is_covered_here():
    assert set(CHANGED) == {(kind, name) for kind in ("pair", "util") for name in names(kind)}
    assert names() == sorted(set(names("pair")) | set(names("util")))
    assert names("util") == ["horus", "horus-implied", "mean"]


@pytest.mark.parametrize("kind, name", sorted(CHANGED))
def test_clone_and_get_params_round_trip(kind, name):
    model = make_predictor(name, 3, kind=kind, **CHANGED[kind, name])
    copy = clone(model)
    assert type(copy) is type(model) and copy.name == name and copy.kind == kind
    assert copy.get_params() == model.get_params() and copy.get_params()["seed"] == 3
    for key, value in CHANGED[kind, name].items():
        assert copy.get_params()[key] == value
    copy.set_params(seed=9)
    assert copy.seed == 9 and model.seed == 3
    assert pickle.loads(pickle.dumps(model)).get_params() == model.get_params()  # spawned workers get them
    assert json.loads(params_of(model)) == json.loads(json.dumps({k: v for k, v in model.get_params().items()
                                                                   if k != "seed"}))


def test_variants_keep_their_name_and_defaults_through_clone():
    const = clone(make_predictor("egat-const", hidden=8))
    assert (const.name, const.edge, const.hidden) == ("egat-const", "constant", 8)
    assert registered("egat-const")().get_params()["edge"] == "constant"
    assert registered("egat")().get_params()["edge"] == "lgbm"
    profiled = clone(make_predictor("egat-profiled", hidden=8))
    assert (profiled.name, profiled.edge) == ("egat-profiled", "measured")
    enc = clone(make_predictor("lgbm-enc", spread=False))
    assert (enc.name, enc.encodings, enc.contrast, enc.log_target, enc.spread) == ("lgbm-enc", True, True, True, False)
    assert clone(make_predictor("egat-const", edge="lgbm")).edge == "lgbm"  # a default, not a fixed value


def test_the_constructor_only_stores_its_parameters():
    model = make_predictor("blend", 0, members=None)
    assert model.members is None  # MEMBERS is resolved by fit, so clone's identity check holds
    assert make_predictor("egat", 0, edge="nonsense").edge == "nonsense"  # refused by check_params, not __init__
    with pytest.raises(ValueError, match="edge 'nonsense'"):
        make_predictor("egat", 0, edge="nonsense").check_params()


@pytest.mark.parametrize("name, groups", [("lgbm-enc", "family"), ("lgbm-enc", "device"), ("egat-const", "family")])
def test_validation_groups_are_an_argument_of_fit(small, name, groups):
    """The encodings' inner folds (lgbm-enc) and the early-stopping split (E-GGAT) follow ``groups``."""
    fold = folds(small, "random5", seed=0)[0]

    def predict(g):
        return predict_pairs(make_predictor(name, 0, **CHANGED["pair", name]).fit(fold.train, groups=g), fold.test, small)

    grouped, again, random = predict(groups), predict(groups), predict(None)
    pd.testing.assert_frame_equal(grouped, again)
    assert not np.allclose(grouped["pred_norm_a"], random["pred_norm_a"])


def test_the_evaluation_fits_with_the_protocols_validation_groups(small):
    options = CHANGED["pair", "lgbm-enc"]
    run = evaluate(small, "lofo", {"lgbm-enc": options}, seeds=[0], progress=False).predictions
    fold = folds(small, "lofo")[0]
    alone = predict_pairs(make_predictor("lgbm-enc", 0, **options).fit(fold.train, groups="family"), fold.test, small)
    mine = run[(run["fold"] == 0) & (run["workload_a"].map(lambda w: w.split("-")[0]) == fold.held_out)]
    merged = mine.merge(alone, on=["device", "workload_a", "workload_b"], suffixes=("", "_alone"))
    assert len(merged) == len(mine) > 0
    np.testing.assert_array_equal(merged["pred_norm_a"], merged["pred_norm_a_alone"])


def test_util_kind_is_a_registry_of_its_own(small):
    assert registered("horus", "util") is not registered("horus", "pair")
    with pytest.raises(KeyError, match=r"unknown util predictor 'lgbm'; known: \['horus', 'horus-implied', 'mean'\]"):
        make_predictor("lgbm", kind="util")
    fold = util_folds(small, "xdevice")[0]  # k80 held out
    model = make_predictor("mean", kind="util").fit(fold.train)
    labels = util_labels(fold.train)
    pred = model.predict(["p100", "k80"], [NAMES[0], NAMES[0]], small)
    assert pred[0] == pytest.approx(labels.loc[labels["device"] == "p100", "util"].mean())
    assert pred[1] == pytest.approx(labels["util"].mean())  # a device not seen in training: the overall mean


def test_utilization_of_any_registered_util_predictor_is_evaluated_and_recorded(small):
    util = {"mean": {}, "horus": CHANGED["util", "horus"]}
    run = stage.run_protocol(small, "random5", {"none": {}}, util, seeds=[0], k=2)
    assert set(run.utilization["predictor"]) == {"mean", "horus"}
    assert len(run.utilization) == 2 * len(small.solo)
    horus = run.utilization[run.utilization["predictor"] == "horus"]
    assert json.loads(horus["params"].iloc[0]) == {"params": {"n_estimators": 20}}
    scores = stage.util_scores(run, "gavel")
    assert set(scores["predictor"]) == {"mean", "horus"} and (scores["RMSLE"] >= 0).all()


@pytest.mark.parametrize("name, options, kind, named", [
    ("lgbm", {"params": {"n_estimatorz": 40}}, "pair", "n_estimatorz"),
    ("lgbm", {"n_estimatorz": 40}, "pair", "n_estimatorz"),
    ("horus", {"util_params": {"n_estimatorz": 40}}, "pair", "n_estimatorz"),
    ("horus", {"map_params": {"n_estimatorz": 40}}, "pair", "n_estimatorz"),
    ("egat", {"edge_params": {"params": {"n_estimatorz": 40}}}, "pair", "n_estimatorz"),
    ("blend", {"members": {"lgbm-enc": {"params": {"n_estimatorz": 40}}}}, "pair", "n_estimatorz"),
    ("horus", {"params": {"n_estimatorz": 40}}, "util", "n_estimatorz"),
    ("egat", {"hiden": 16}, "pair", "hiden"),
    ("egat", {"seed": 1}, "pair", "seed"),
])
def test_check_options_refuses_an_unknown_option_by_name(name, options, kind, named):
    with pytest.raises(ValueError) as err:
        check_options(name, options, kind)
    message = str(err.value)
    assert f"{kind} predictor {name!r}" in message and f"unknown option {named!r}" in message or \
        f"unknown LightGBM option {named!r}" in message
    assert "accept" in message  # and says what is accepted
    if "n_estimatorz" in json.dumps(options[next(iter(options))]):  # nested: LightGBM's name is suggested
        assert "did you mean 'n_estimators'" in message
    elif named == "n_estimatorz":  # at the top: where LightGBM's options go
        assert "LightGBM's own options go in 'params'" in message


def test_check_options_accepts_the_configured_models_and_refuses_unknown_names():
    check_options("lgbm", {"params": {"n_estimators": 40, "num_iterations": 10}, "seeds": [0], "protocols": ["lofo"]})
    check_options("lgbm-log", {"base": "lgbm", "log_target": True})
    check_options("mean", {}, "util")
    with pytest.raises(KeyError, match="unknown pair predictor 'lgbmm'; known: .*'lgbm'"):
        check_options("lgbmm", {})
    with pytest.raises(ValueError, match="option 'seeds' is 0; expected a list"):
        check_options("egat", {"seeds": 0})
    with pytest.raises(ValueError, match="member 'nope': unknown pair predictor"):
        check_options("blend", {"members": {"nope": {}}})


def test_a_misspelled_lightgbm_option_is_refused_before_training(small):
    """LightGBM itself would warn (muted by verbose=-1) and train with its defaults."""
    fold = folds(small, "random5", seed=0)[0]
    with pytest.raises(ValueError, match="unknown LightGBM option 'n_estimatorz'"):
        make_predictor("lgbm", 0, params={"n_estimatorz": 5}).fit(fold.train)
    with pytest.raises(ValueError, match="unknown LightGBM option 'learning_rat'"):
        make_predictor("horus", 0, kind="util", params={"learning_rat": 0.1}).fit(fold.train)


def test_predictions_and_scores_record_each_predictors_parameters(small):
    models = {"linear": {"alpha": 0.5}, "lgbm-enc": CHANGED["pair", "lgbm-enc"], "egat": {"seeds": [5]}}
    run = stage.run_protocol(small, "random5", models, {}, seeds=[0], k=2)
    params = run.predictions.groupby("predictor")["params"].unique()
    assert params.map(len).eq(1).all() and set(params.index) == {"linear", "lgbm-enc"}  # egat: seed 5 only
    assert json.loads(params["linear"][0]) == {"alpha": 0.5}
    assert json.loads(params["lgbm-enc"][0]) == {"contrast": True, "encodings": True, "log_target": True,
                                                  "params": {"n_estimators": 20, "num_leaves": 7}, "spread": True}
    scores = scores_of(run)
    assert scores.groupby("predictor")["params"].first().to_dict() == {k: v[0] for k, v in params.items()}
    summary = stage.summary(stage.scores(run, "gavel"))
    assert summary.set_index("predictor")["params"].to_dict() == {k: v[0] for k, v in params.items()}


def test_summary_gives_the_mean_mape_over_seeds_with_its_t_interval():
    rows = [{"dataset": "gavel", "protocol": "random5", "predictor": p, "params": "{}", "seed": seed, "scope": "overall",
             "key": "all", "MAE": 0.1, "MAPE": mape, "RMSLE": 0.1, "R2": 0.5, "max_error": 0.3, "n": 10}
            for p, runs in (("egat", {0: 10.0, 1: 12.0, 2: 14.0}), ("lgbm", {0: 9.0})) for seed, mape in runs.items()]
    summary = stage.summary(pd.DataFrame(rows)).set_index("predictor")
    half = 4.302653 * 2.0 / 3 ** 0.5  # t(0.975, 2 df) x std 2 / sqrt(3 seeds)
    assert summary.loc["egat", "MAPE"] == pytest.approx(12.0) and summary.loc["egat", "seeds"] == 3
    assert summary.loc["egat", ["MAPE_low", "MAPE_high"]].tolist() == pytest.approx([12.0 - half, 12.0 + half])
    assert summary.loc["lgbm", ["MAPE_low", "MAPE_high"]].isna().all()  # one seed: no interval


def test_run_files_are_named_by_kind_dataset_and_protocol():
    protocols = ["random5", "lofo"]
    assert stage.run_file("predictions", "gavel", "lofo", protocols) == "data/processed/predictions/gavel/lofo.parquet"
    assert stage.run_file("utilization", "profiled", "random5", protocols) == \
        "data/processed/utilization/profiled/random5.parquet"
    with pytest.raises(ValueError, match=r"protocol 'xdevice' is not among predictors.protocols \['random5', 'lofo'\]"):
        stage.run_file("predictions", "gavel", "xdevice", protocols)
    with pytest.raises(ValueError, match="dataset 'philly'"):
        stage.run_file("predictions", "philly", "lofo", protocols)
    with pytest.raises(ValueError, match="kind 'jobs'"):
        stage.run_file("jobs", "gavel", "lofo", protocols)


def test_target_check_names_the_best_predictor_and_a_protocol_not_run():
    summary = pd.DataFrame({"dataset": ["gavel", "gavel", "profiled"], "protocol": ["random5"] * 3,
                            "predictor": ["a", "b", "a"], "MAPE": [7.0, 5.5, 1.0], "seeds": [2, 1, 2]})
    check = stage.target_check(summary, {"random5": 6.0, "lofo": 15.0}).set_index("protocol")
    assert check.loc["random5", ["best_predictor", "MAPE", "seeds", "meets"]].tolist() == ["b", 5.5, 1, True]
    assert pd.isna(check.loc["lofo", "best_predictor"]) and not check.loc["lofo", "meets"]
    assert not stage.target_check(summary, {"random5": 5.0}).loc[0, "meets"]
