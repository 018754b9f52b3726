"""Users' own measurements (the CSV format of docs/own-measurements.md; config ``datasets.user.<name>``): each
source is the dataset ``user-<name>``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd

from coloc.datasets.tables import MAX_NORM, DataError, check_column

PREFIX = "user-"  # a user's source <name> is the dataset user-<name>
FOLDER = "data/processed/user/{name}"  # where the workflow keeps its tables



def is_user(dataset: str) -> bool:
    """Whether ``dataset`` names a user's own source (``user-<name>``)."""
    return str(dataset).startswith(PREFIX) and len(str(dataset)) > len(PREFIX)


def dataset(name: str):
    """The dataset of the user's source ``user-<name>`` (its devices are those its CSV files name)."""
    from coloc.datasets import Dataset

    source = name[len(PREFIX):]

    def label(devices, families=()) -> str:
        return f"user data {source!r} (measured, {'/'.join(sorted(set(devices)))})"

    return Dataset(name=name, short=f"user data {source!r}", title=f"user data {source!r}",
                   folder=FOLDER.format(name=source), label=label, load=load_user)


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
        check_column(path, raw, raw[column] == "", column, "a name")
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
    check_column(path, raw, bad, column, expected)
    return values.where(rows)


def _read_user_solo(path: Path) -> pd.DataFrame:
    raw = _read_user_csv(path, USER_SOLO_COLUMNS, "solo")
    tput = _user_numbers(path, raw, "throughput", pd.Series(True, index=raw.index), "a positive iterations/s", 0.0)
    repeated = raw.duplicated(["device", "workload"], keep="first")
    check_column(path, raw, repeated, "workload", "one row per device and job type (this one repeats an earlier row)")
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
        check_column(path, raw, ~flag.isin(["true", "false", "1", "0", ""]), "feasible", "true or false")
        feasible = ~flag.isin(["false", "0"])
    known = solo.set_index(["device", "workload"])["throughput"].to_dict()
    solo_of = {side: pd.Series([known.get((d, w), np.nan) for d, w in zip(raw["device"], raw[f"workload_{side}"], strict=True)],
                               index=raw.index, dtype=float) for side in "ab"}
    if not solo.empty:
        for side in "ab":
            check_column(path, raw, solo_of[side].isna(), f"workload_{side}",
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
            check_column(path, raw, off, f"norm_{side}", f"tput_{side} / solo throughput (within "
                          f"{USER_NORM_TOLERANCE:.0%}), as both are given")
        if norm is None:
            norm = tput / solo_of[side]
            check_column(path, raw, feasible & (norm > MAX_NORM), f"tput_{side}",
                          f"at most {MAX_NORM} x the solo throughput (a job sharing its GPU is not faster)")
        out[f"norm_{side}"] = norm.astype(float)
        out[f"tput_{side}"] = (tput if tput is not None else norm * solo_of[side]).astype(float)
    out["feasible"] = feasible.to_numpy(bool)
    swap = out["workload_a"] > out["workload_b"]
    for left, right in (("workload_a", "workload_b"), ("tput_a", "tput_b"), ("norm_a", "norm_b")):
        out.loc[swap, [left, right]] = out.loc[swap, [right, left]].to_numpy()
    repeated = out.duplicated(list(USER_PAIR_KEYS), keep="first")
    check_column(path, raw, repeated, "workload_b", "one row per device and unordered pair (this one repeats an "
                  "earlier row, perhaps with the jobs swapped)")
    columns = ["device", "workload_a", "workload_b", "tput_a", "tput_b", "norm_a", "norm_b", "feasible"]
    return out[columns].reset_index(drop=True)
