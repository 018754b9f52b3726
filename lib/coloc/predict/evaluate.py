"""Runs predictors x protocols x seeds: out-of-fold predictions, utilization, scores.

Each (seed, fold) is one task: every predictor is fitted on the fold's training tables
and predicts its test pairs; tasks run in ``workers`` processes (spawned, one torch and
LightGBM thread each). A predictor that cannot be fitted on a fold (too little data) is
skipped and listed with the reason. A predictor's options may hold ``seeds`` (a subset of
the run's seeds it runs with, for expensive models), ``protocols`` (the protocols it runs
under) and ``base`` (its registry entry).

The output holds one row per feasible unordered pair per predictor per seed. Under
``lofo`` a pair of two families is in two test folds; each job's prediction is taken from
the fold that held out its own family (``fold`` is job a's fold, ``held_out`` names both
families). ``lojo`` does the same with job types.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from coloc.predict.base import InsufficientData, Tables, make_predictor, predict_pairs
from coloc.predict.horus import UtilizationModel, util_labels
from coloc.predict.metrics import METRICS, rmsle, score_table, scores
from coloc.predict.protocols import JOB_GROUPS, Fold, ProtocolSkipped, folds, group_of, util_folds

PRED_COLUMNS = ["device", "workload_a", "workload_b", "predictor", "seed", "fold", "held_out",
                "norm_a", "norm_b", "pred_norm_a", "pred_norm_b", "pred_std_a", "pred_std_b"]
UTIL_COLUMNS = ["device", "workload", "predictor", "seed", "fold", "held_out", "util", "pred_util",
                "util_source"]


# How a predictor that early-stops or tunes should carve its validation split from the
# training fold, by protocol: like the test fold (a held-out family / job type / device), or at random.
VALIDATION_GROUPS = {"random5": None, "xdevice": "device"} | JOB_GROUPS


@dataclass
class Evaluation:
    """Out-of-fold predictions of one protocol, with what was skipped and how long it took."""

    protocol: str
    predictions: pd.DataFrame
    utilization: pd.DataFrame
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)  # predictor, seed, fold, fit_s, predict_s (CPU s)


def _fold_task(fold: Fold, tables: Tables, seed: int, predictors: dict) -> tuple[list, list, list]:
    """Fit and score every predictor on one fold, with one torch, BLAS and OpenMP thread.

    The workers are the parallelism: a second BLAS thread per worker on a 2-core machine made
    the interaction model's fit 4x slower (8.1 s against 1.8 s wall, measured beside a simulation job).
    """
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        return _fit_and_predict(fold, tables, seed, predictors)


def _fit_and_predict(fold: Fold, tables: Tables, seed: int, predictors: dict) -> tuple[list, list, list]:
    frames, skipped, timings = [], [], []
    for name, options in predictors.items():
        options = dict(options)
        if seed not in options.pop("seeds", [seed]) or fold.protocol not in options.pop("protocols", [fold.protocol]):
            continue
        predictor = make_predictor(name, seed, **options)
        predictor.validation_groups = VALIDATION_GROUPS[fold.protocol]
        start = time.process_time()
        try:
            predictor.fit(fold.train)
        except InsufficientData as err:
            skipped.append(f"{fold.protocol} seed {seed} fold {fold.held_out}: {name} skipped ({err})")
            continue
        fitted = time.process_time()
        pred = predict_pairs(predictor, fold.test, tables)
        frames.append(pred.assign(predictor=name, seed=seed, fold=fold.fold, held_out=fold.held_out))
        timings.append({"predictor": name, "seed": seed, "fold": fold.fold, "fit_s": fitted - start,
                        "predict_s": time.process_time() - fitted})
    return frames, skipped, timings


def evaluate(tables: Tables, protocol: str, predictors: dict, seeds, k: int = 5, workers: int = 1,
             progress: bool = True) -> Evaluation:
    """All predictors ({name: options}) under one protocol for every seed.

    Raises :class:`ProtocolSkipped` when the protocol does not apply to these tables.
    """
    start = time.perf_counter()
    tasks = [(fold, seed) for seed in seeds for fold in folds(tables, protocol, seed, k)]
    frames, skipped, timings = [], [], []
    bar = tqdm(total=len(tasks), desc=f"{protocol}: folds", disable=not progress)
    if workers > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_fold_task, fold, tables, seed, predictors) for fold, seed in tasks]
            for future in futures:
                f, s, t = future.result()
                frames, skipped, timings = frames + f, skipped + s, timings + t
                bar.update()
    else:
        for fold, seed in tasks:
            f, s, t = _fold_task(fold, tables, seed, predictors)
            frames, skipped, timings = frames + f, skipped + s, timings + t
            bar.update()
    bar.close()
    predictions = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PRED_COLUMNS)
    if protocol in JOB_GROUPS and frames:
        keys = ["predictor", "seed", "device", "workload_a", "workload_b"]
        expected = predictions.drop_duplicates(keys).groupby("predictor").size()
        predictions = own_group_predictions(predictions, JOB_GROUPS[protocol])
        kept = predictions.groupby("predictor").size().reindex(expected.index, fill_value=0)
        for name in expected.index[kept < expected]:
            skipped.append(f"{protocol}: {name}: {expected[name] - kept[name]} pairs dropped (a job's own "
                           f"{JOB_GROUPS[protocol]} fold was skipped)")
    predictions = predictions[PRED_COLUMNS].reset_index(drop=True)
    horus = predictors.get("horus")
    utilization = (utilization_oof(tables, protocol, seeds, k, skipped, **horus.get("util_params", {}))
                   if horus is not None
                   else pd.DataFrame(columns=UTIL_COLUMNS))
    return Evaluation(protocol, predictions, utilization, skipped, time.perf_counter() - start, pd.DataFrame(timings))


def own_group_predictions(predictions: pd.DataFrame, groups: str) -> pd.DataFrame:
    """LOFO / LOJO: one row per pair, each job predicted in the fold that held out its own group.

    ``groups``: "family" or "workload" (job type). A pair whose second group's fold has no
    prediction (the predictor was skipped there) is dropped.
    """
    of = group_of(groups)
    group_a, group_b = predictions["workload_a"].map(of), predictions["workload_b"].map(of)
    keys = ["predictor", "seed", "device", "workload_a", "workload_b"]
    side_a = predictions[predictions["held_out"] == group_a]
    side_b = predictions[predictions["held_out"] == group_b][keys + ["fold", "pred_norm_b", "pred_std_b"]]
    merged = side_a.drop(columns=["pred_norm_b", "pred_std_b"]).merge(
        side_b, on=keys, how="inner", suffixes=("", "_b"), validate="one_to_one")
    second = merged["workload_b"].map(of)
    two = merged["workload_a"].map(of) != second
    merged["held_out"] = np.where(two, merged["held_out"] + "," + second, merged["held_out"])
    return merged.drop(columns=["fold_b"])


def utilization_oof(tables: Tables, protocol: str, seeds, k: int = 5, notes: list | None = None,
                    **params) -> pd.DataFrame:
    """Horus's out-of-fold predicted solo utilization (see :func:`coloc.predict.protocols.util_folds`).

    A fold whose training rows are too few is left out, with a line in ``notes``.
    """
    rows = []
    try:
        all_folds = [(seed, fold) for seed in seeds for fold in util_folds(tables, protocol, seed, k)]
    except ProtocolSkipped as err:
        all_folds = []
        if notes is not None:
            notes.append(f"{protocol}: utilization skipped ({err})")
    for seed, fold in all_folds:
        try:
            model = UtilizationModel(seed, **params).fit(fold.train)
        except InsufficientData as err:
            if notes is not None:
                notes.append(f"{protocol} seed {seed} utilization fold {fold.held_out}: skipped ({err})")
            continue
        test = Tables(tables.workloads, fold.test, tables.pairs.iloc[:0], tables.devices)
        labels = util_labels(test)
        labels["pred_util"] = model.predict(labels["device"], labels["workload"], tables)
        rows.append(labels.assign(predictor="horus", seed=seed, fold=fold.fold, held_out=fold.held_out))
    return pd.concat(rows, ignore_index=True)[UTIL_COLUMNS] if rows else pd.DataFrame(columns=UTIL_COLUMNS)


def scores_of(evaluation: Evaluation) -> pd.DataFrame:
    """The results table of one protocol: predictor, protocol, seed, scope, key, metrics."""
    pred = evaluation.predictions.assign(protocol=evaluation.protocol)
    if pred.empty:
        return pd.DataFrame(columns=["predictor", "protocol", "seed", "scope", "key", *METRICS])
    return score_table(pred, ["predictor", "protocol", "seed"])


UTIL_SCORE_COLUMNS = ["predictor", "protocol", "seed", "scope", "key", "util_source", "RMSLE", "MAE", "R2", "n"]


def utilization_scores(utilization: pd.DataFrame, protocol: str) -> pd.DataFrame:
    """Horus's own score per seed: RMSLE (the paper: 0.154), MAE, R2 of utilization, overall and per device.

    No utilization rows (Horus not run) give an empty table with the columns.
    """
    rows = []
    for seed, sub in utilization.groupby("seed"):
        parts = [("overall", "all", sub)] + [("device", d, g) for d, g in sub.groupby("device")]
        for scope, key, part in parts:
            s = scores(part["util"], part["pred_util"])
            rows.append({"predictor": "horus", "protocol": protocol, "seed": seed, "scope": scope, "key": key,
                         "util_source": ",".join(sorted(part["util_source"].unique())),
                         "RMSLE": rmsle(part["util"], part["pred_util"]), "MAE": s["MAE"], "R2": s["R2"],
                         "n": s["n"]})
    return pd.DataFrame(rows, columns=UTIL_SCORE_COLUMNS)


def summary(scores_table: pd.DataFrame) -> pd.DataFrame:
    """Overall scores averaged over seeds (mean and std of MAPE), one row per predictor x protocol."""
    overall = scores_table[scores_table["scope"] == "overall"]
    agg = overall.groupby(["protocol", "predictor"]).agg(
        MAE=("MAE", "mean"), MAPE=("MAPE", "mean"), MAPE_std=("MAPE", "std"), RMSLE=("RMSLE", "mean"),
        R2=("R2", "mean"), max_error=("max_error", "max"), seeds=("seed", "nunique"), n=("n", "mean"))
    return agg.reset_index().sort_values(["protocol", "MAPE"]).reset_index(drop=True)
