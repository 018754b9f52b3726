"""Cross-validation protocols: which pairs a predictor is trained on and which it is scored on.

* ``random5``: random K-fold (K = 5) over the unordered feasible pairs (all devices
  together), shuffled by the seed. Every job type and device is in training.
* ``lofo``: leave one family out. The test fold holds every pair touching the family;
  training holds no pair, solo row or workload row of that family.
* ``lojo``: leave one job type out, the same way for one job type (e.g. one batch size of a
  family): the other job types of its family stay in training. A rung between ``random5``
  and ``lofo``: how well a predictor generalizes to a new job of a known family.
* ``xdevice``: leave one device out (train on the other GPU types, test on it); training
  holds no pair or solo row of that device.
* ``xdataset``: leave one data source out: the tables' ``source`` column names each row's source (Gavel,
  Lucid: :func:`coloc.datasets.gavel_lucid.cross_tables`); train on the devices of the other sources, test on the
  held-out one's (Gavel's three GPUs -> the RTX 3090, and the reverse). ``xdevice`` with devices grouped by source.
* ``lofo-probe-<k>`` / ``lojo-probe-<k>`` (k >= 0; the runs use 0, 1, 2, 3, 5): ``lofo`` / ``lojo``
  where each held-out job type was *probed*: on every device, its pairs with k reference
  co-runners (chosen from the fold's training pairs only, by
  :func:`coloc.predict.references.choose_references`) are in training, and so are its solo
  throughputs and its workloads row. Every predictor is scored on the held-out group's other
  pairs (a pair that was a probe in one of its jobs' own folds is scored in neither). k = 0 is
  ``lofo`` / ``lojo`` itself (the same folds).

Infeasible pairs are neither trained on nor scored. A protocol that cannot be run on a
table (e.g. one device only for ``xdevice``) raises :class:`ProtocolSkipped` with the reason.

Utilization folds (Horus's per-job prediction, out-of-fold) follow the same idea per job:
``random5`` groups solo rows by job type into K folds (a job type is predicted by a model
that saw it on no device), ``lofo`` by family, ``lojo`` by job type (one fold each),
``xdevice`` by device, ``xdataset`` by source; a probe protocol as its base protocol.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from coloc.datasets import family_of
from coloc.predict.base import Tables
from coloc.predict.references import choose_references

# The protocols that hold out one group of job types, and the group of a job type.
JOB_GROUPS = {"lofo": "family", "lojo": "workload"}
PROBE_COUNTS = (0, 1, 2, 3, 5)  # the probe counts k the runs use (any k >= 0 is a protocol)
PROBE_PROTOCOLS = tuple(f"{base}-probe-{k}" for base in JOB_GROUPS for k in PROBE_COUNTS)
PROTOCOLS = ("random5", "lofo", "lojo", "xdevice", "xdataset") + PROBE_PROTOCOLS
_PROBE = re.compile(r"^(lofo|lojo)-probe-(\d+)$")


def probe_protocol(protocol: str) -> tuple[str, int] | None:
    """(base protocol, k) of a probe protocol such as ``lofo-probe-2``; None for any other protocol."""
    match = _PROBE.match(str(protocol))
    return (match.group(1), int(match.group(2))) if match else None


def base_protocol(protocol: str) -> str:
    """The protocol without its probes: ``lofo`` for ``lofo-probe-2``; the protocol itself otherwise."""
    probe = probe_protocol(protocol)
    return probe[0] if probe else protocol


def job_groups(protocol: str) -> str | None:
    """What a protocol holds out one at a time: "family", "workload" (job type), or None."""
    return JOB_GROUPS.get(base_protocol(protocol))


def check_protocol(protocol: str) -> None:
    """KeyError naming the protocol unless it is one of PROTOCOLS' kinds (a probe protocol with any k)."""
    if protocol not in PROTOCOLS and probe_protocol(protocol) is None:
        raise KeyError(f"unknown protocol {protocol!r}; expected one of {PROTOCOLS} (or lofo-probe-<k>, "
                       f"lojo-probe-<k> for another k >= 0)")


def group_of(groups: str):
    """The function from a job type to its group: ``"family"`` or ``"workload"`` (itself)."""
    if groups == "family":
        return family_of
    if groups == "workload":
        return str
    raise KeyError(f"job groups {groups!r}; expected 'family' or 'workload'")


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
    references: dict = field(default_factory=dict)  # probe protocols: device -> the reference co-runners


def _feasible(pairs: pd.DataFrame) -> pd.DataFrame:
    return pairs[pairs["feasible"].astype(bool)].reset_index(drop=True)


def groups_in(pairs: pd.DataFrame, of=family_of) -> list[str]:
    """The groups (``of``: job type -> group) of the pairs' jobs, sorted."""
    return sorted(set(pairs["workload_a"].map(of)) | set(pairs["workload_b"].map(of)))


def touches(pairs: pd.DataFrame, group: str, of=family_of) -> pd.Series:
    """Pairs with a job whose group (``of``: job type -> group) is ``group``."""
    return (pairs["workload_a"].map(of) == group) | (pairs["workload_b"].map(of) == group)


def _shuffled_kfold(n: int, k: int, seed: int) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return [np.sort(part) for part in np.array_split(order, k)]


def folds(tables: Tables, protocol: str, seed: int = 0, k: int = 5) -> list[Fold]:
    """The folds of ``protocol`` on these tables (each fold's training tables already restricted)."""
    if protocol == "random5":
        return _random_folds(tables, seed, k)
    if protocol in JOB_GROUPS:
        return _group_folds(tables, protocol)
    if protocol == "xdevice":
        return _device_folds(tables)
    if protocol == "xdataset":
        return _device_folds(tables, _source_devices(tables, protocol))
    if probe_protocol(protocol):
        return _probe_folds(tables, protocol)
    check_protocol(protocol)
    raise AssertionError(protocol)  # unreachable: check_protocol raised


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


def _group_folds(tables: Tables, protocol: str) -> list[Fold]:
    """One fold per family (lofo) or job type (lojo): its pairs are tested, nothing of it is trained on."""
    of = group_of(JOB_GROUPS[protocol])
    what = JOB_GROUPS[protocol].replace("workload", "job type")
    pairs = _feasible(tables.pairs)
    names = groups_in(pairs, of)
    if len(names) < 2:
        raise ProtocolSkipped(f"{protocol}: the pairs hold {len(names)} {what} ({names}); need at least 2")
    out = []
    for i, name in enumerate(names):
        keep = [w for w in tables.workloads["workload"] if of(w) != name]
        test = touches(pairs, name, of)
        train_pairs = tables.pairs[~touches(tables.pairs, name, of)]
        out.append(Fold(protocol, i, name, tables.subset(train_pairs, workloads=keep), pairs[test].reset_index(drop=True)))
    return out


def _probe_folds(tables: Tables, protocol: str) -> list[Fold]:
    """The base protocol's folds with the held-out job types' probe pairs moved into training."""
    base, k = probe_protocol(protocol)
    of = group_of(JOB_GROUPS[base])
    out = []
    for fold in _group_folds(tables, base):
        if k == 0:
            out.append(replace(fold, protocol=protocol))
            continue
        name = fold.held_out
        known = tables.pairs[~touches(tables.pairs, name, of)]
        references = {d: choose_references(known, d, k) for d in sorted(tables.pairs["device"].unique())}
        probes = probe_pairs(tables.pairs, name, of, references)
        train = tables.subset(pd.concat([known, tables.pairs[probes]]))
        test = fold.test[~probe_pairs(fold.test, name, of, references).to_numpy()].reset_index(drop=True)
        out.append(Fold(protocol, fold.fold, name, train, test, references))
    return out


def probe_pairs(pairs: pd.DataFrame, group: str, of, references: dict) -> pd.Series:
    """Pairs of a job of ``group`` (``of``: job type -> group) with a reference co-runner of their
    device (``references``: device -> job types)."""
    ref = [set(references.get(d, ())) for d in pairs["device"]]
    in_a, in_b = pairs["workload_a"].map(of) == group, pairs["workload_b"].map(of) == group
    ref_a = pd.Series([w in r for w, r in zip(pairs["workload_a"], ref, strict=True)], index=pairs.index, dtype=bool)
    ref_b = pd.Series([w in r for w, r in zip(pairs["workload_b"], ref, strict=True)], index=pairs.index, dtype=bool)
    return (in_a & ref_b) | (in_b & ref_a)


def _source_devices(tables: Tables, protocol: str) -> dict[str, set]:
    """source -> its devices (the pairs' and solo rows' ``source`` column); ProtocolSkipped unless >= 2 sources,
    none sharing a device."""
    if "source" not in tables.pairs.columns or "source" not in tables.solo.columns:
        raise ProtocolSkipped(f"{protocol}: the tables have no 'source' column (one data source); the cross-dataset "
                              f"protocol runs on Gavel's and Lucid's tables together (dataset gavel-lucid)")
    rows = pd.concat([tables.pairs[["source", "device"]], tables.solo[["source", "device"]]])
    groups = {s: set(part["device"]) for s, part in rows.groupby("source")}
    if len(groups) < 2:
        raise ProtocolSkipped(f"{protocol}: one data source only ({sorted(groups)}); need at least 2")
    if rows.drop_duplicates().duplicated("device").any():
        raise ProtocolSkipped(f"{protocol}: a device belongs to two sources ({groups})")
    return groups


def _device_folds(tables: Tables, groups: dict[str, set] | None = None) -> list[Fold]:
    """One fold per device (xdevice), or per group of devices (xdataset: ``groups`` = source -> devices)."""
    protocol = "xdevice" if groups is None else "xdataset"
    pairs = _feasible(tables.pairs)
    if groups is None:
        devices = sorted(pairs["device"].unique())
        if len(devices) < 2:
            raise ProtocolSkipped(f"xdevice: the pairs hold {len(devices)} device ({devices}); need at least 2")
        groups = {d: {d} for d in devices}
    out = []
    for i, (name, held) in enumerate(sorted(groups.items())):
        keep = [d for d in tables.devices["name"] if d not in held]
        train_pairs = tables.pairs[~tables.pairs["device"].isin(held)]
        test = pairs[pairs["device"].isin(held)].reset_index(drop=True)
        out.append(Fold(protocol, i, name, tables.subset(train_pairs, devices=keep), test))
    return out


# ---------------------------------------------------------------------------- inner cross-fitting


def inner_folds(pairs: pd.DataFrame, groups: str | None, seed: int, k: int, name: str):
    """Cross-fitting inside a training fold, carved like the protocol's test folds.

    ``pairs``: the feasible training pairs (rows 0..n-1); their directed rows are i (job a)
    and n + i (job b), as :func:`coloc.predict.base.pair_labels` orders them. Returns a list
    of (fit_pairs, fill_rows): boolean masks over the n pairs to fit on and over the 2n
    directed rows whose out-of-fold value that fit supplies. ``groups`` None: K random folds
    of pairs; "family": per family, the pairs touching it are held out and fill the rows of
    that family's jobs; "workload": the same with the job types dealt at random into K folds
    (one fold per job type would be many fits); "device": per device. Falls back to random
    folds when there is one group only. Every directed row is filled exactly once.
    """
    n = len(pairs)
    if groups in ("family", "workload"):
        of = group_of(groups)
        group_a, group_b = pairs["workload_a"].map(of).to_numpy(), pairs["workload_b"].map(of).to_numpy()
        names = sorted(set(group_a) | set(group_b))
        if len(names) > 1:
            if groups == "workload":
                order = np.random.default_rng(derived_seed(seed, name, "groups")).permutation(len(names))
                buckets = [{names[i] for i in part} for part in np.array_split(order, min(k, len(names)))]
            else:
                buckets = [{g} for g in names]
            job_group = np.concatenate([group_a, group_b])
            out = []
            for bucket in buckets:
                held = np.isin(job_group, list(bucket))
                out.append((~(held[:n] | held[n:]), held))
            return out
    elif groups == "device":
        dev = pairs["device"].to_numpy()
        if len(set(dev)) > 1:
            return [(dev != d, np.concatenate([dev == d, dev == d])) for d in sorted(set(dev))]
    elif groups is not None:
        raise KeyError(f"inner folds: groups {groups!r}; expected None, 'family', 'workload' or 'device'")
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
    """Folds over solo rows for out-of-fold per-job (utilization) predictions; a fold's training tables hold
    the pairs of its training jobs among themselves on its training devices."""
    solo = tables.solo.reset_index(drop=True)
    if protocol == "random5":
        names = sorted(solo["workload"].unique())
        if len(names) < 2:
            raise ProtocolSkipped(f"random5 (utilization): {len(names)} job type(s); need at least 2")
        parts = _shuffled_kfold(len(names), min(k, len(names)), derived_seed(seed, "random5-util-folds"))
        groups = [(f"k={i}", {names[j] for j in part}) for i, part in enumerate(parts)]
        held = solo["workload"]
    elif job_groups(protocol):
        held = solo["workload"].map(group_of(job_groups(protocol)))
        groups = [(g, {g}) for g in sorted(held.unique())]
    elif protocol == "xdevice":
        held = solo["device"]
        groups = [(d, {d}) for d in sorted(held.unique())]
    elif protocol == "xdataset":
        _source_devices(tables, f"{protocol} (utilization)")
        held = solo["source"]
        groups = [(s, {s}) for s in sorted(held.unique())]
    else:
        check_protocol(protocol)
        raise AssertionError(protocol)
    if len(groups) < 2:
        raise ProtocolSkipped(f"{protocol} (utilization): one group only ({groups[0][0]})")
    out = []
    for i, (name, members) in enumerate(groups):
        test = held.isin(members)
        # the training jobs' pairs among themselves on the training devices (horus-implied learns from them);
        # no pair of a held-out job or device reaches the fit
        train = tables.subset(tables.pairs, workloads=sorted(set(solo.loc[~test, "workload"])),
                              devices=sorted(set(solo.loc[~test, "device"])))
        train = Tables(train.workloads, solo[~test].reset_index(drop=True), train.pairs, train.devices)
        out.append(UtilFold(protocol, i, name, train, solo[test].reset_index(drop=True)))
    return out
