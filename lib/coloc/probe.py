"""`coloc probe`: a new model's co-located speed next to every known job type, from k measured probes.

Given a new model and a device, and reference tables measured on that device (the solo
and pairs tables of the profiling stage, or of a user's own source):

1. the k reference co-runners are chosen from the reference pairs by the probe protocols' criterion
   (:func:`coloc.predict.references.choose_references`);
2. the profiler (:mod:`coloc.profiler`, real training in worker processes) measures the new job solo,
   each reference solo, and the new job next to each reference: 1 + 2k measurements per repeat;
3. a pair predictor is fitted on the reference tables plus the new job's solo row and its k probe pairs,
   and predicts the new job's normalized throughput next to every job type of the reference tables on
   that device (and each of those next to it), with the predictor's spread.

A probe succeeds only when the new job has a finite solo throughput and at least one measured pair; otherwise it
ends with :class:`ProbeError` naming each failed measurement, its outcome and error (:func:`check_measured`),
and writes no table. The table (:data:`COLUMNS`) goes to CSV and Parquet. The probe pairs carry their measured values
too (``measured_norm``, ``co_runner_measured_norm``); the predictions there are the fitted model's.
On a GPU the same code runs (``device="cuda"``); the reference tables must then be measured there.

The new model is a job type of the zoo, or a user's own model: the import path ``package.module:function``
of a function returning ``(model, batch)`` or ``(model, batch, loss_fn)`` (:mod:`coloc.workloads.user`:
the default loss, the optimizer, what the batch may be). Its module must be importable (on PYTHONPATH
or installed); the function is checked on the meta device, in a worker process given at most ``--timeout-s``,
before anything is measured, and the path is the model's name in the log and the tables. The log keys its
records by the model too (:func:`coloc.profiler.sweep.model_fingerprint`: its module's source and its
parameters' shapes), so an edited model is measured afresh, not read back from the old one's records.

What the probe does not check: the values of the batch (it measures speed; a batch of NaNs trains as fast as
any other on most devices, and no loss value is looked at), and measured normalized throughputs above
:data:`coloc.datasets.MAX_NORM` (which the CSV loader refuses) are kept, with a warning on stderr: on a
busy machine noise makes them, and the probe's table says what was measured.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from coloc import profiler, workloads as zoo
from coloc.datasets import MAX_NORM, DataError, load_user
from coloc.devices import device_table
from coloc.features import workloads_table
from coloc.predict.base import Tables, make_queries
from coloc.predict.references import choose_references
from coloc.predict.registry import make_predictor, names as predictor_names
from coloc.profiler import outcome
from coloc.profiler.sweep import check as check_job_types

DEFAULT_PREDICTOR = "completion"  # the pair predictor of the probe protocols' choice (low-rank completion)
COLUMNS = ["device", "workload", "co_runner", "pred_norm", "pred_std", "co_runner_pred_norm", "co_runner_pred_std",
           "probe", "measured_norm", "co_runner_measured_norm", "predictor", "k", "references"]


class ProbeError(ValueError):
    """The probe cannot run on these inputs (the message says which and what was expected)."""


def reference_tables(solo: pd.DataFrame, pairs: pd.DataFrame, device: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The reference solo and pairs rows of ``device``; ProbeError naming the devices there are."""
    here_solo, here_pairs = solo[solo["device"] == device], pairs[pairs["device"] == device]
    if here_solo.empty or here_pairs.empty:
        raise ProbeError(f"reference tables: no solo or pair row on device {device!r}; they hold "
                         f"{sorted(set(solo['device']) | set(pairs['device']))}. Measure the reference set on "
                         f"this device first (the profiling stage, or your own source)")
    return here_solo.reset_index(drop=True), here_pairs.reset_index(drop=True)


def plan(model: str, references, repeats: int = 1, seed: int = 0) -> list[profiler.Measurement]:
    """The new job solo, each reference solo, the new job next to each reference, per repeat (shuffled)."""
    sets = [(model,)] + [(r,) for r in references if r != model] + [tuple(sorted((model, r))) for r in references]
    sets = list(dict.fromkeys(sets))
    out = []
    for repeat in range(repeats):
        order = np.random.default_rng([seed, repeat]).permutation(len(sets))
        out += [profiler.Measurement(sets[i], repeat) for i in order]
    return out


def measure(model: str, references, log_path, settings: profiler.Settings, repeats: int = 1,
            progress: bool = False, models: dict[str, str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(solo, pairs) of the probe measurements, by the profiler (the log is its resume state; ``models``: the
    user models' fingerprints, :func:`coloc.profiler.sweep.check`, computed again when not given); ProbeError
    without a finite solo throughput of ``model`` or a measured pair (:func:`check_measured`)."""
    records = profiler.run(plan(model, references, repeats, settings.seed), log_path, settings, progress=progress,
                           models=models)
    solo = profiler.solo_table(records)
    pairs = profiler.pairs_table(records, solo)
    check_measured(model, records, solo, pairs, log_path)
    return solo, pairs


def check_measured(model: str, records: list[dict], solo: pd.DataFrame, pairs: pd.DataFrame, log_path) -> None:
    """ProbeError unless ``model`` has a finite solo throughput and at least one measured pair (feasible, both
    normalized throughputs finite): the message names each failed measurement of the probe, its outcome and error.

    A probe without them has nothing to fit on: a model that ran out of memory alone leaves an infeasible solo
    row without a throughput, and pairs that did not fit, which a table of predictions would hide.
    """
    mine = solo[solo["workload"] == model]["throughput"].to_numpy(float)
    solo_ok = bool(len(mine)) and bool(np.isfinite(mine).all() and (mine > 0).all())
    with_model = pairs[(pairs["workload_a"] == model) | (pairs["workload_b"] == model)]
    norms = with_model[["norm_a", "norm_b"]].to_numpy(float)
    measured = with_model["feasible"].astype(bool) & np.isfinite(norms).all(axis=1)
    if solo_ok and measured.any():
        return
    lacks = ([] if solo_ok else ["no finite solo throughput"]) + ([] if measured.any() else ["no measured pair"])
    failed = [_failure(record) for record in records if outcome.of(record) != outcome.OK]
    raise ProbeError(f"model {model!r}: the probe has {' and '.join(lacks)}, so nothing to predict from; failed "
                     f"measurements: {'; '.join(failed) or 'none'} (the log {log_path})")


def _failure(record: dict) -> str:
    """One failed measurement in a line: its set (solo: one job), its repeat, its outcome and the error's first line."""
    error = (record.get("error") or "").strip().splitlines()
    reason = error[0][:300] if error else "no error text"
    return f"{' + '.join(record['workloads'])} (repeat {record['repeat']}): {outcome.of(record)}, {reason}"


def predict_new(model: str, device: str, ref_solo: pd.DataFrame, ref_pairs: pd.DataFrame, new_solo: pd.DataFrame,
                new_pairs: pd.DataFrame, workloads: pd.DataFrame, predictor: str = DEFAULT_PREDICTOR,
                seed: int = 0, options: dict | None = None) -> pd.DataFrame:
    """Fit ``predictor`` on the reference tables plus the new job's rows; its predictions next to every job type.

    ``new_solo`` / ``new_pairs``: the probe measurements (device names as in the reference tables);
    their rows replace the reference rows of the same job types and pairs (measured in the same session,
    so the probes' normalized throughputs are consistent with their solo throughputs).
    """
    keys = ["device", "workload"]
    solo = pd.concat([ref_solo[keys + ["throughput"]], new_solo[keys + ["throughput"]]]).drop_duplicates(keys, keep="last")
    pair_keys = ["device", "workload_a", "workload_b"]
    columns = pair_keys + ["tput_a", "tput_b", "norm_a", "norm_b", "feasible"]
    pairs = pd.concat([ref_pairs[columns], new_pairs[columns]]).drop_duplicates(pair_keys, keep="last")
    pairs = pairs.assign(feasible=pairs["feasible"].astype(bool)).reset_index(drop=True)
    names = sorted(set(solo["workload"]))
    missing = sorted(set(names) - set(workloads["workload"]))
    if missing:
        raise ProbeError(f"workloads table: no feature row for {missing[:5]}; expected rows for every job type")
    tables = Tables(workloads[workloads["workload"].isin(names)].reset_index(drop=True), solo.reset_index(drop=True),
                    pairs, device_table([device]))
    fitted = make_predictor(predictor, seed, **(options or {})).fit(tables)
    others = sorted(set(ref_solo["workload"]) | {model})
    forward = fitted.predict(make_queries([device] * len(others), [model] * len(others), [(o,) for o in others]), tables)
    backward = fitted.predict(make_queries([device] * len(others), others, [(model,) for _ in others]), tables)
    out = pd.DataFrame({"device": device, "workload": model, "co_runner": others,
                        "pred_norm": forward["pred_norm"].to_numpy(float), "pred_std": forward["pred_std"].to_numpy(float),
                        "co_runner_pred_norm": backward["pred_norm"].to_numpy(float),
                        "co_runner_pred_std": backward["pred_std"].to_numpy(float)})
    return _with_measured(out, new_pairs, model)


def _with_measured(out: pd.DataFrame, new_pairs: pd.DataFrame, model: str) -> pd.DataFrame:
    """Mark the probe pairs and add their measured normalized throughputs (NaN elsewhere)."""
    measured, other_measured = {}, {}
    for row in new_pairs[new_pairs["feasible"].astype(bool)].itertuples(index=False):
        if row.workload_a == model:
            measured[row.workload_b], other_measured[row.workload_b] = row.norm_a, row.norm_b
        if row.workload_b == model:
            measured[row.workload_a], other_measured[row.workload_a] = row.norm_b, row.norm_a
    return out.assign(probe=out["co_runner"].isin(measured),
                      measured_norm=out["co_runner"].map(measured).astype(float),
                      co_runner_measured_norm=out["co_runner"].map(other_measured).astype(float))


def run(model: str, ref_solo: pd.DataFrame, ref_pairs: pd.DataFrame, out_prefix, log_path, k: int = 2,
        settings: profiler.Settings = profiler.Settings(), repeats: int = 1, predictor: str = DEFAULT_PREDICTOR,
        workloads: pd.DataFrame | None = None, progress: bool = False) -> pd.DataFrame:
    """The whole probe of ``model`` on ``settings.device``: references, measurements, predictions, files.

    Writes ``<out_prefix>.csv`` and ``<out_prefix>.parquet``; returns the table (:data:`COLUMNS`).
    ``workloads``: the features table (default: computed for the job types involved, on the meta device).
    """
    check_options(k=k, repeats=repeats, seed=settings.seed, window_s=settings.window_s,
                  warmup_s=settings.warmup_s, timeout_s=settings.timeout_s, threads=settings.threads,
                  batch_size=settings.batch_size)
    if predictor not in predictor_names("pair"):
        raise ProbeError(f"predictor {predictor!r} (--predictor): expected one of the pair predictors "
                         f"{predictor_names('pair')}")
    if not zoo.known(model):
        raise ProbeError(f"model {model!r}: expected a job type of the zoo (coloc.workloads.names()) or your own "
                         f"model's import path {zoo.user.FORM}")
    # a user model: imported, built and its loss computed on the meta device, in a worker within timeout_s
    fingerprints = check_job_types([model], settings.timeout_s, settings.omp_wait_policy)
    device = profiler.resolve(settings.device, settings.cpus).name
    solo, pairs = reference_tables(ref_solo, ref_pairs, device)
    if model in set(solo["workload"]):
        raise ProbeError(f"model {model!r} is already in the reference tables on {device}: it is not new")
    references = choose_references(pairs, device, k)
    if len(references) < k:
        raise ProbeError(f"device {device}: the reference pairs offer {len(references)} co-runners; asked for k = {k}")
    new_solo, new_pairs = measure(model, references, log_path, settings, repeats, progress, fingerprints)
    if workloads is None:
        workloads = workloads_table(sorted(set(solo["workload"]) | {model}))
    table = predict_new(model, device, solo, pairs, new_solo, new_pairs, workloads, predictor, settings.seed)
    table = table.assign(predictor=predictor, k=k, references=",".join(references))[COLUMNS]
    high = table[(table[["measured_norm", "co_runner_measured_norm"]] > MAX_NORM).any(axis=1)]
    for row in high.itertuples(index=False):
        warnings.warn(f"coloc probe: {model} next to {row.co_runner} on {device} measured normalized throughputs "
                      f"{row.measured_norm:.3g} / {row.co_runner_measured_norm:.3g}, above {MAX_NORM} (a job sharing "
                      f"its device ran faster than alone: noise, or a busy machine while measuring solo?); kept as "
                      f"measured", RuntimeWarning, stacklevel=2)
    _write_atomic(Path(f"{out_prefix}.parquet"), lambda path: table.to_parquet(path, index=False))
    _write_atomic(Path(f"{out_prefix}.csv"), lambda path: table.to_csv(path, index=False))
    return table


def _write_atomic(path: Path, write) -> None:
    """``write(temporary path)`` beside ``path``, then renamed onto it: a killed probe leaves the old file or
    the new one, never a part of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def check_options(**options) -> None:
    """Refuse a numeric option out of its range before anything runs: ProbeError naming the option (as on the
    command line), its value and the range."""
    ranges = {"k": ("an integer >= 1", 1, math.inf), "repeats": ("an integer >= 1", 1, math.inf),
              "seed": ("an integer >= 0", 0, 2 ** 32 - 1), "window_s": ("a number of seconds > 0", 0, math.inf),
              "warmup_s": ("a number of seconds >= 0", 0, math.inf), "timeout_s": ("a number of seconds > 0", 0, math.inf),
              "threads": ("an integer >= 1", 1, math.inf), "batch_size": ("an integer >= 1", 1, math.inf)}
    for name, value in options.items():
        if value is None and name in ("threads", "batch_size"):
            continue
        expected, low, high = ranges[name]
        strict = name in ("window_s", "timeout_s")
        ok = isinstance(value, (int, float)) and math.isfinite(value) and low <= value <= high
        if not ok or (strict and value <= low):
            option = "--" + name.replace("_", "-")
            raise ProbeError(f"{option} {value!r}: expected {expected}"
                             f"{f' and at most {high}' if math.isfinite(high) else ''}")



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coloc probe",
        description="Profile a new model (a zoo job type, or your own: package.module:function returning "
                    "(model, batch), its module on PYTHONPATH) solo and next to k reference co-runners (chosen from "
                    "the reference pairs) on a device, then write its predicted normalized throughput next to every job type of "
                    "the reference tables on that device, with the predictor's spread (CSV and Parquet).")
    parser.add_argument("model", help="job type of the zoo (coloc.workloads.names()), or the import path "
                                      "package.module:function of a function returning (model, batch) or "
                                      "(model, batch, loss_fn); its module must be on PYTHONPATH or installed")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--solo", default="data/processed/profiled/solo.parquet",
                        help="reference solo table measured on the device (Parquet, or the user CSV format)")
    parser.add_argument("--pairs", default="data/processed/profiled/pairs.parquet",
                        help="reference pairs table measured on the device (Parquet, or the user CSV format)")
    parser.add_argument("--k", type=int, default=2, help="number of probes (reference co-runners)")
    parser.add_argument("--predictor", default=DEFAULT_PREDICTOR, help="pair predictor (coloc.predict.names('pair'))")
    parser.add_argument("--out", default="results/probe/probe", help="output prefix: <out>.csv and <out>.parquet")
    parser.add_argument("--log", default="data/interim/probe/measurements.jsonl",
                        help="the profiler's append-only measurement log (a rerun reuses its records)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of every measurement (tables: medians)")
    parser.add_argument("--window-s", type=float, default=3.0, help="counted window of each measurement (s)")
    parser.add_argument("--warmup-s", type=float, default=0.5, help="warm-up before the window (s)")
    parser.add_argument("--timeout-s", type=float, default=120.0,
                        help="per measurement, and for building a user model before any (s)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per job (default: one per core)")
    parser.add_argument("--seed", type=int, default=0, help="model init, batches, order of measurements")
    parser.add_argument("--batch-size", type=int, default=None, help=argparse.SUPPRESS)  # tests only
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _reference_tables(solo_path: str | None, pairs_path: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The reference tables: the pipeline's Parquet files, or CSV files in the user format (coloc.datasets)."""
    if str(pairs_path).endswith(".csv"):
        return load_user(pairs_path, solo_path)
    if not solo_path:
        raise ProbeError(f"{pairs_path}: a Parquet pairs table needs its solo table (--solo)")
    return pd.read_parquet(solo_path), pd.read_parquet(pairs_path)


def main(argv: list[str] | None = None) -> int:
    """`coloc probe ...`: 0 on success, 1 with the reason on stderr."""
    args = build_parser().parse_args(argv)
    try:
        check_options(k=args.k, repeats=args.repeats, seed=args.seed, window_s=args.window_s, warmup_s=args.warmup_s,
                      timeout_s=args.timeout_s, threads=args.threads, batch_size=args.batch_size)
        solo, pairs = _reference_tables(args.solo, args.pairs)
        settings = profiler.Settings(device=args.device, window_s=args.window_s, warmup_s=args.warmup_s,
                                     timeout_s=args.timeout_s, threads=args.threads, batch_size=args.batch_size,
                                     seed=args.seed)
        table = run(args.model, solo, pairs, args.out, args.log, k=args.k, settings=settings, repeats=args.repeats,
                    predictor=args.predictor, progress=not args.quiet)
    except (ProbeError, profiler.ProfilerError, DataError, FileNotFoundError, KeyError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err  # a KeyError's str() is its repr
        print(f"coloc probe: {message}", file=sys.stderr)
        return 1
    print(f"{args.model} on {table['device'].iloc[0]}: probed next to {table['references'].iloc[0]}; predictions "
          f"next to {len(table)} job types in {args.out}.csv and {args.out}.parquet")
    return 0
