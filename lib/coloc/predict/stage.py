"""The predictors stage: one (dataset, protocol) run, its output files, and the gather over all of them.

A dataset is one source of solo and pair tables, registered in :mod:`coloc.datasets` (Gavel's measurements,
optionally restricted to some families, the tables the profiling stage measured on this machine, Lucid's, the
cross pair of Gavel's and Lucid's) or a user's own (``user-<name>``). :func:`run_protocol` evaluates every
configured model under one protocol (a protocol that does not apply to the data gives empty tables and the
reason); :func:`write_outputs` writes its four files; :func:`gather_scores`, :func:`summary` and
:func:`target_check` make the stage's tables from every run's files.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from coloc import datasets
from coloc.datasets import family_of, save_table, user
from coloc.devices import device_table, unknown_text
from coloc.predict.base import Tables, predict_pairs
from coloc.predict.evaluate import (
    PRED_COLUMNS,
    SCORE_COLUMNS,
    UTIL_COLUMNS,
    UTIL_SCORE_COLUMNS,
    Evaluation,
    evaluate,
    scores_of,
    utilization_scores,
)
from coloc.predict.protocols import ProtocolSkipped, probe_protocol
from coloc.predict.references import PROBE_WINDOW_S
from coloc.predict.registry import check_options, make_predictor, split_options
from coloc.stats import mean_ci

# The datasets are coloc.datasets's registered ones, in its order; the workflow keeps each one's solo and pairs
# tables in its Dataset.folder. Users' own measurements (config datasets.user.<name>; coloc.datasets.user) are
# dataset "user-<name>". A cross dataset (a Dataset with parts: gavel-lucid, Gavel's and Lucid's tables of the
# families both measured in pairs) runs the cross-dataset protocol only, and only it runs that protocol.
CROSS_PROTOCOL = "xdataset"
USER_PREFIX = user.PREFIX
RUN_FILES = {
    "predictions": "data/processed/predictions/{dataset}/{protocol}.parquet",  # out-of-fold pair predictions
    "utilization": "data/processed/utilization/{dataset}/{protocol}.parquet",  # out-of-fold utilization
    "scores": "data/processed/predictor_scores/{dataset}/{protocol}.parquet",
    "util_scores": "data/processed/utilization_scores/{dataset}/{protocol}.parquet",
}


def run_file(kind: str, dataset: str, protocol: str, protocols) -> str:
    """The workflow's path of the ``kind`` file (a key of RUN_FILES) of the run (``dataset``, ``protocol``).

    ``protocols``: those the stage runs (config ``predictors.protocols``); ValueError naming the kind,
    dataset or protocol when the stage makes no such file.
    """
    if kind not in RUN_FILES:
        raise ValueError(f"predictor file kind {kind!r}; expected one of {sorted(RUN_FILES)}")
    if dataset not in datasets.names() and not is_user(dataset):
        raise ValueError(f"dataset {dataset!r}; expected one of {datasets.names()} or {USER_PREFIX}<name>")
    if protocol not in protocols:
        raise ValueError(f"protocol {protocol!r} is not among predictors.protocols {list(protocols)}: "
                         f"the predictors stage makes no {kind} file for it")
    return RUN_FILES[kind].format(dataset=dataset, protocol=protocol)


def dataset_protocols(dataset: str, protocols, only=None) -> list[str]:
    """The configured protocols the stage runs on ``dataset``: the cross-dataset protocol on the cross dataset
    only (it holds one source's devices out; on one source it would only be skipped), every other protocol on
    every other dataset; ``only`` (config ``predictors.dataset_protocols``: dataset -> protocols) keeps, for a
    dataset it names, those of them it lists (the default run's time). ValueError for a listed protocol that is
    not configured."""
    cross = bool(datasets.get(dataset).parts)
    runs = [p for p in protocols if (p == CROSS_PROTOCOL) == cross]
    if only and dataset in only:
        unknown = [p for p in only[dataset] if p not in protocols]
        if unknown:
            raise ValueError(f"predictors.dataset_protocols.{dataset}: {unknown} not among predictors.protocols "
                             f"{list(protocols)}")
        runs = [p for p in runs if p in only[dataset]]
    return runs


is_user = user.is_user


def dataset_folder(dataset: str) -> str:
    """Where the workflow keeps ``dataset``'s solo and pairs tables (KeyError for an unknown dataset)."""
    return datasets.get(dataset).folder


def load_tables(workloads_path, solo_path, pairs_path, families=None) -> Tables:
    """The tables of one data source, restricted to the job types it measured (and to ``families``).

    Solo rows without a positive finite throughput (a job that did not run alone) are
    dropped, and so are the pairs that involve them, unless the source has no solo rows at all
    (a user's source of normalized throughputs only). The device table comes from
    :mod:`coloc.devices` (a device it does not know gets a row without specifications). A job
    type without a feature row, a device without specifications, or no solo rows are gaps of the
    source (:func:`input_gaps`): the predictors that need them are skipped (:func:`run_protocol`).
    """
    workloads = pd.read_parquet(workloads_path)
    solo = pd.read_parquet(solo_path)
    pairs = pd.read_parquet(pairs_path)
    if families:
        solo = solo[solo["workload"].map(family_of).isin(families)]
        pairs = pairs[pairs["workload_a"].map(family_of).isin(families) & pairs["workload_b"].map(family_of).isin(families)]
    ok = np.isfinite(solo["throughput"].astype(float)) & (solo["throughput"].astype(float) > 0)
    solo = solo[ok].reset_index(drop=True)
    if not solo.empty:
        known = set(zip(solo["device"], solo["workload"], strict=True))
        has_solo = [(d, a) in known and (d, b) in known
                    for d, a, b in pairs[["device", "workload_a", "workload_b"]].itertuples(index=False)]
        pairs = pairs[has_solo].reset_index(drop=True)
    names = set(solo["workload"]) | set(pairs["workload_a"]) | set(pairs["workload_b"])
    workloads = workloads[workloads["workload"].isin(names)].reset_index(drop=True)
    devices = sorted(set(solo["device"]) | set(pairs["device"]))
    return Tables(workloads, solo, pairs.reset_index(drop=True), _device_rows(devices))


def _device_rows(names) -> pd.DataFrame:
    """coloc.devices' rows; a device it does not know gets its name and no specifications (NaN)."""
    rows = []
    for name in names:
        try:
            rows.append(device_table([name]))
        except KeyError:
            rows.append(pd.DataFrame({"name": [name]}))
    return pd.concat(rows, ignore_index=True).reindex(columns=device_table([]).columns)


def input_gaps(tables: Tables) -> list[str]:
    """What per-job inputs the source lacks: solo throughputs, feature rows of job types, device specifications."""
    gaps = []
    if tables.solo.empty:
        gaps.append("solo throughputs")
    names = set(tables.pairs["workload_a"]) | set(tables.pairs["workload_b"]) | set(tables.solo["workload"])
    missing = sorted(names - set(tables.workloads["workload"]))
    if missing:
        gaps.append(f"model-graph features of job types {missing[:5]}{' ...' if len(missing) > 5 else ''} "
                    f"(not in the workloads table)")
    unknown = sorted(tables.devices.loc[tables.devices["peak_flops"].isna(), "name"])
    if unknown:  # a name coloc does not know, most often a spelling of one it does: say so, with the close names
        gaps.append(f"devices coloc knows, so no specifications: {'; '.join(unknown_text(d) for d in unknown)}")
    return gaps


def usable_models(tables: Tables, models: dict, kind: str) -> tuple[dict, list[str]]:
    """The models that fit on a source with input gaps, and a reason for each one skipped.

    Without gaps every model is usable. With gaps each model is fitted once on the whole source (a
    pair model also predicts a few of its pairs): one that fails is skipped, the reason naming what
    the source lacks and the error.
    """
    gaps = input_gaps(tables)
    if not gaps:
        return dict(models), []
    usable, skipped = {}, []
    for name, options in models.items():
        entry, params, _ = split_options(name, options)
        try:
            model = make_predictor(entry, 0, kind=kind, **params).fit(tables)
            if kind == "pair":  # and predicts (a model may need per-job inputs only there)
                predict_pairs(model, tables.pairs[tables.pairs["feasible"].astype(bool)].head(4), tables)
        except Exception as err:  # noqa: BLE001 - any failure on a source with gaps is the reason to skip
            skipped.append(f"{name} skipped: this source lacks {'; '.join(gaps)} ({type(err).__name__}: "
                           f"{str(err)[:200]})")
            continue
        usable[name] = options
    return usable, skipped


def source_label(dataset: str, devices, families=()) -> str:
    """The data source as figures and tables name it, e.g. "Gavel (measured, K80/P100/V100)" (the dataset's
    :attr:`~coloc.datasets.Dataset.label`); KeyError for an unknown dataset."""
    return datasets.get(dataset).label(devices, families)


def describe(tables: Tables) -> str:
    """One line: solo rows, feasible and infeasible pairs, devices."""
    feasible = tables.pairs["feasible"].astype(bool)
    return (f"{len(tables.solo)} solo rows, {int(feasible.sum())} feasible pairs ({int((~feasible).sum())} "
            f"infeasible, not targets) on {sorted(tables.devices['name'])}")


def run_protocol(tables: Tables, protocol: str, models: dict, util_models: dict, seeds, k: int = 5,
                 workers: int = 1, progress: bool = False) -> Evaluation:
    """Every pair model ({name: options}) and utilization model under one protocol, every seed.

    The options are checked first (:func:`coloc.predict.registry.check_options`); on a source with
    input gaps, a model that cannot fit there is skipped with its reason (:func:`usable_models`). A protocol
    that does not apply to these tables gives empty predictions and utilization, its reason in
    ``skipped``.
    """
    for name, options in models.items():
        check_options(name, options, "pair")
    for name, options in util_models.items():
        check_options(name, options, "util")
    models, skipped = usable_models(tables, models, "pair")
    util_models, util_skipped = usable_models(tables, util_models, "util")
    try:
        evaluation = evaluate(tables, protocol, models, seeds, k, workers, progress, util_models)
        evaluation.skipped[:0] = skipped + util_skipped
        return evaluation
    except ProtocolSkipped as err:
        return Evaluation(protocol, pd.DataFrame(columns=PRED_COLUMNS), pd.DataFrame(columns=UTIL_COLUMNS),
                          [f"{protocol} skipped: {err}"])


def scores(evaluation: Evaluation, dataset: str) -> pd.DataFrame:
    """The pair predictors' scores of one run (columns of SCORE_COLUMNS and ``dataset``)."""
    return scores_of(evaluation).assign(dataset=dataset)


def util_scores(evaluation: Evaluation, dataset: str) -> pd.DataFrame:
    """The utilization predictors' scores of one run (columns of UTIL_SCORE_COLUMNS and ``dataset``)."""
    return utilization_scores(evaluation.utilization, evaluation.protocol).assign(dataset=dataset)


def per_device_mape(scores_table: pd.DataFrame) -> pd.DataFrame:
    """MAPE (%) per predictor (rows) and device (columns), mean over seeds."""
    part = scores_table[scores_table["scope"] == "device"]
    if part.empty:
        return pd.DataFrame()
    return part.pivot_table(index="predictor", columns="key", values="MAPE", aggfunc="mean")


def cpu_seconds(evaluation: Evaluation) -> pd.DataFrame:
    """CPU seconds each pair predictor spent fitting and predicting, summed over folds and seeds."""
    if evaluation.timings.empty:
        return pd.DataFrame(columns=["fit_s", "predict_s"])
    return evaluation.timings.groupby("predictor")[["fit_s", "predict_s"]].sum()


def shown(predictions: pd.DataFrame, order) -> list[str]:
    """The predictors of ``order`` that have predictions, in that order (then any others, sorted)."""
    present = set(predictions["predictor"])
    return [n for n in order if n in present] + sorted(present - set(order))


def write_outputs(evaluation: Evaluation, dataset: str, predictions_path, utilization_path, scores_path,
                  util_scores_path) -> None:
    """The run's out-of-fold predictions, utilization predictions and both score tables, as Parquet."""
    frames = {predictions_path: evaluation.predictions, utilization_path: evaluation.utilization,
              scores_path: scores(evaluation, dataset), util_scores_path: util_scores(evaluation, dataset)}
    for path, frame in frames.items():
        save_table(frame, path)


def _gather(paths, columns) -> pd.DataFrame:
    """One table from every run's score file (``columns`` and ``dataset``, in the order of ``paths``)."""
    frames = [pd.read_parquet(p) for p in paths]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=[*columns, "dataset"])
    return pd.concat(frames, ignore_index=True)


def gather_scores(paths) -> pd.DataFrame:
    """The stage's table of pair predictor scores (every dataset, protocol, seed)."""
    return _gather(paths, SCORE_COLUMNS)


def gather_util_scores(paths) -> pd.DataFrame:
    """The stage's table of utilization predictor scores."""
    return _gather(paths, UTIL_SCORE_COLUMNS)


OUT_OF_FOLD = "out of fold"
PROFILED_SETTING = "ISACPP's setting: the measured pair as edge at inference"


def setting(params: str) -> str:
    """What a predictor saw of the pairs it predicts, from its params JSON: OUT_OF_FOLD, or PROFILED_SETTING for a
    predictor whose edges are the measured pairs (egat-profiled: ISACPP profiles every pair beforehand)."""
    try:
        edge = json.loads(params).get("edge") if params else None
    except (TypeError, ValueError, AttributeError):
        edge = None
    return PROFILED_SETTING if edge == "measured" else OUT_OF_FOLD


def summary(scores_table: pd.DataFrame) -> pd.DataFrame:
    """Overall scores averaged over seeds (mean and std of MAPE, and the 95% t interval of the mean MAPE over
    seeds, ``MAPE_low`` / ``MAPE_high``: NaN with one seed), one row per dataset x protocol x predictor (with its
    params), MAPE ascending within a dataset and protocol; ``setting`` says whether the predictions are out of
    fold or ISACPP's setting (the measured pair read at inference: not comparable, see setting())."""
    keys = ["dataset", "protocol", "predictor", "params"]
    overall = scores_table[scores_table["scope"] == "overall"]
    agg = overall.groupby(keys).agg(
        MAE=("MAE", "mean"), MAPE=("MAPE", "mean"), MAPE_std=("MAPE", "std"), RMSLE=("RMSLE", "mean"),
        R2=("R2", "mean"), max_error=("max_error", "max"), seeds=("seed", "nunique"), n=("n", "mean"))
    interval = overall.groupby(keys)["MAPE"].agg(lambda v: _seed_interval(v.to_numpy(float)))
    agg["MAPE_low"], agg["MAPE_high"] = interval.str[0], interval.str[1]
    out = agg.reset_index().sort_values(["dataset", "protocol", "MAPE"]).reset_index(drop=True)
    return out.assign(setting=out["params"].map(setting))


def _seed_interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% t interval of the mean over seeds (coloc.stats.mean_ci) of the finite values; NaNs with fewer than 2."""
    values = values[np.isfinite(values)]
    return mean_ci(values)[1:] if len(values) >= 2 else (np.nan, np.nan)


TARGET_COLUMNS = ["dataset", "protocol", "target_MAPE", "best_predictor", "MAPE", "seeds", "meets"]


def target_check(summary_table: pd.DataFrame, targets: dict, dataset: str = datasets.DEFAULT) -> pd.DataFrame:
    """Whether the best predictor of ``dataset`` meets each protocol's MAPE target (%).

    One row per target; a protocol that was not run has no best predictor and ``meets`` False. Only out-of-fold
    predictors compete (a predictor in ISACPP's setting reads the measured pair it predicts).
    """
    rows = []
    fair = summary_table["params"].map(setting) == OUT_OF_FOLD if "params" in summary_table else True
    for protocol, target in targets.items():
        part = summary_table[(summary_table["dataset"] == dataset) & (summary_table["protocol"] == protocol) & fair]
        if part.empty:
            rows.append({"dataset": dataset, "protocol": protocol, "target_MAPE": float(target),
                         "best_predictor": None, "MAPE": np.nan, "seeds": 0, "meets": False})
            continue
        best = part.sort_values("MAPE").iloc[0]
        rows.append({"dataset": dataset, "protocol": protocol, "target_MAPE": float(target),
                     "best_predictor": best["predictor"], "MAPE": float(best["MAPE"]), "seeds": int(best["seeds"]),
                     "meets": bool(best["MAPE"] <= target)})
    return pd.DataFrame(rows, columns=TARGET_COLUMNS)


PROBE_COLUMNS = ["dataset", "base", "k", "profiling_s", "predictor", "scope", "key", "MAPE", "MAPE_std", "seeds", "n"]


def probe_table(scores_table: pd.DataFrame, window_s: float = PROBE_WINDOW_S) -> pd.DataFrame:
    """MAPE (mean and std over seeds) of every predictor under each probe protocol, overall and per device.

    One row per dataset x base protocol (lofo, lojo) x k x predictor x scope ("overall" or "device") x key;
    ``profiling_s`` = k x ``window_s``: the GPU seconds of a new job's probes on one device type.
    """
    part = scores_table[scores_table["scope"].isin(["overall", "device"])]
    parsed = part["protocol"].map(probe_protocol)
    part = part[parsed.notna()].assign(base=parsed.dropna().str[0], k=parsed.dropna().str[1])
    if part.empty:
        return pd.DataFrame(columns=PROBE_COLUMNS)
    keys = ["dataset", "base", "k", "predictor", "scope", "key"]
    out = part.groupby(keys).agg(MAPE=("MAPE", "mean"), MAPE_std=("MAPE", "std"), seeds=("seed", "nunique"),
                                 n=("n", "mean")).reset_index()
    out["k"] = out["k"].astype(int)
    out["profiling_s"] = out["k"] * float(window_s)
    return out[PROBE_COLUMNS].sort_values(["dataset", "base", "scope", "key", "predictor", "k"]).reset_index(drop=True)


def probe_mape(probe: pd.DataFrame, dataset: str = datasets.DEFAULT, base: str = "lofo") -> pd.DataFrame:
    """The MAPE table by k: rows (predictor, k), columns "all" and each device (mean over seeds)."""
    part = probe[(probe["dataset"] == dataset) & (probe["base"] == base)]
    if part.empty:
        return pd.DataFrame()
    table = part.pivot_table(index=["predictor", "k"], columns="key", values="MAPE", aggfunc="mean")
    return table[["all"] + [c for c in table.columns if c != "all"]]
