"""Runs predictors x protocols x seeds: out-of-fold predictions, utilization, scores.

Each (seed, fold) is one task: every pair predictor is fitted on the fold's training tables
(with the protocol's validation groups) and predicts its test pairs; tasks run in ``workers``
processes (spawned, one torch and LightGBM thread each). A predictor that cannot be fitted on
a fold (too little data) is skipped and listed with the reason. Predictors are given as
{name: options}: constructor parameters and the run options of
:data:`coloc.predict.registry.RUN_OPTIONS` (``seeds``, ``protocols``, ``base``). Utilization
predictors (kind ``util``) are fitted on the utilization folds of the protocol. Every output
row records its predictor's parameters (``params``, :func:`coloc.predict.base.params_of`).

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

from coloc import cpu_paths
from coloc.predict.base import InsufficientData, Tables, params_of, predict_pairs
from coloc.predict.inputs import util_labels
from coloc.predict.metrics import METRICS, rmsle, score_table, scores
from coloc.predict.protocols import (
    JOB_GROUPS,
    Fold,
    ProtocolSkipped,
    base_protocol,
    folds,
    group_of,
    job_groups,
    util_folds,
)
from coloc.predict.registry import make_predictor, split_options

PRED_COLUMNS = ["device", "workload_a", "workload_b", "predictor", "seed", "fold", "held_out",
                "norm_a", "norm_b", "pred_norm_a", "pred_norm_b", "pred_std_a", "pred_std_b", "params"]
UTIL_COLUMNS = ["device", "workload", "predictor", "seed", "fold", "held_out", "util", "pred_util",
                "util_source", "params"]


# How a predictor that early-stops or tunes should carve its validation split from the
# training fold, by protocol: like the test fold (a held-out family / job type / device), or at random.
VALIDATION_GROUPS = {"random5": None, "xdevice": "device", "xdataset": "device"} | JOB_GROUPS


def validation_groups(protocol: str) -> str | None:
    """VALIDATION_GROUPS of the protocol (a probe protocol's: its base protocol's)."""
    return VALIDATION_GROUPS[base_protocol(protocol)]


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
    """Fit and score every predictor on one fold, with one torch, BLAS and OpenMP thread (a warning when the CPU
    code paths are not fixed: :mod:`coloc.cpu_paths`).

    The workers are the parallelism: a second BLAS thread per worker on a 2-core machine made
    the interaction model's fit 4x slower (8.1 s against 1.8 s wall, measured beside a simulation job).
    """
    cpu_paths.warn_unless_fixed("E-GGAT and other torch fits")
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        return _fit_and_predict(fold, tables, seed, predictors)


def _runs(run: dict, seed: int, protocol: str) -> bool:
    """Whether a model with these run options runs with this seed under this protocol."""
    return seed in run.get("seeds", [seed]) and protocol in run.get("protocols", [protocol])


def _fit_and_predict(fold: Fold, tables: Tables, seed: int, predictors: dict) -> tuple[list, list, list]:
    frames, skipped, timings = [], [], []
    for name, options in predictors.items():
        entry, params, run = split_options(name, options)
        if not _runs(run, seed, fold.protocol):
            continue
        predictor = make_predictor(entry, seed, **params)
        start = time.process_time()
        try:
            predictor.fit(fold.train, groups=validation_groups(fold.protocol))
        except InsufficientData as err:
            skipped.append(f"{fold.protocol} seed {seed} fold {fold.held_out}: {name} skipped ({err})")
            continue
        fitted = time.process_time()
        pred = predict_pairs(predictor, fold.test, tables)
        frames.append(pred.assign(predictor=name, seed=seed, fold=fold.fold, held_out=fold.held_out,
                                  params=params_of(predictor)))
        timings.append({"predictor": name, "seed": seed, "fold": fold.fold, "fit_s": fitted - start,
                        "predict_s": time.process_time() - fitted})
    return frames, skipped, timings


def evaluate(tables: Tables, protocol: str, predictors: dict, seeds, k: int = 5, workers: int = 1,
             progress: bool = True, util_predictors: dict | None = None) -> Evaluation:
    """All pair predictors and utilization predictors ({name: options}) under one protocol for every seed.

    Raises :class:`ProtocolSkipped` when the protocol does not apply to these tables.
    """
    start = time.perf_counter()
    tasks = [(fold, seed) for seed in seeds for fold in folds(tables, protocol, seed, k)]
    groups = job_groups(protocol)
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
    if groups and frames:
        keys = ["predictor", "seed", "device", "workload_a", "workload_b"]
        scored = predictions[both_own_folds_test(predictions, [fold for fold, _ in tasks], groups)]
        expected = scored.drop_duplicates(keys).groupby("predictor").size()
        predictions = own_group_predictions(predictions, groups)
        kept = predictions.groupby("predictor").size().reindex(expected.index, fill_value=0)
        for name in expected.index[kept < expected]:
            skipped.append(f"{protocol}: {name}: {expected[name] - kept[name]} pairs dropped (a job's own "
                           f"{groups} fold was skipped)")
    predictions = predictions[PRED_COLUMNS].reset_index(drop=True)
    utilization = utilization_oof(tables, protocol, util_predictors or {}, seeds, k, skipped)
    return Evaluation(protocol, predictions, utilization, skipped, time.perf_counter() - start, pd.DataFrame(timings))


def both_own_folds_test(predictions: pd.DataFrame, all_folds: list[Fold], groups: str) -> pd.Series:
    """Whether each prediction's pair is in the test fold of both its jobs' own groups (under a probe
    protocol a pair that was a probe in one of them is not: it is scored in neither)."""
    of = group_of(groups)
    tested = {(f.held_out, *key) for f in all_folds
              for key in zip(f.test["device"], f.test["workload_a"], f.test["workload_b"], strict=True)}
    keys = zip(predictions["device"], predictions["workload_a"], predictions["workload_b"], strict=True)
    return pd.Series([(of(a), d, a, b) in tested and (of(b), d, a, b) in tested for d, a, b in keys],
                     index=predictions.index, dtype=bool)


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


def utilization_oof(tables: Tables, protocol: str, util_predictors: dict, seeds, k: int = 5,
                    notes: list | None = None) -> pd.DataFrame:
    """Out-of-fold predicted solo utilization of every utilization predictor ({name: options})
    (folds: :func:`coloc.predict.protocols.util_folds`).

    A fold whose training rows are too few is left out, with a line in ``notes``.
    """
    notes = [] if notes is None else notes
    rows = []
    all_folds = []
    if util_predictors:
        try:
            all_folds = [(seed, fold) for seed in seeds for fold in util_folds(tables, protocol, seed, k)]
        except ProtocolSkipped as err:
            notes.append(f"{protocol}: utilization skipped ({err})")
    for name, options in util_predictors.items():
        entry, params, run = split_options(name, options)
        for seed, fold in all_folds:
            if not _runs(run, seed, protocol):
                continue
            model = make_predictor(entry, seed, kind="util", **params)
            try:
                model.fit(fold.train, groups=validation_groups(protocol))
            except InsufficientData as err:
                notes.append(f"{protocol} seed {seed} utilization fold {fold.held_out}: {name} skipped ({err})")
                continue
            labels = own_labels(model, Tables(tables.workloads, fold.test, tables.pairs, tables.devices))
            labels["pred_util"] = model.predict(labels["device"], labels["workload"], tables)
            rows.append(labels.assign(predictor=name, seed=seed, fold=fold.fold, held_out=fold.held_out,
                                      params=params_of(model)))
    return pd.concat(rows, ignore_index=True)[UTIL_COLUMNS] if rows else pd.DataFrame(columns=UTIL_COLUMNS)


def own_labels(model, test: Tables) -> pd.DataFrame:
    """device, workload, util, util_source of the solo rows of ``test``: the label the model learns (its
    ``labels`` method, e.g. horus-implied's utilization implied by all measured pairs), else
    :func:`coloc.predict.inputs.util_labels`. A solo row without that label comes last with a NaN label (it is
    predicted, not scored)."""
    labels = model.labels(test) if hasattr(model, "labels") else util_labels(test)
    keys = ["device", "workload"]
    have = pd.MultiIndex.from_frame(labels[keys])
    absent = test.solo.loc[~pd.MultiIndex.from_frame(test.solo[keys]).isin(have), keys].drop_duplicates()
    if absent.empty:
        return labels
    return pd.concat([labels, absent.assign(util=np.nan, util_source=model.name)], ignore_index=True)


SCORE_GROUP = ["predictor", "protocol", "seed", "params"]
SCORE_COLUMNS = [*SCORE_GROUP, "scope", "key", *METRICS]


def scores_of(evaluation: Evaluation) -> pd.DataFrame:
    """The results table of one protocol: predictor, protocol, seed, params, scope, key, metrics."""
    pred = evaluation.predictions.assign(protocol=evaluation.protocol)
    if pred.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    return score_table(pred, SCORE_GROUP)


UTIL_SCORE_COLUMNS = ["predictor", "protocol", "seed", "params", "scope", "key", "util_source", "RMSLE", "MAE",
                      "R2", "n"]


def utilization_scores(utilization: pd.DataFrame, protocol: str) -> pd.DataFrame:
    """Each utilization predictor's score per seed: RMSLE (Horus reports 0.154), MAE, R2 of utilization,
    overall and per device.

    No utilization rows give an empty table with the columns.
    """
    rows = []
    for (name, seed, params), sub in utilization.groupby(["predictor", "seed", "params"], sort=True):
        sub = sub[np.isfinite(sub["util"].astype(float))]  # a row without a label is not scored
        parts = [("overall", "all", sub)] + [("device", d, g) for d, g in sub.groupby("device")]
        for scope, key, part in parts:
            s = scores(part["util"], part["pred_util"])
            rows.append({"predictor": name, "protocol": protocol, "seed": seed, "params": params, "scope": scope,
                         "key": key, "util_source": ",".join(sorted(part["util_source"].unique())),
                         "RMSLE": rmsle(part["util"], part["pred_util"]), "MAE": s["MAE"], "R2": s["R2"],
                         "n": s["n"]})
    return pd.DataFrame(rows, columns=UTIL_SCORE_COLUMNS)

