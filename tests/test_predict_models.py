"""Predictors on a real slice of Gavel's data (8 job types of 4 families, 3 GPUs) with real graph features.

Covers the interface, determinism, the no-leakage guarantees (held-out labels, E-GGAT edges,
encodings), Horus's utilization label, the interaction model and the blend, the evaluation
outputs and tiny profiled-like data.
"""

import numpy as np
import pandas as pd
import pytest
import torch

from coloc.datasets import family_of
from coloc.devices import device_table
from coloc.predict import Tables, make_predictor, make_queries, names, predict_pairs, stage
from coloc.predict.base import pair_labels, pair_queries, params_of
from coloc.predict.blend import weight_grid
from coloc.predict.egat import EdgeModel, measured_edges
from coloc.predict.encodings import cross_fitted
from coloc.predict.evaluate import PRED_COLUMNS, UTIL_COLUMNS, evaluate, utilization_scores
from coloc.predict.inputs import contrast_features, job_frame, util_labels
from coloc.predict.protocols import folds

NAMES = ["resnet18-cifar10-b32", "resnet18-cifar10-b128", "lm-wikitext2-b10", "lm-wikitext2-b40",
         "recommendation-ml20m-b1024", "recommendation-ml20m-b4096", "transformer-multi30k-b32",
         "transformer-multi30k-b128"]
SMALL = {  # every pair predictor, small enough for unit tests
    "none": {}, "mean": {}, "linear": {}, "lgbm": {"params": {"n_estimators": 60}},
    "lgbm-enc": {"params": {"n_estimators": 60}},
    "horus": {"util_params": {"n_estimators": 60}, "map_params": {"n_estimators": 40}},
    "egat": {"hidden": 16, "layers": 2, "max_epochs": 4, "patience": 2, "edge_params": {"params": {"n_estimators": 30}}},
    "egat-const": {"hidden": 16, "layers": 1, "max_epochs": 4, "patience": 2},
    "egat-coloc": {"hidden": 16, "layers": 1, "max_epochs": 4, "patience": 2, "edge_params": {"params": {"n_estimators": 30}}},
    "egat-profiled": {"hidden": 16, "layers": 1, "max_epochs": 4, "patience": 2},
    "egat-selfloops": {"hidden": 16, "layers": 1, "max_epochs": 4, "patience": 2,
                       "edge_params": {"params": {"n_estimators": 30}}},
    "egat-profiled-selfloops": {"hidden": 16, "layers": 1, "max_epochs": 4, "patience": 2},
    "interactions": {},
    "completion": {},
    "blend": {"members": {"interactions": {}, "lgbm-enc": {"params": {"n_estimators": 30}, "spread": False}}},
}
SMALL_UTIL = {"horus": {"params": {"n_estimators": 60}}, "horus-implied": {"params": {"n_estimators": 60}},
              "mean": {}}  # every utilization predictor


@pytest.fixture(scope="module")
def gavel(gavel_tables_of) -> Tables:
    torch.set_num_threads(1)
    return gavel_tables_of(NAMES)


def test_every_registered_predictor_is_tested():
    assert set(SMALL) == set(names("pair")) and set(SMALL_UTIL) == set(names("util"))


SLOW = pytest.mark.slow  # more than ~5 s on 2 shared cores


@pytest.mark.parametrize("name", [pytest.param(n, marks=SLOW) if n == "blend" else n for n in sorted(SMALL)])
def test_predictor_predicts_pairs_and_larger_sets(gavel, name):
    fold = folds(gavel, "random5", seed=0)[0]
    predictor = make_predictor(name, seed=0, **SMALL[name]).fit(fold.train)
    out = predict_pairs(predictor, fold.test, gavel)
    assert len(out) == len(fold.test)
    assert np.isfinite(out[["pred_norm_a", "pred_norm_b"]].to_numpy()).all()
    assert np.isfinite(out["pred_std_a"]).all() == predictor.has_spread
    trio = make_queries(["v100"], ["lm-wikitext2-b10"], [("resnet18-cifar10-b32", "transformer-multi30k-b32")])
    assert np.isfinite(predictor.predict(trio, gavel)["pred_norm"]).all()


def test_pair_prediction_sides_match_direct_queries(gavel):
    fold = folds(gavel, "random5", seed=0)[1]
    model = make_predictor("lgbm", 0, **SMALL["lgbm"]).fit(fold.train)
    out = predict_pairs(model, fold.test.head(4), gavel)
    row = out.iloc[1]
    direct = model.predict(make_queries([row.device] * 2, [row.workload_a, row.workload_b],
                                        [(row.workload_b,), (row.workload_a,)]), gavel)["pred_norm"]
    assert direct.tolist() == pytest.approx([row.pred_norm_a, row.pred_norm_b])


@SLOW
def test_learned_predictors_beat_the_training_mean_under_random_folds(gavel):
    learned = ("lgbm", "lgbm-enc", "interactions", "blend")
    ev = evaluate(gavel, "random5", {n: SMALL[n] for n in ("mean", *learned)}, seeds=[0], progress=False)
    pred = ev.predictions
    mape = {name: (100 * (part[["pred_norm_a", "pred_norm_b"]].to_numpy() - part[["norm_a", "norm_b"]].to_numpy())
                   .__abs__() / part[["norm_a", "norm_b"]].to_numpy()).mean() for name, part in pred.groupby("predictor")}
    for name in learned:
        assert mape[name] < 0.8 * mape["mean"], (name, mape)


@pytest.mark.parametrize("name", ["lgbm", "horus", "egat", pytest.param("blend", marks=SLOW)])
def test_same_seed_same_predictions(gavel, name):
    fold = folds(gavel, "random5", seed=0)[2]
    runs = [predict_pairs(make_predictor(name, 7, **SMALL[name]).fit(fold.train), fold.test, gavel) for _ in range(2)]
    assert runs[0]["pred_norm_a"].tolist() == runs[1]["pred_norm_a"].tolist()


def shuffled_labels(pairs: pd.DataFrame, which: pd.Series, seed: int) -> pd.DataFrame:
    """``pairs`` with the labels (throughputs and norms) of the ``which`` rows permuted among them."""
    out = pairs.copy()
    rows = np.flatnonzero(which.to_numpy() & out["feasible"].to_numpy())
    perm = np.random.default_rng(seed).permutation(rows)
    for col in ("tput_a", "tput_b", "norm_a", "norm_b"):
        out.loc[out.index[rows], col] = out[col].to_numpy()[perm]
    return out


@SLOW
def test_no_leakage_held_out_family_labels_cannot_reach_its_predictions(gavel):
    """Shuffling the held-out family's pair labels in the tables the folds are cut from changes nothing; shuffling
    training labels does. What it checks: the held-out labels never reach ``fit``. The predictions are made with the
    unshuffled tables as context in every run, so a predictor that reads the measured pair at inference is not caught
    here: egat-profiled-selfloops does so by design (ISACPP's setting on graphs with self-loops), see the next test."""
    family = "lm"
    touches = (gavel.pairs["workload_a"].map(family_of) == family) | (gavel.pairs["workload_b"].map(family_of) == family)
    held = Tables(gavel.workloads, gavel.solo, shuffled_labels(gavel.pairs, touches, 1), gavel.devices)
    trained = Tables(gavel.workloads, gavel.solo, shuffled_labels(gavel.pairs, ~touches, 1), gavel.devices)
    assert not held.pairs["norm_a"].equals(gavel.pairs["norm_a"])

    def fold_predictions(tables, name):
        fold = next(f for f in folds(tables, "lofo") if f.held_out == family)
        assert family not in set(fold.train.workloads["family"]) | set(fold.train.solo["workload"].map(family_of))
        predictor = make_predictor(name, 0, **SMALL[name])
        return predict_pairs(predictor.fit(fold.train, groups="family"), fold.test, gavel)[["pred_norm_a", "pred_norm_b"]].to_numpy()

    for name in ("mean", "lgbm", "lgbm-enc", "horus", "egat", "egat-profiled", "interactions", "blend"):
        base = fold_predictions(gavel, name)
        np.testing.assert_array_equal(fold_predictions(held, name), base, err_msg=name)
        assert not np.array_equal(fold_predictions(trained, name), base), name


def test_only_the_self_loop_form_of_egat_profiled_reads_the_measured_pair_at_inference(gavel):
    """ISACPP's setting, labelled: egat-profiled's edges at inference are the measured slowdowns of the pairs it
    predicts (every pair profiled beforehand). On graphs with self-loops (egat-profiled-selfloops) the edge weighs the
    co-runner against the job itself, so changing the held-out pairs' labels in the inference context changes its
    predictions. On ISACPP's graphs (egat-profiled, no self-loops) a job of a pair has one in-edge, whose softmax
    weight is 1 whatever the edge, so they cannot; nor can egat's (predicted edges, coloc's setting). All fit on the
    training fold only."""
    family = "lm"
    touches = (gavel.pairs["workload_a"].map(family_of) == family) | (gavel.pairs["workload_b"].map(family_of) == family)
    other = Tables(gavel.workloads, gavel.solo, shuffled_labels(gavel.pairs, touches, 1), gavel.devices)
    fold = next(f for f in folds(gavel, "lofo") if f.held_out == family)
    for name, reads_pair in (("egat-profiled-selfloops", True), ("egat-profiled", False), ("egat", False)):
        predictor = make_predictor(name, 0, **SMALL[name]).fit(fold.train, groups="family")
        seen = predict_pairs(predictor, fold.test, gavel)[["pred_norm_a", "pred_norm_b"]].to_numpy()
        moved = predict_pairs(predictor, fold.test, other)[["pred_norm_a", "pred_norm_b"]].to_numpy()
        assert (not np.array_equal(seen, moved)) == reads_pair, name
    summary_row = stage.setting(params_of(make_predictor("egat-profiled", 0)))
    assert summary_row == stage.PROFILED_SETTING and stage.setting(params_of(make_predictor("egat", 0))) == stage.OUT_OF_FOLD


def test_on_isacpp_graphs_no_edge_changes_a_pair_prediction(gavel):
    """Without self-loops a job of a pair has one in-edge, whose softmax weight is 1 whatever its value: egat
    (LightGBM edges), egat-const (constant edges) and egat-profiled (measured edges) make the same pair predictions,
    bit for bit, and egat fits its LightGBM edge model only when a set of three jobs is predicted. With self-loops
    (egat-selfloops) the edges count."""
    fold = folds(gavel, "random5", seed=0)[0]
    small = {"hidden": 16, "layers": 1, "max_epochs": 3, "patience": 2}
    lgbm = {"edge_params": {"params": {"n_estimators": 30}}}
    predictions = {}
    for name, options in (("egat", lgbm), ("egat-const", {}), ("egat-profiled", {}), ("egat-selfloops", lgbm)):
        model = make_predictor(name, 0, **small, **options).fit(fold.train)
        predictions[name] = predict_pairs(model, fold.test, gavel)[["pred_norm_a", "pred_norm_b"]].to_numpy()
    np.testing.assert_array_equal(predictions["egat-const"], predictions["egat"])
    np.testing.assert_array_equal(predictions["egat-profiled"], predictions["egat"])
    assert not np.array_equal(predictions["egat-selfloops"], predictions["egat"])
    egat = make_predictor("egat", 0, **small, **lgbm).fit(fold.train)
    assert egat.edges_ is None
    triple = egat.predict(make_queries(["v100"], [NAMES[0]], [(NAMES[2], NAMES[4])]), gavel)
    assert isinstance(egat.edges_, EdgeModel) and np.isfinite(triple["pred_norm"]).all()


def test_egat_profiled_trains_on_the_measured_edges_and_only_it_may_use_them(gavel):
    fold = folds(gavel, "random5", seed=0)[0]
    edges = measured_edges(fold.train)
    row = fold.train.pairs[fold.train.pairs["feasible"]].iloc[3]
    d, a, b = row["device"], row["workload_a"], row["workload_b"]
    if a != b:
        assert edges[(d, a, b)] == pytest.approx(-np.log(row["norm_a"]))
        assert edges[(d, b, a)] == pytest.approx(-np.log(row["norm_b"]))
    with pytest.raises(KeyError, match="no measured pair"):
        edges[("v100", "nope", a)]
    with pytest.raises(ValueError, match="only as egat-profiled"):
        make_predictor("egat", 0, edge="measured").fit(fold.train)
    with pytest.raises(ValueError, match="only as egat-profiled"):
        make_predictor("egat-profiled", 0, edge="lgbm").fit(fold.train)


def test_egat_edges_of_training_pairs_never_carry_their_own_label(gavel):
    fold = folds(gavel, "random5", seed=0)[0]
    edges = EdgeModel(seed=0, params={"n_estimators": 30}).training_edges(fold.train)
    pairs = fold.train.pairs
    target = pairs[pairs["feasible"]].index[5]
    changed = pairs.copy()
    changed.loc[target, ["norm_a", "norm_b"]] = [0.01, 0.99]
    train2 = Tables(fold.train.workloads, fold.train.solo, changed, fold.train.devices)
    edges2 = EdgeModel(seed=0, params={"n_estimators": 30}).training_edges(train2)
    d, a, b = pairs.loc[target, ["device", "workload_a", "workload_b"]]
    assert edges2[(d, a, b)] == edges[(d, a, b)] and edges2[(d, b, a)] == edges[(d, b, a)]
    assert any(edges2[k] != edges[k] for k in edges)  # other pairs' edges do use that label


@pytest.mark.parametrize("groups", ["family", "workload", "device"])
def test_egat_validation_split_holds_out_one_group_like_the_protocol(gavel, groups):
    predictor = make_predictor("egat", 0)
    pairs = gavel.pairs[gavel.pairs["feasible"]].reset_index(drop=True)
    fit, val = predictor._split(pairs, groups)
    assert sorted(np.concatenate([fit, val])) == list(range(len(pairs))) and len(val) > 0
    if groups == "device":
        assert pairs.loc[val, "device"].nunique() == 1 and not set(pairs.loc[val, "device"]) & set(pairs.loc[fit, "device"])
    else:
        of = family_of if groups == "family" else str
        touching = [set(map(of, ab)) for ab in pairs[["workload_a", "workload_b"]].itertuples(index=False)]
        shared = set.intersection(*(touching[i] for i in val))
        assert len(shared) == 1, shared  # one group touches every validation pair
        assert not any(shared & touching[i] for i in fit)  # and no training pair


def test_encodings_of_a_training_row_never_contain_its_label(gavel):
    pairs = gavel.pairs
    labels = pair_labels(pairs)
    enc = cross_fitted(labels, pairs, seed=0)
    changed = pairs.copy()
    i = int(np.flatnonzero(pairs["feasible"])[3])
    changed.loc[i, "norm_a"] = 5.0
    enc2 = cross_fitted(pair_labels(changed), changed, seed=0)
    j = 3  # the 4th feasible pair: rows 3 and 3 + n of the directed labels
    n = int(pairs["feasible"].sum())
    pd.testing.assert_series_equal(enc.iloc[j], enc2.iloc[j], check_names=False)
    pd.testing.assert_series_equal(enc.iloc[j + n], enc2.iloc[j + n], check_names=False)
    assert not enc.equals(enc2)


def test_horus_label_is_achieved_utilization_unless_measured(gavel):
    labels = util_labels(gavel).set_index(["device", "workload"])
    row = gavel.solo.iloc[0]
    flops = gavel.workloads.set_index("workload").loc[row.workload, "flops_step"]
    peak = gavel.devices.set_index("name").loc[row.device, "peak_flops"]
    assert labels.loc[(row.device, row.workload), "util"] == pytest.approx(min(row.throughput * flops / peak, 1))
    assert set(labels["util_source"]) == {"achieved"}
    measured = gavel.solo.assign(gpu_util=np.where(gavel.solo.index == 0, 55.0, np.nan))
    labels = util_labels(Tables(gavel.workloads, measured, gavel.pairs, gavel.devices)).set_index(["device", "workload"])
    assert labels.loc[(row.device, row.workload), "util"] == pytest.approx(0.55)
    assert (labels["util_source"] == "measured").sum() == 1


@SLOW
def test_evaluation_outputs_follow_the_contracts(gavel):
    models = {n: SMALL[n] for n in ("mean", "lgbm", "horus")}
    n_feasible = int(gavel.pairs["feasible"].sum())
    for protocol in ("random5", "lofo", "xdevice"):
        ev = evaluate(gavel, protocol, models, seeds=[0, 1], progress=False, util_predictors=SMALL_UTIL)
        pred = ev.predictions
        assert list(pred.columns) == PRED_COLUMNS
        assert len(pred) == n_feasible * 3 * 2, protocol  # one row per feasible pair, predictor, seed
        assert not pred.duplicated(["predictor", "seed", "device", "workload_a", "workload_b"]).any()
        assert pred["pred_std_a"].notna().eq(pred["predictor"] == "lgbm").all()
        util = ev.utilization
        assert list(util.columns) == UTIL_COLUMNS and len(util) == len(gavel.solo) * 2 * len(SMALL_UTIL)
        assert util["pred_util"].between(0, 1).all()
        scores = utilization_scores(util, protocol)
        assert (scores["RMSLE"] >= 0).all() and set(scores["predictor"]) == set(SMALL_UTIL)
    lofo = evaluate(gavel, "lofo", {"mean": {}}, seeds=[0], progress=False).predictions
    cross = lofo[lofo["workload_a"].map(family_of) != lofo["workload_b"].map(family_of)]
    assert cross["held_out"].str.contains(",").all()


def test_leave_one_job_type_out_predicts_each_job_in_its_own_fold(gavel):
    """Under lojo the training mean seen by job a's prediction excludes every pair of job a."""
    pred = evaluate(gavel, "lojo", {"mean": {}}, seeds=[0], progress=False).predictions
    feasible = gavel.pairs[gavel.pairs["feasible"]]
    assert len(pred) == len(feasible) and not pred.duplicated(["device", "workload_a", "workload_b"]).any()

    def mean_without(job):
        rest = feasible[(feasible["workload_a"] != job) & (feasible["workload_b"] != job)]
        return np.concatenate([rest["norm_a"], rest["norm_b"]]).mean()

    pairs_of_two = pred[pred["workload_a"] != pred["workload_b"]]
    for _, row in pairs_of_two.sample(5, random_state=0).iterrows():
        assert row["held_out"] == f"{row['workload_a']},{row['workload_b']}"
        assert row["pred_norm_a"] == pytest.approx(mean_without(row["workload_a"]))
        assert row["pred_norm_b"] == pytest.approx(mean_without(row["workload_b"]))
        assert row["pred_norm_a"] != pytest.approx(row["pred_norm_b"])


def test_tiny_profiled_data_runs_and_skips_what_does_not_apply(gavel, tmp_path):
    names = ["lm-wikitext2-b10", "recommendation-ml20m-b1024"]
    cpu = "cpu:Test CPU x2"
    solo = gavel.solo[(gavel.solo["device"] == "k80") & gavel.solo["workload"].isin(names)].assign(device=cpu)
    pairs = gavel.pairs[(gavel.pairs["device"] == "k80") & gavel.pairs["workload_a"].isin(names)
                        & gavel.pairs["workload_b"].isin(names)].assign(device=cpu)
    tables = Tables(gavel.workloads[gavel.workloads["workload"].isin(names)], solo, pairs, device_table([cpu]))
    runs = {p: stage.run_protocol(tables, p, SMALL, SMALL_UTIL, seeds=[0]) for p in ("random5", "lofo", "xdevice")}
    assert runs["xdevice"].predictions.empty and "need at least 2" in runs["xdevice"].skipped[0]
    assert not runs["random5"].predictions.empty
    assert any("skipped" in note for note in runs["random5"].skipped + runs["lofo"].skipped)  # too little data
    paths = [tmp_path / f"{name}.parquet" for name in ("pred", "util", "scores", "util_scores")]
    stage.write_outputs(runs["xdevice"], "profiled", *paths)
    assert pd.read_parquet(paths[0]).columns.tolist() == PRED_COLUMNS
    assert pd.read_parquet(paths[1]).columns.tolist() == UTIL_COLUMNS
    assert all(pd.read_parquet(p).empty for p in paths)


def test_contrast_features_are_antisymmetric_in_a_pair(gavel):
    pairs = gavel.pairs[gavel.pairs["feasible"]].head(6).reset_index(drop=True)
    x = contrast_features(pair_queries(pairs), job_frame(gavel)).to_numpy()
    n = len(pairs)
    np.testing.assert_allclose(x[:n], -x[n:])
    assert np.isfinite(x).all() and np.abs(x).max() > 0.1


def test_interactions_multiply_pairwise_slowdowns_for_several_co_runners(gavel):
    fold = folds(gavel, "random5", seed=0)[0]
    model = make_predictor("interactions", 0).fit(fold.train)
    job, co = "lm-wikitext2-b10", ("resnet18-cifar10-b32", "transformer-multi30k-b32")
    queries = make_queries(["v100"] * 3, [job] * 3, [co[:1], co[1:], co])
    pred = model.predict(queries, gavel)["pred_norm"].to_numpy()
    assert pred[2] == pytest.approx(pred[0] * pred[1], rel=1e-12)
    assert pred[2] < min(pred[0], pred[1])


def test_interactions_fall_back_on_co_runner_and_device_for_an_unseen_family(gavel):
    fold = next(f for f in folds(gavel, "lofo") if f.held_out == "transformer")
    model = make_predictor("interactions", 0).fit(fold.train)
    unseen = ["transformer-multi30k-b32", "transformer-multi30k-b128"]
    queries = make_queries(["p100"] * 4, unseen * 2, [("lm-wikitext2-b10",)] * 2 + [("resnet18-cifar10-b32",)] * 2)
    pred = model.predict(queries, gavel)["pred_norm"].to_numpy()
    assert pred[0] == pred[1] and pred[2] == pred[3]  # no job-specific effect was learned
    assert pred[0] != pred[2]  # the co-runner's effect was


def test_weight_grid_covers_the_simplex():
    grid = weight_grid(3, 4)
    assert len(grid) == 15 and np.allclose(grid.sum(axis=1), 1) and (grid >= 0).all()
    assert [0.0, 0.0, 1.0] in grid.tolist() and [0.25, 0.25, 0.5] in grid.tolist()


def test_blend_weights_come_from_inner_folds_and_drop_a_useless_member(gavel):
    fold = folds(gavel, "random5", seed=0)[1]
    blend = make_predictor("blend", 0, members={"interactions": {}, "none": {}}).fit(fold.train)
    assert blend.weights_.tolist() == [1.0, 0.0]
    on_none = int(np.flatnonzero(weight_grid(2, blend.grid)[:, 1] == 1)[0])
    assert blend.inner_mape_.argmax() == on_none  # all weight on 'none' is worst
    alone = make_predictor("interactions", 0).fit(fold.train)
    queries = pair_queries(fold.test)
    np.testing.assert_allclose(blend.predict(queries, gavel)["pred_norm"], alone.predict(queries, gavel)["pred_norm"],
                               rtol=1e-12)
    out = blend.predict(queries, gavel)
    relative = out["pred_std"] / out["pred_norm"]  # the device's inner out-of-fold log error
    assert (relative > 0).all()
    assert relative.groupby(queries["device"]).agg(lambda r: r.max() - r.min()).max() < 1e-12
    assert relative.nunique() > 1


def test_stage_without_utilization_predictors_gives_empty_tables_with_their_columns(gavel):
    run = stage.run_protocol(gavel, "xdevice", {"mean": {}}, {}, seeds=[0])
    assert run.utilization.empty and list(run.utilization.columns) == UTIL_COLUMNS
    util = stage.util_scores(run, "gavel")
    assert util.empty and {"scope", "util_source", "RMSLE", "dataset"} <= set(util.columns)
    assert util[util["scope"] == "overall"].empty  # the notebook's selection works on it


def test_an_amp_job_type_s_batch_is_its_fp32_job_type_s():
    from coloc.predict.encodings import _log_batch

    names = pd.Series(["resnet18-cifar10-b128-amp", "resnet18-cifar10-b128", "lm-wikitext2-b64-amp"])
    assert _log_batch(names).tolist() == [7.0, 7.0, 6.0]


@pytest.mark.parametrize("rows, columns, seed", [(120, 40, 19), (30, 90, 0)])  # more rows than columns, and fewer
def test_ridge_loo_is_scikit_learns_ridge_cv(rows, columns, seed):
    """The interaction model's leave-one-out ridge picks the penalty scikit-learn's RidgeCV picks and fits the same
    coefficients and intercept, on indicator columns (some duplicated, as the model's are on one device). The seeds
    are ones where leaving the intercept's leverage out of the leave-one-out errors picks another penalty."""
    from sklearn.linear_model import RidgeCV

    from coloc.predict.interactions import ALPHAS, ridge_loo
    rng = np.random.default_rng(seed)
    x = (rng.random((rows, columns)) < 0.2).astype(float)
    x[:, 1] = x[:, 0]
    y = x @ rng.normal(size=columns) + rng.normal(scale=0.5, size=rows) + 3.0
    reference = RidgeCV(alphas=ALPHAS, gcv_mode="svd").fit(x, y)
    coef, intercept, alpha = ridge_loo(x, y, ALPHAS)
    assert alpha == reference.alpha_
    np.testing.assert_allclose(coef, reference.coef_, atol=1e-10)
    assert intercept == pytest.approx(reference.intercept_, abs=1e-10)
