"""Gavel's measured dataset (Narayanan et al., OSDI 2020): its ``simulation_throughputs.json`` of K80, P100 and
V100 pairs as ``solo`` and ``pairs`` (config ``sources.gavel``).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from coloc.datasets import Dataset, measured_label
from coloc.datasets.tables import MAX_NORM, DataError, family_of

GAVEL_DEVICES = ("k80", "p100", "v100")
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
GAVEL_KEY = re.compile(r"\('([^']+)', (\d+)\)")


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



def families() -> list[str]:
    """The model families of Gavel's job types (those its file names, :func:`gavel_workload_id`): those a trace,
    the probing scenario or the scheduling delay may draw from (the simulator's job types are Gavel's)."""
    return sorted({family for family, _ in GAVEL_FAMILIES.values()} | {family_of(w) for w in GAVEL_FIXED.values()})


DATASET = Dataset(
    name="gavel", short="Gavel", title="Gavel", truth="Gavel", folder="data/processed", label=measured_label("Gavel"),
    devices=GAVEL_DEVICES, families=families, families_key="families", sources=("gavel_throughputs",),
    licence="MIT", load=load_gavel)
