"""Parsers from the public data formats into coloc's canonical tables.

* Gavel's ``simulation_throughputs.json`` -> ``solo`` and ``pairs``.
* The Philly-derived ``philly.csv`` -> ``trace``.

Every check that fails raises :class:`DataError` naming the file, the row or
key, and what was expected.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

GAVEL_DEVICES = ("k80", "p100", "v100")
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
ASSIGN_RULES = ("uniform", "gpu_time")
MAX_GPUS = 2**53  # GPUs of one job: whole numbers above this are not exact as floats (nor as the int64 column)

# Gavel job-type family -> coloc family and dataset (workload id: <family>-<dataset>-b<batch>).
GAVEL_FAMILIES = {
    "ResNet-18": ("resnet18", "cifar10"),
    "ResNet-50": ("resnet50", "imagenet"),
    "Transformer": ("transformer", "multi30k"),
    "LM": ("lm", "wikitext2"),
    "Recommendation": ("recommendation", "ml20m"),
}
# Gavel job types without a batch size, and the batch coloc's zoo gives them.
GAVEL_FIXED = {"A3C": "a3c-pong-b4", "CycleGAN": "cyclegan-monet2photo-b1"}
PAIR_TOLERANCE = 1e-6
# Most a job may gain from sharing its GPU: co-located over solo throughput above this is refused as
# a broken measurement (Gavel's largest is 1.0; the margin leaves room for measurement noise).
MAX_NORM = 1.5
GAVEL_KEY = re.compile(r"\('([^']+)', (\d+)\)")


class DataError(ValueError):
    """Input data does not have the expected shape or values."""


def gavel_workload_id(job_type: str) -> str:
    """coloc's workload id for a Gavel job type, e.g. 'ResNet-18 (batch size 32)' -> 'resnet18-cifar10-b32'."""
    if job_type in GAVEL_FIXED:
        return GAVEL_FIXED[job_type]
    match = re.fullmatch(r"(.+) \(batch size (\d+)\)", job_type)
    if not match or match.group(1) not in GAVEL_FAMILIES:
        known = ", ".join([*GAVEL_FAMILIES, *GAVEL_FIXED])
        raise KeyError(f"unknown Gavel job type {job_type!r}; expected one of {known}, with '(batch size N)'")
    family, dataset = GAVEL_FAMILIES[match.group(1)]
    return f"{family}-{dataset}-b{int(match.group(2))}"


def family_of(workload: str) -> str:
    """The model family of a workload id: the text before the first '-'."""
    return workload.split("-", 1)[0]


# ---------------------------------------------------------------------------- Gavel


def load_gavel(path: str | Path, devices: Sequence[str] = GAVEL_DEVICES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Gavel's co-location throughputs as the ``solo`` and ``pairs`` tables.

    Only single-GPU job types are kept. ``pairs`` holds one row per unordered
    pair (self-pairs included) per device, with ``workload_a <= workload_b``;
    a pair whose throughputs are both 0 did not fit and has ``feasible`` False
    and NaN normalized throughputs.
    """
    path = Path(path)
    raw = _read_json(path)
    solo_rows, pair_rows = [], []
    for device in devices:
        if device not in raw:
            raise DataError(f"{path}: device key {device!r} missing; expected one of {sorted(raw)}")
        entries = _single_gpu_entries(path, device, raw[device])
        solo = {w: _solo_throughput(path, device, key, entry) for w, (key, entry) in entries.items()}
        solo_rows += [{"device": device, "workload": w, "throughput": t} for w, t in sorted(solo.items())]
        pair_rows += _pair_rows(path, device, entries, solo)
    solo_df = pd.DataFrame(solo_rows)
    pairs_df = pd.DataFrame(pair_rows)
    return solo_df, pairs_df


def _read_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh, object_pairs_hook=lambda pairs: _unique_keys(path, pairs))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise DataError(f"{path}: not valid JSON text ({type(err).__name__}: {err})") from err
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object of GPU types at the top level")
    return data


def _unique_keys(path: Path, pairs: list[tuple[str, object]]) -> dict:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise DataError(f"{path}: key {repeated[0]!r} appears more than once in one object; expected unique keys")
    return dict(pairs)


def _parse_key(path: Path, where: str, key: str) -> tuple[str, int]:
    match = GAVEL_KEY.fullmatch(key)
    if not match or not match.group(2).isascii():
        raise DataError(f"{path}: key {where}{key!r} is not a \"('<job type>', <num gpus>)\" tuple")
    return match.group(1), int(match.group(2))


def _single_gpu_entries(path: Path, device: str, table: dict) -> dict[str, tuple[str, dict]]:
    if not isinstance(table, dict):
        raise DataError(f"{path}: key {device}: expected an object of job types, got {type(table).__name__}")
    entries = {}
    for key, entry in table.items():
        job_type, num_gpus = _parse_key(path, f"{device}/", key)
        if num_gpus != 1:
            continue
        try:
            workload = gavel_workload_id(job_type)
        except KeyError as err:
            raise DataError(f"{path}: key {device}/{key}: {err.args[0]}") from err
        if not isinstance(entry, dict):
            raise DataError(f"{path}: key {device}/{key}: expected an object of throughputs")
        if workload in entries:
            raise DataError(f"{path}: keys {device}/{entries[workload][0]} and {device}/{key} are both job type "
                            f"{workload}; expected one key per job type")
        entries[workload] = (key, entry)
    if not entries:
        raise DataError(f"{path}: device {device!r} has no single-GPU job types")
    return entries


def _number(path: Path, where: str, value, what: str) -> float:
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an integer too large for a float
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise DataError(f"{path}: key {where}: {what} must be a finite non-negative number, got {value!r:.40}")
    return number


def _solo_throughput(path: Path, device: str, key: str, entry: dict) -> float:
    where = f"{device}/{key}/null"
    if "null" not in entry:
        raise DataError(f"{path}: key {where} missing; expected the solo throughput (iterations/s)")
    tput = _number(path, where, entry["null"], "solo throughput")
    if tput == 0:
        raise DataError(f"{path}: key {where}: solo throughput is 0; expected a positive iterations/s")
    return tput


def _pair_value(path: Path, device: str, entries: dict, a: str, b: str) -> tuple[float, float]:
    key_a, entry_a = entries[a]
    key_b = entries[b][0]
    where = f"{device}/{key_a}/{key_b}"
    value = entry_a.get(key_b)
    if not isinstance(value, list) or len(value) != 2:
        raise DataError(f"{path}: key {where}: expected [throughput of A, throughput of B], got {value!r}")
    return _number(path, where, value[0], "pair throughput"), _number(path, where, value[1], "pair throughput")


def _pair_rows(path: Path, device: str, entries: dict, solo: dict[str, float]) -> list[dict]:
    names = sorted(entries)
    rows = []
    for i, a in enumerate(names):
        for b in names[i:]:
            ta, tb = _pair_value(path, device, entries, a, b)
            rb, ra = _pair_value(path, device, entries, b, a)
            if not (math.isclose(ta, ra, rel_tol=PAIR_TOLERANCE) and math.isclose(tb, rb, rel_tol=PAIR_TOLERANCE)):
                raise DataError(
                    f"{path}: key {device}/{entries[a][0]}/{entries[b][0]} is [{ta}, {tb}] but its reverse "
                    f"{device}/{entries[b][0]}/{entries[a][0]} is [{rb}, {ra}]; expected the same pair swapped"
                )
            feasible = not (ta == 0 and tb == 0)
            norm_a, norm_b = (ta / solo[a], tb / solo[b]) if feasible else (np.nan, np.nan)
            if feasible and max(norm_a, norm_b) > MAX_NORM:
                raise DataError(
                    f"{path}: key {device}/{entries[a][0]}/{entries[b][0]} is [{ta}, {tb}] against solo "
                    f"[{solo[a]}, {solo[b]}]: normalized [{norm_a:.3g}, {norm_b:.3g}]; expected at most {MAX_NORM} "
                    f"(a job sharing its GPU is not faster than alone)"
                )
            rows.append({
                "device": device, "workload_a": a, "workload_b": b, "tput_a": ta, "tput_b": tb,
                "norm_a": norm_a, "norm_b": norm_b, "feasible": feasible,
            })
    return rows


# ---------------------------------------------------------------------------- Philly


def load_philly(
    path: str | Path,
    workloads: Sequence[str],
    assign: str = "uniform",
    seed: int = 0,
    clusters: Sequence[str] | None = None,
    window: tuple[float, float] | None = None,
    max_jobs: int | None = None,
    workload_cost: pd.Series | None = None,
) -> pd.DataFrame:
    """The Philly-derived trace as the ``trace`` table, filtered, with a job type per job.

    ``submit_time`` counts seconds from the first submission of the whole
    trace; ``window`` = (start, end) keeps jobs submitted in [start, end) of
    those seconds, and ``submit_time`` is then re-based on the first kept job.
    ``max_jobs`` keeps the first jobs by submit time. Job types are drawn from
    ``workloads`` by the rule ``assign`` (see :func:`assign_workloads`).
    """
    path = Path(path)
    raw = _read_philly(path)
    trace = pd.DataFrame({
        "submit_time": (raw["timestamp"] - raw["timestamp"].min()).dt.total_seconds(),
        "duration": raw["duration"].astype(float),
        "num_gpus": raw["num_gpus"].astype(int),
        "gpu_time": raw["gpu_time"].astype(float),
        "cluster": raw["cluster"].astype(str),
    })
    trace = trace.sort_values("submit_time", kind="stable").reset_index(drop=True)
    if clusters:
        unknown = sorted(set(clusters) - set(trace["cluster"]))
        if unknown:
            raise DataError(f"{path}: clusters {unknown} not in the trace; it has {sorted(trace['cluster'].unique())}")
        trace = trace[trace["cluster"].isin(clusters)]
    if window is not None:
        start, end = window
        trace = trace[(trace["submit_time"] >= start) & (trace["submit_time"] < end)]
    if max_jobs is not None:
        trace = trace.head(max_jobs)
    if trace.empty:
        raise DataError(f"{path}: no job left after filtering (clusters={clusters}, window={window}, max_jobs={max_jobs})")
    trace = trace.reset_index(drop=True)
    trace["submit_time"] -= trace["submit_time"].iloc[0]
    trace.insert(0, "job_id", np.arange(len(trace)))
    trace["workload"] = assign_workloads(trace, workloads, assign, seed, workload_cost)
    return trace[["job_id", "submit_time", "duration", "num_gpus", "workload", "cluster"]]


def _read_philly(path: Path) -> pd.DataFrame:
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable UTF-8 CSV ({type(err).__name__}: {err})") from err
    missing = [c for c in PHILLY_COLUMNS if c not in raw.columns]
    if missing:
        raise DataError(f"{path}: columns {missing} missing; expected {list(PHILLY_COLUMNS)}, found {list(raw.columns)}")
    out = pd.DataFrame({"cluster": raw["cluster"]})
    out["timestamp"] = pd.to_datetime(raw["timestamp"], errors="coerce", format="%Y-%m-%d %H:%M:%S")
    _check_column(path, raw, out["timestamp"].isna(), "timestamp", "a time 'YYYY-MM-DD HH:MM:SS'")
    for column in ("duration", "num_gpus", "gpu_time"):
        out[column] = pd.to_numeric(raw[column], errors="coerce")
        _check_column(path, raw, ~np.isfinite(out[column]), column, "a finite number")
        _check_column(path, raw, out[column] <= 0, column, "a positive number")
    _check_column(path, raw, out["num_gpus"] != out["num_gpus"].round(), "num_gpus", "a whole number")
    _check_column(path, raw, out["num_gpus"] > MAX_GPUS, "num_gpus", f"at most {MAX_GPUS} GPUs")
    _check_column(path, raw, raw["cluster"].str.strip() == "", "cluster", "a cluster name")
    return out


def _check_column(path: Path, raw: pd.DataFrame, bad: pd.Series, column: str, expected: str) -> None:
    if bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{path}: row {first + 2} (line {first + 2} of the file), column {column!r}: "
            f"got {raw[column].iloc[first]!r}, expected {expected} ({int(bad.sum())} such rows)"
        )


def assign_workloads(
    trace: pd.DataFrame,
    workloads: Sequence[str],
    rule: str,
    seed: int,
    workload_cost: pd.Series | None = None,
) -> np.ndarray:
    """A job type for every job of ``trace``, by a seeded rule.

    * ``uniform``: each job draws a job type uniformly at random (as Gavel does).
    * ``gpu_time``: the jobs are split into as many classes as there are
      workload-cost classes, by quantiles of their GPU time (duration x GPUs);
      the workloads are split the same way by ``workload_cost`` (for example
      seconds per iteration on the reference device); a job draws uniformly
      from the workloads of its class, so long jobs get heavy models (in the
      spirit of the Pollux artifact's assignment by GPU-time class).
    """
    names = sorted(workloads)
    if not names:
        raise DataError("assign_workloads: the list of workloads is empty")
    rng = np.random.default_rng(seed)
    if rule == "uniform":
        return rng.choice(np.array(names, dtype=object), size=len(trace))
    if rule != "gpu_time":
        raise DataError(f"assign_workloads: unknown rule {rule!r}; expected one of {ASSIGN_RULES}")
    if workload_cost is None:
        raise DataError("assign_workloads: rule 'gpu_time' needs workload_cost (cost per workload)")
    missing = [w for w in names if w not in workload_cost.index]
    if missing:
        raise DataError(f"assign_workloads: workload_cost lacks {missing}")
    n_classes = min(3, len(names))
    by_cost = sorted(names, key=lambda w: (workload_cost[w], w))
    groups = np.array_split(np.array(by_cost, dtype=object), n_classes)
    gpu_time = trace["duration"].to_numpy() * trace["num_gpus"].to_numpy()
    job_class = pd.qcut(pd.Series(gpu_time).rank(method="first"), n_classes, labels=False).to_numpy()
    out = np.empty(len(trace), dtype=object)
    for k, group in enumerate(groups):
        members = job_class == k
        out[members] = rng.choice(group, size=int(members.sum()))
    return out


def trace_from_philly(
    path: str | Path,
    solo: pd.DataFrame,
    *,
    assign: str,
    seed: int,
    reference_device: str,
    clusters: Sequence[str] | None = None,
    window: Sequence[float] | None = None,
    max_jobs: int | None = None,
) -> pd.DataFrame:
    """The trace table with job types drawn from the workloads measured on ``reference_device``.

    The workload cost used by the ``gpu_time`` rule is seconds per iteration
    (1 / solo throughput) on the reference device.
    """
    reference = solo.loc[solo["device"] == reference_device].set_index("workload")["throughput"]
    if reference.empty:
        raise DataError(f"solo table: no workload measured on reference device {reference_device!r}; "
                        f"it has {sorted(solo['device'].unique())}")
    return load_philly(
        path, sorted(reference.index), assign=assign, seed=seed, clusters=clusters or None,
        window=tuple(window) if window is not None else None, max_jobs=max_jobs, workload_cost=1.0 / reference,
    )


def pair_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per device: unordered pairs, infeasible pairs, and the spread of normalized throughput."""
    norms = pd.concat([pairs[["device", "norm_a"]].rename(columns={"norm_a": "norm"}),
                       pairs[["device", "norm_b"]].rename(columns={"norm_b": "norm"})])
    spread = norms.groupby("device")["norm"].describe()[["mean", "min", "50%", "max"]]
    counts = pairs.groupby("device").agg(pairs=("feasible", "size"), infeasible=("feasible", lambda s: int((~s).sum())))
    return counts.join(spread.add_prefix("norm_"))


def save_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write a canonical table as Parquet (folders created, no index)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(path, index=False)
    return path


# ---------------------------------------------------------------------------- users' own measurements

USER_SOLO_COLUMNS = ("device", "workload", "throughput")
USER_PAIR_KEYS = ("device", "workload_a", "workload_b")
USER_NORM_TOLERANCE = 0.02  # a row giving both throughputs and normalized throughputs: most they may disagree


def load_user(pairs_path: str | Path, solo_path: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Users' own measurements (the CSV format of docs/own-measurements.md) as ``solo`` and ``pairs``.

    ``pairs`` CSV: columns ``device``, ``workload_a``, ``workload_b`` and either ``norm_a``, ``norm_b``
    (co-located over solo throughput) or ``tput_a``, ``tput_b`` (co-located iterations/s; needs the solo
    table), or both; optional ``feasible`` (true/false; a false row leaves the numbers empty). One row per
    unordered pair and device (a self-pair too); the order of the two jobs is free. ``solo`` CSV
    (optional): ``device``, ``workload``, ``throughput`` (iterations/s), one row per device and job type.
    Without it the solo table has no rows and the pairs have NaN throughputs: a predictor that needs solo
    throughputs cannot run on such a source. Every error names the file, the line, the column and the value.
    """
    solo = _read_user_solo(Path(solo_path)) if solo_path else pd.DataFrame(
        {"device": pd.Series(dtype=str), "workload": pd.Series(dtype=str), "throughput": pd.Series(dtype=float)})
    return solo, _read_user_pairs(Path(pairs_path), solo, solo_path)


def _read_user_csv(path: Path, required, what: str) -> pd.DataFrame:
    try:
        _check_user_csv_shape(path)
        # index_col=False: a row with a field more than the header is never read as an index column
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8", skipinitialspace=True,
                          index_col=False)
    except FileNotFoundError as err:
        raise DataError(f"{path}: no such {what} file") from err
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, csv.Error) as err:
        raise DataError(f"{path}: not a readable UTF-8 CSV ({type(err).__name__}: {err})") from err
    raw.columns = [c.strip() for c in raw.columns]
    missing = [c for c in required if c not in raw.columns]
    if missing:
        raise DataError(f"{path}: columns {missing} missing; expected {list(required)}, found {list(raw.columns)}")
    if raw.empty:
        raise DataError(f"{path}: no rows; expected one row per {what} measurement")
    for column in raw.columns:
        raw[column] = raw[column].str.strip()
    for column in required:
        _check_column(path, raw, raw[column] == "", column, "a name")
    return raw


def _check_user_csv_shape(path: Path) -> None:
    """Refuse a header that names a column twice and a row whose field count is not the header's: pandas would
    drop the repeated column's second values, read a field more on every row as the index (the columns shifted
    by one) and fill a missing field with a blank."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, skipinitialspace=True)
        header = next(reader, None)
        if header is None:
            return  # empty: pandas says so
        names = [name.strip() for name in header]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise DataError(f"{path}: column {name!r} appears twice in the header (fields "
                                f"{names.index(name) + 1} and {i + 1} of {names}); expected each column once")
        row = 1
        for fields in reader:
            if not fields:
                continue  # a blank line: skipped, as pandas does
            row += 1
            if len(fields) != len(names):
                raise DataError(f"{path}: row {row} (line {reader.line_num} of the file) has {len(fields)} "
                                f"fields, expected {len(names)} as the header {names}")


def _user_numbers(path: Path, raw: pd.DataFrame, column: str, rows: pd.Series, expected: str, low: float,
                  high: float = math.inf) -> pd.Series:
    """The column as floats on ``rows`` (NaN elsewhere), refused unless finite and in (low, high]."""
    values = pd.to_numeric(raw[column].where(rows, ""), errors="coerce")
    bad = rows & ~(np.isfinite(values) & (values > low) & (values <= high))
    _check_column(path, raw, bad, column, expected)
    return values.where(rows)


def _read_user_solo(path: Path) -> pd.DataFrame:
    raw = _read_user_csv(path, USER_SOLO_COLUMNS, "solo")
    tput = _user_numbers(path, raw, "throughput", pd.Series(True, index=raw.index), "a positive iterations/s", 0.0)
    repeated = raw.duplicated(["device", "workload"], keep="first")
    _check_column(path, raw, repeated, "workload", "one row per device and job type (this one repeats an earlier row)")
    return pd.DataFrame({"device": raw["device"], "workload": raw["workload"], "throughput": tput.astype(float)})


def _read_user_pairs(path: Path, solo: pd.DataFrame, solo_path) -> pd.DataFrame:
    raw = _read_user_csv(path, USER_PAIR_KEYS, "pairs")
    has_norm, has_tput = {"norm_a", "norm_b"} <= set(raw.columns), {"tput_a", "tput_b"} <= set(raw.columns)
    if not (has_norm or has_tput):
        raise DataError(f"{path}: expected columns norm_a, norm_b (normalized throughputs) or tput_a, tput_b "
                        f"(throughputs, with a solo table); found {list(raw.columns)}")
    if has_tput and not has_norm and solo.empty:
        raise DataError(f"{path}: throughputs tput_a, tput_b need a solo table to normalize them; give one, "
                        f"or give norm_a, norm_b")
    feasible = pd.Series(True, index=raw.index)
    if "feasible" in raw.columns:
        flag = raw["feasible"].str.lower()
        _check_column(path, raw, ~flag.isin(["true", "false", "1", "0", ""]), "feasible", "true or false")
        feasible = ~flag.isin(["false", "0"])
    known = solo.set_index(["device", "workload"])["throughput"].to_dict()
    solo_of = {side: pd.Series([known.get((d, w), np.nan) for d, w in zip(raw["device"], raw[f"workload_{side}"])],
                               index=raw.index, dtype=float) for side in "ab"}
    if not solo.empty:
        for side in "ab":
            _check_column(path, raw, solo_of[side].isna(), f"workload_{side}",
                          f"a job type with a solo throughput on the row's device in {solo_path}")
    out = raw[list(USER_PAIR_KEYS)].copy()
    for side in "ab":
        norm = tput = None
        if has_norm:
            norm = _user_numbers(path, raw, f"norm_{side}", feasible, f"a normalized throughput in (0, {MAX_NORM}]",
                                 0.0, MAX_NORM)
        if has_tput:
            tput = _user_numbers(path, raw, f"tput_{side}", feasible, "a positive iterations/s", 0.0)
        if norm is not None and tput is not None and not solo.empty:
            off = feasible & ((tput / solo_of[side] - norm).abs() > USER_NORM_TOLERANCE * norm)
            _check_column(path, raw, off, f"norm_{side}", f"tput_{side} / solo throughput (within "
                          f"{USER_NORM_TOLERANCE:.0%}), as both are given")
        if norm is None:
            norm = tput / solo_of[side]
            _check_column(path, raw, feasible & (norm > MAX_NORM), f"tput_{side}",
                          f"at most {MAX_NORM} x the solo throughput (a job sharing its GPU is not faster)")
        out[f"norm_{side}"] = norm.astype(float)
        out[f"tput_{side}"] = (tput if tput is not None else norm * solo_of[side]).astype(float)
    out["feasible"] = feasible.to_numpy(bool)
    swap = out["workload_a"] > out["workload_b"]
    for left, right in (("workload_a", "workload_b"), ("tput_a", "tput_b"), ("norm_a", "norm_b")):
        out.loc[swap, [left, right]] = out.loc[swap, [right, left]].to_numpy()
    repeated = out.duplicated(list(USER_PAIR_KEYS), keep="first")
    _check_column(path, raw, repeated, "workload_b", "one row per device and unordered pair (this one repeats an "
                  "earlier row, perhaps with the jobs swapped)")
    columns = ["device", "workload_a", "workload_b", "tput_a", "tput_b", "norm_a", "norm_b", "feasible"]
    return out[columns].reset_index(drop=True)
