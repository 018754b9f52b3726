"""Cross-validation protocols: which pairs a predictor is trained on and which it is scored on.

* ``random5``: random K-fold (K = 5) over the unordered feasible pairs (all devices
  together), shuffled by the seed. Every job type and device is in training.
* ``lofo``: leave one family out. The test fold holds every pair touching the family;
  training holds no pair, solo row or workload row of that family.
* ``xdevice``: leave one device out (train on the other GPU types, test on it); training
  holds no pair or solo row of that device.

Infeasible pairs are neither trained on nor scored. A protocol that cannot be run on a
table (e.g. one device only for ``xdevice``) raises :class:`ProtocolSkipped` with the reason.

Utilization folds (Horus's per-job prediction, out-of-fold) follow the same idea per job:
``random5`` groups solo rows by job type into K folds (a job type is predicted by a model
that saw it on no device), ``lofo`` by family, ``xdevice`` by device.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coloc.datasets import family_of
from coloc.predict.base import Tables

PROTOCOLS = ("random5", "lofo", "xdevice")


class ProtocolSkipped(ValueError):
    """This protocol does not apply to these tables (the message says why)."""


def derived_seed(seed: int, *names: str) -> int:
    """An independent seed for one source of randomness, derived from the run's seed and a name."""
    entropy = [int(seed)] + [zlib.crc32(n.encode()) for n in names]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


@dataclass(frozen=True)
class Fold:
    """One train/test split: ``train`` tables and the feasible ``test`` pairs."""

    protocol: str
    fold: int
    held_out: str  # what the test fold holds: "k=<i>", a family or a device
    train: Tables
    test: pd.DataFrame


def _feasible(pairs: pd.DataFrame) -> pd.DataFrame:
    return pairs[pairs["feasible"].astype(bool)].reset_index(drop=True)


def _touches(pairs: pd.DataFrame, family: str) -> pd.Series:
    return (pairs["workload_a"].map(family_of) == family) | (pairs["workload_b"].map(family_of) == family)


def _shuffled_kfold(n: int, k: int, seed: int) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return [np.sort(part) for part in np.array_split(order, k)]


def folds(tables: Tables, protocol: str, seed: int = 0, k: int = 5) -> list[Fold]:
    """The folds of ``protocol`` on these tables (each fold's training tables already restricted)."""
    if protocol == "random5":
        return _random_folds(tables, seed, k)
    if protocol == "lofo":
        return _family_folds(tables)
    if protocol == "xdevice":
        return _device_folds(tables)
    raise KeyError(f"unknown protocol {protocol!r}; expected one of {PROTOCOLS}")


def _random_folds(tables: Tables, seed: int, k: int) -> list[Fold]:
    pairs = _feasible(tables.pairs)
    if len(pairs) < 2:
        raise ProtocolSkipped(f"random5: {len(pairs)} feasible pair(s); need at least 2")
    parts = _shuffled_kfold(len(pairs), min(k, len(pairs)), derived_seed(seed, "random5-folds"))
    out = []
    for i, test_idx in enumerate(parts):
        train_pairs = pairs.drop(index=test_idx)
        out.append(Fold("random5", i, f"k={i}", tables.subset(train_pairs), pairs.loc[test_idx].reset_index(drop=True)))
    return out


def _family_folds(tables: Tables) -> list[Fold]:
    pairs = _feasible(tables.pairs)
    fams = sorted(set(pairs["workload_a"].map(family_of)) | set(pairs["workload_b"].map(family_of)))
    if len(fams) < 2:
        raise ProtocolSkipped(f"lofo: the pairs hold {len(fams)} family ({fams}); need at least 2")
    out = []
    for i, fam in enumerate(fams):
        keep = [w for w in tables.workloads["workload"] if family_of(w) != fam]
        test = _touches(pairs, fam)
        train_pairs = tables.pairs[~_touches(tables.pairs, fam)]
        out.append(Fold("lofo", i, fam, tables.subset(train_pairs, workloads=keep), pairs[test].reset_index(drop=True)))
    return out


def _device_folds(tables: Tables) -> list[Fold]:
    pairs = _feasible(tables.pairs)
    devices = sorted(pairs["device"].unique())
    if len(devices) < 2:
        raise ProtocolSkipped(f"xdevice: the pairs hold {len(devices)} device ({devices}); need at least 2")
    out = []
    for i, dev in enumerate(devices):
        keep = [d for d in tables.devices["name"] if d != dev]
        train_pairs = tables.pairs[tables.pairs["device"] != dev]
        test = pairs[pairs["device"] == dev].reset_index(drop=True)
        out.append(Fold("xdevice", i, dev, tables.subset(train_pairs, devices=keep), test))
    return out


# ---------------------------------------------------------------------------- inner cross-fitting


def inner_folds(pairs: pd.DataFrame, groups: str | None, seed: int, k: int, name: str):
    """Cross-fitting inside a training fold, carved like the protocol's test folds.

    ``pairs``: the feasible training pairs (rows 0..n-1); their directed rows are i (job a)
    and n + i (job b), as :func:`coloc.predict.base.pair_labels` orders them. Returns a list
    of (fit_pairs, fill_rows): boolean masks over the n pairs to fit on and over the 2n
    directed rows whose out-of-fold value that fit supplies. ``groups`` None: K random folds
    of pairs; "family": per family, the pairs touching it are held out and fill the rows of
    that family's jobs; "device": per device. Falls back to random folds when there is one
    group only. Every directed row is filled exactly once.
    """
    n = len(pairs)
    if groups == "family":
        fam_a, fam_b = pairs["workload_a"].map(family_of).to_numpy(), pairs["workload_b"].map(family_of).to_numpy()
        fams = sorted(set(fam_a) | set(fam_b))
        if len(fams) > 1:
            job_fam = np.concatenate([fam_a, fam_b])
            return [(~((fam_a == f) | (fam_b == f)), job_fam == f) for f in fams]
    elif groups == "device":
        dev = pairs["device"].to_numpy()
        if len(set(dev)) > 1:
            return [(dev != d, np.concatenate([dev == d, dev == d])) for d in sorted(set(dev))]
    elif groups is not None:
        raise KeyError(f"inner folds: groups {groups!r}; expected None, 'family' or 'device'")
    order = np.random.default_rng(derived_seed(seed, name)).permutation(n)
    out = []
    for part in np.array_split(order, min(k, n)):
        held = np.zeros(n, bool)
        held[part] = True
        out.append((~held, np.concatenate([held, held])))
    return out


# ---------------------------------------------------------------------------- utilization folds


@dataclass(frozen=True)
class UtilFold:
    """Training tables (solo rows of other job types / families / devices) and held-out solo rows."""

    protocol: str
    fold: int
    held_out: str
    train: Tables
    test: pd.DataFrame  # solo rows: device, workload, throughput


def util_folds(tables: Tables, protocol: str, seed: int = 0, k: int = 5) -> list[UtilFold]:
    """Folds over solo rows for out-of-fold per-job (utilization) predictions."""
    solo = tables.solo.reset_index(drop=True)
    if protocol == "random5":
        names = sorted(solo["workload"].unique())
        if len(names) < 2:
            raise ProtocolSkipped(f"random5 (utilization): {len(names)} job type(s); need at least 2")
        parts = _shuffled_kfold(len(names), min(k, len(names)), derived_seed(seed, "random5-util-folds"))
        groups = [(f"k={i}", {names[j] for j in part}) for i, part in enumerate(parts)]
        held = solo["workload"]
    elif protocol == "lofo":
        held = solo["workload"].map(family_of)
        groups = [(f, {f}) for f in sorted(held.unique())]
    elif protocol == "xdevice":
        held = solo["device"]
        groups = [(d, {d}) for d in sorted(held.unique())]
    else:
        raise KeyError(f"unknown protocol {protocol!r}; expected one of {PROTOCOLS}")
    if len(groups) < 2:
        raise ProtocolSkipped(f"{protocol} (utilization): one group only ({groups[0][0]})")
    out = []
    for i, (name, members) in enumerate(groups):
        test = held.isin(members)
        train = tables.subset(tables.pairs.iloc[:0], workloads=sorted(set(solo.loc[~test, "workload"])),
                              devices=sorted(set(solo.loc[~test, "device"])))
        train = Tables(train.workloads, solo[~test].reset_index(drop=True), train.pairs, train.devices)
        out.append(UtilFold(protocol, i, name, train, solo[test].reset_index(drop=True)))
    return out
