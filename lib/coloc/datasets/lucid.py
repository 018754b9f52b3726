"""Lucid's measured dataset: its RTX 3090 co-location measurements (Hu et al., ASPLOS 2023) as coloc's ``solo``
and ``pairs`` tables.

Two files of S-Lab-System-Group/Lucid (config ``sources.lucid_pairs`` / ``sources.lucid_solo``; S-Lab License
1.0: non-commercial use and redistribution with the notice kept, commercial use needs the authors' permission):

* ``single_data.csv``: 66 job types alone: ``model, dataset, batchsize, amp, speed`` (samples/s), ``gpu_util``,
  ``gmem_util`` (%), ``gmem`` (MiB, nvidia-smi), ``label`` (Lucid's packing class 0/1/2).
* ``colocate_info.csv``: 1,388 measured unordered pairs of the 56 job types that appear in pairs (self-pairs
  included): for each job ``model, dataset, gpu_num, batchsize, amp`` and ``speed`` (its co-located speed over
  its solo speed), then the pair's ``gpu_util``, ``gmem_util`` (%) and ``gmem`` (MiB).

Choices (docs/data.md; ARCHITECTURE.md, "Table contracts"):

* **Job types** follow the zoo's names: Lucid's model and dataset -> :data:`LUCID_JOB_TYPES`, then ``-b<batch>``
  and ``-amp`` for the AMP runs (``resnet18-cifar10-b32-amp``); Lucid's LSTM is the zoo's ``lm`` (the same
  model as Gavel's LM), its VGG is ``vgg11``.
* **Solo throughput** is iterations/s as the contract says: Lucid's samples/s divided by the batch size (the
  samples/s stay in ``samples_s``).
* **Normalized speeds above 1** (about a fifth of the values, up to 1.498) are kept as measured: they are
  measurement noise around 1 (a pair that does not slow a job), and clipping them would bias the pairs that do
  not interfere downwards; the simulator's truth uses norms as measured, as Lucid's own simulator uses
  ``speedN``. Above :data:`coloc.datasets.tables.MAX_NORM` (1.5, the bound every loader keeps) a row is refused.
* **Unmeasured pairs are absent rows.** Lucid measured NeuMF with itself only, so the 208 pairs of the 4 NeuMF
  job types with the other 52 are not in the table: not measured is not "did not fit". ``feasible`` is True
  on every row (Lucid published no pair that failed to fit); code reading the table treats a missing pair as
  unknown (:func:`unmeasured_pairs` lists them).
* BERT, ResNet-50 and Transformer appear alone only: they have solo rows (utilization labels) and no pairs.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from coloc.datasets import Dataset, measured_label
from coloc.datasets.tables import MAX_NORM, DataError

DEVICE = "rtx3090"
LICENCE = "S-Lab License 1.0"  # non-commercial use and redistribution with the notice kept; commercial use: ask
SOLO_ONLY = ("bert", "resnet50", "transformer")  # the families Lucid measured alone only
MIB = 2**20
AMP_SUFFIX = "-amp"  # a job type trained under automatic mixed precision (coloc.workloads.AMP_SUFFIX)
_THREE, _TWO = (32, 64, 128), (64, 128)
# coloc's (family, dataset) -> (the batch sizes Lucid measured, those it also measured under automatic mixed
# precision): the job types a Lucid row may name. The zoo's catalog (coloc.workloads.catalog) holds the same, as
# each entry's lucid_batches and amp_batches; tests/test_datasets_lucid.py holds the two equal. Kept here so that
# the parser, which the registry imports, needs no model code (torch).
MEASURED_BATCHES = {
    ("resnet18", "cifar10"): (_THREE, _THREE), ("vgg11", "cifar10"): (_THREE, _THREE),
    ("mobilenetv2", "cifar10"): (_THREE, _THREE), ("efficientnet", "cifar10"): (_THREE, _THREE),
    ("mobilenetv3", "imagenet"): (_THREE, _THREE), ("dcgan", "lsun"): (_THREE, _THREE),
    ("lm", "wikitext2"): (_TWO, _TWO), ("neumf", "movielens"): (_TWO, _TWO),
    ("ppo", "lunarlander"): (_THREE, ()), ("td3", "bipedalwalker"): (_THREE, ()),
    ("pointnet", "shapenet"): (_THREE, _THREE), ("bert", "squad"): ((32,), (32,)),
    ("resnet50", "imagenet"): (_THREE, _THREE), ("transformer", "multi30k"): ((32, 64), ()),
}


def measured_job_types() -> list[str]:
    """The job types of Lucid's measurements, sorted (the zoo's coloc.workloads.lucid_names())."""
    return sorted(f"{family}-{dataset}-b{batch}{suffix}"
                  for (family, dataset), (plain, amp) in MEASURED_BATCHES.items()
                  for batches, suffix in ((plain, ""), (amp, AMP_SUFFIX)) for batch in batches)


# Lucid's (model, dataset) -> coloc's (family, dataset) of the zoo (coloc.workloads.lucid for the new ones)
LUCID_JOB_TYPES = {
    ("ResNet18", "CIFAR-10"): ("resnet18", "cifar10"),
    ("VGG", "CIFAR-10"): ("vgg11", "cifar10"),
    ("MobileNetV2", "CIFAR-10"): ("mobilenetv2", "cifar10"),
    ("EfficientNet", "CIFAR-10"): ("efficientnet", "cifar10"),
    ("MobileNetV3", "ImageNet"): ("mobilenetv3", "imagenet"),
    ("DCGAN", "LSUN"): ("dcgan", "lsun"),
    ("LSTM", "Wikitext2"): ("lm", "wikitext2"),
    ("NeuMF", "MovieLens"): ("neumf", "movielens"),
    ("PPO", "LunarLander"): ("ppo", "lunarlander"),
    ("TD3", "BipedalWalker"): ("td3", "bipedalwalker"),
    ("PointNet", "ShapeNet"): ("pointnet", "shapenet"),
    ("BERT", "SQuAD"): ("bert", "squad"),
    ("ResNet50", "ImageNet"): ("resnet50", "imagenet"),
    ("Transformer", "Multi30k"): ("transformer", "multi30k"),
}
SOLO_COLUMNS = ("model", "dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem", "label")
JOB_COLUMNS = ("model", "dataset", "gpu_num", "batchsize", "amp", "speed")
PAIR_COLUMNS = tuple(f"{c}{i}" for i in (1, 2) for c in JOB_COLUMNS) + ("gpu_util", "gmem_util", "gmem")
SOLO_TABLE = ["device", "workload", "throughput", "samples_s", "gpu_util", "mem_util", "mem_bytes", "lucid_label"]
PAIR_TABLE = ["device", "workload_a", "workload_b", "tput_a", "tput_b", "norm_a", "norm_b", "feasible",
              "pair_gpu_util", "pair_mem_util", "pair_mem_bytes"]


def load_lucid(pairs_path: str | Path, solo_path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lucid's two CSV files as ``solo`` and ``pairs`` (module docstring); any bad value is a :class:`DataError`
    naming the file, the line, the column, the value and what was expected."""
    solo = _read_solo(Path(solo_path))
    return solo, _read_pairs(Path(pairs_path), solo, Path(solo_path))


def unmeasured_pairs(pairs: pd.DataFrame, solo: pd.DataFrame) -> pd.DataFrame:
    """device, workload_a, workload_b of the unordered pairs (self-pairs included) of the job types that appear
    in ``pairs`` with no row there: pairs not measured (unknown), not pairs that did not fit."""
    rows = []
    for device, part in pairs.groupby("device"):
        jobs = sorted(set(part["workload_a"]) | set(part["workload_b"]))
        have = set(zip(part["workload_a"], part["workload_b"], strict=True))
        rows += [(device, a, b) for i, a in enumerate(jobs) for b in jobs[i:] if (a, b) not in have]
    return pd.DataFrame(rows, columns=["device", "workload_a", "workload_b"])


def _read(path: Path, columns, what: str) -> pd.DataFrame:
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except FileNotFoundError as err:
        raise DataError(f"{path}: no such file (Lucid's {what} measurements)") from err
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable UTF-8 CSV ({type(err).__name__}: {err})") from err
    missing = [c for c in columns if c not in raw.columns]
    if missing:
        raise DataError(f"{path}: columns {missing} missing; expected {list(columns)}, found {list(raw.columns)}")
    if raw.empty:
        raise DataError(f"{path}: no rows; expected one row per {what} measurement")
    return raw


def _refuse(path: Path, raw: pd.DataFrame, bad, column: str, expected: str) -> None:
    bad = np.asarray(bad, dtype=bool)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: row {first + 2} (line {first + 2} of the file), column {column!r}: got "
                        f"{raw[column].iloc[first]!r}, expected {expected} ({int(bad.sum())} such rows)")


def _numbers(path: Path, raw: pd.DataFrame, column: str, expected: str, low: float, high: float = math.inf,
             low_open: bool = False) -> pd.Series:
    values = pd.to_numeric(raw[column], errors="coerce")
    above = values > low if low_open else values >= low
    _refuse(path, raw, ~(np.isfinite(values) & above & (values <= high)), column, expected)
    return values.astype(float)


def _job_types(path: Path, raw: pd.DataFrame, suffix: str = "") -> pd.Series:
    """coloc's job type of each row's (model, dataset, batchsize, amp) columns (``suffix``: "1", "2" or "")."""
    model, dataset = f"model{suffix}", f"dataset{suffix}"
    known = [(m, d) in LUCID_JOB_TYPES for m, d in zip(raw[model], raw[dataset], strict=True)]
    _refuse(path, raw, ~np.array(known), model, f"one of Lucid's models with its dataset "
            f"{sorted(f'{m}/{d}' for m, d in LUCID_JOB_TYPES)} (column {dataset!r} is the dataset)")
    batch = _numbers(path, raw, f"batchsize{suffix}", "a positive whole batch size", 1)
    _refuse(path, raw, batch != batch.round(), f"batchsize{suffix}", "a positive whole batch size")
    amp = raw[f"amp{suffix}"]
    _refuse(path, raw, ~amp.isin(["0", "1"]), f"amp{suffix}", "0 or 1 (automatic mixed precision off / on)")
    names = pd.Series([
        "-".join(LUCID_JOB_TYPES[m, d]) + f"-b{int(b)}" + (AMP_SUFFIX if a == "1" else "")
        for m, d, b, a in zip(raw[model], raw[dataset], batch, amp, strict=True)], index=raw.index)
    _refuse(path, raw, ~names.isin(measured_job_types()), f"batchsize{suffix}",
            "a batch size (and AMP setting) Lucid measured for this model (MEASURED_BATCHES)")
    return names


def _read_solo(path: Path) -> pd.DataFrame:
    raw = _read(path, SOLO_COLUMNS, "solo")
    names = _job_types(path, raw)
    _refuse(path, raw, names.duplicated(), "model", "one row per job type (this one repeats an earlier row)")
    samples = _numbers(path, raw, "speed", "a positive throughput (samples/s)", 0.0, low_open=True)
    batch = pd.to_numeric(raw["batchsize"]).astype(float)
    label = raw["label"]
    _refuse(path, raw, ~label.isin(["0", "1", "2"]), "label", "Lucid's packing class 0, 1 or 2")
    return pd.DataFrame({
        "device": DEVICE, "workload": names, "throughput": samples / batch, "samples_s": samples,
        "gpu_util": _numbers(path, raw, "gpu_util", "a GPU utilization in [0, 100] %", 0.0, 100.0),
        "mem_util": _numbers(path, raw, "gmem_util", "a memory utilization in [0, 100] %", 0.0, 100.0),
        "mem_bytes": _numbers(path, raw, "gmem", "GPU memory in MiB, > 0", 0.0, low_open=True) * MIB,
        "lucid_label": label.astype(int),
    })[SOLO_TABLE].sort_values("workload", ignore_index=True)


def _read_pairs(path: Path, solo: pd.DataFrame, solo_path: Path) -> pd.DataFrame:
    raw = _read(path, PAIR_COLUMNS, "pair")
    tput = solo.set_index("workload")["throughput"]
    jobs, norms = {}, {}
    for side in ("1", "2"):
        jobs[side] = _job_types(path, raw, side)
        _refuse(path, raw, ~jobs[side].isin(tput.index), f"model{side}", f"a job type with a solo row in {solo_path}")
        _refuse(path, raw, raw[f"gpu_num{side}"] != "1", f"gpu_num{side}", "1 (single-GPU jobs)")
        norms[side] = _numbers(path, raw, f"speed{side}", f"a normalized co-located speed in (0, {MAX_NORM}] (a job "
                               "sharing its GPU is not faster than alone; up to 1.5 is measurement noise)", 0.0,
                               MAX_NORM, low_open=True)
    swap = (jobs["1"] > jobs["2"]).to_numpy()
    a = np.where(swap, jobs["2"], jobs["1"])
    b = np.where(swap, jobs["1"], jobs["2"])
    norm_a = np.where(swap, norms["2"], norms["1"])
    norm_b = np.where(swap, norms["1"], norms["2"])
    out = pd.DataFrame({"device": DEVICE, "workload_a": a, "workload_b": b,
                        "tput_a": norm_a * tput.reindex(a).to_numpy(), "tput_b": norm_b * tput.reindex(b).to_numpy(),
                        "norm_a": norm_a, "norm_b": norm_b, "feasible": True})
    _refuse(path, raw, out.duplicated(["workload_a", "workload_b"]), "model2",
            "one row per unordered pair (this one repeats an earlier row, perhaps with the jobs swapped)")
    out["pair_gpu_util"] = _numbers(path, raw, "gpu_util", "the pair's GPU utilization in [0, 100] %", 0.0, 100.0)
    out["pair_mem_util"] = _numbers(path, raw, "gmem_util", "the pair's memory utilization in [0, 100] %", 0.0, 100.0)
    out["pair_mem_bytes"] = _numbers(path, raw, "gmem", "the pair's GPU memory in MiB, > 0", 0.0,
                                     low_open=True).to_numpy() * MIB
    return out[PAIR_TABLE].sort_values(["workload_a", "workload_b"], ignore_index=True)


def summary(solo: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """One row: job types alone and in pairs, measured and unmeasured pairs, the spread of the norms."""
    norms = pd.concat([pairs["norm_a"], pairs["norm_b"]])
    in_pairs = set(pairs["workload_a"]) | set(pairs["workload_b"])
    return pd.DataFrame([{
        "device": DEVICE, "job_types": len(solo), "in_pairs": len(in_pairs), "pairs": len(pairs),
        "unmeasured_pairs": len(unmeasured_pairs(pairs, solo)), "norm_min": norms.min(), "norm_mean": norms.mean(),
        "norm_max": norms.max(), "share_above_1": float((norms > 1).mean())}])


def families() -> list[str]:
    """The model families of Lucid's job types measured in pairs: those a ``dataset: lucid`` trace may draw from."""
    return sorted({family for family, _ in LUCID_JOB_TYPES.values()} - set(SOLO_ONLY))


DATASET = Dataset(
    name="lucid", short="Lucid", title="Lucid's RTX 3090", truth="Lucid, RTX 3090", folder="data/processed/lucid",
    label=measured_label("Lucid"), devices=(DEVICE,), reference_device=DEVICE, families=families,
    families_key="lucid_families", measures=("utilization", "memory"), sources=("lucid_pairs", "lucid_solo"),
    licence=LICENCE, load=load_lucid)
