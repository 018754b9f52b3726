"""Ground truth of the simulator: measured solo throughputs and pairwise co-location.

Gavel measured jobs alone and in pairs only. For more than two jobs on one GPU
the normalized throughput of a job is the product of its pairwise normalized
throughputs with each co-runner (a labelled extrapolation, used only when the
cluster's cap on jobs per GPU is raised above the default of 2). A set is
feasible only if every pair in it is feasible (fits in GPU memory).

A pair with no row is unknown, and the world treats it as a pair that does not fit: its two jobs never share a
GPU (Lucid measured NeuMF with itself only: its 208 pairs with the other job types have no truth to replay).
Policies learn this through the memory-fit rule every policy obeys (``coloc.sim.view.Profile.fits``): that the
two may not share, never how they would interfere.

Measured GPU utilization (nvidia-smi's share of time a kernel runs), where the tables have it (Lucid's solo
``gpu_util`` and pairs' ``pair_gpu_util``, in %): :meth:`GroundTruth.gpu_util` of a GPU's resident set, the
solo value for one job, the pair's for two, NaN for three or more (never measured) and for a data source
without it (Gavel's).

The interference world (``world``, :func:`parse_world`) decides how fast jobs run together; memory fit (which sets
may share a GPU) stays as measured in every world:

* ``measured``: the measured pairs above (the default);
* ``flat:<s>``: every job on a shared GPU, next to any number of co-runners, runs at 1 / (1 + s) of its solo speed
  (the Horus reference simulator's intent with s = 0.2, a factor its code never applied);
* ``none``: sharing a GPU costs nothing (normalized throughput 1), as the Horus reference simulator ran.

Outside the measured world no measured GPU utilization of a shared GPU applies (NaN); a lone job's stays.

Refused when the tables are read: a feasible pair's normalized throughput outside (0, MAX_NORM] or not finite
(MAX_NORM = 2, twice the solo speed, as for predictions (coloc.sim.predictions): Gavel's pairs reach 1.0, Lucid's
1.498, its noise around a pair that does not slow; a norm of 50 would make a 100 s job finish in 2 s).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from coloc.pairs import directed, keyed_mean

SOLO_COLUMNS = ("device", "workload", "throughput")
MAX_NORM = 2.0  # the largest measured normalized throughput accepted (twice the solo speed)
MAX_FLAT = 100.0  # the largest flat slowdown s accepted (a 101x slower shared GPU)
WORLD_FORMS = "'measured', 'none' or 'flat:<s>' with s a number in [0, 100] (e.g. 'flat:0.2')"


def parse_world(text, where: str = "world") -> tuple[str, float]:
    """('measured', nan), ('none', 0.0) or ('flat', s) of a world's text; ValueError naming `where` (the key),
    the value and the expected forms."""
    kind, sep, value = text.partition(":") if isinstance(text, str) else ("", "", "")
    if isinstance(text, str) and not sep and kind in ("measured", "none"):
        return kind, (0.0 if kind == "none" else math.nan)
    if kind == "flat" and sep:
        try:
            s = float(value)
        except ValueError:
            s = math.nan
        if 0.0 <= s <= MAX_FLAT:
            return "flat", s
    raise ValueError(f"{where} {text!r}: expected {WORLD_FORMS}")


def world_label(world: str, source: str) -> str:
    """The truth's name in `world` over the data `source` ('Gavel'): 'measured (Gavel)', 'flat 20% (Gavel's memory
    fit)', 'none: sharing free (Gavel's memory fit)'."""
    kind, s = parse_world(world)
    if kind == "measured":
        return f"measured ({source})"
    if kind == "flat":
        return f"flat {100 * s:g}% ({source}'s memory fit)"
    return f"none: sharing free ({source}'s memory fit)"
PAIRS_COLUMNS = ("device", "workload_a", "workload_b", "norm_a", "norm_b", "feasible")


def require_columns(frame: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    """Raise ValueError naming the table and the missing columns."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing columns {missing}; expected at least {list(columns)}")


class GroundTruth:
    """Measured solo throughput and feasibility, and the co-location rates of the `world` (:func:`parse_world`):
    the measured pairs by default."""

    def __init__(self, solo: pd.DataFrame, pairs: pd.DataFrame, reference_device: str,
                 name: str = "measured (Gavel)", memory_source: str = "measured", world: str = "measured"):
        require_columns(solo, SOLO_COLUMNS, "solo table")
        require_columns(pairs, PAIRS_COLUMNS, "pairs table")
        self.name = name
        self.world = world
        self._world, self._flat = parse_world(world, "GroundTruth world")
        self._shared = 1.0 / (1.0 + self._flat) if self._world != "measured" else math.nan  # a sharer's factor
        self.reference_device = reference_device
        self._tput = _solo_dict(solo)
        self._norm, self._feasible = _pair_dicts(pairs)
        self._paired = {(device, workload) for device, workload, _ in self._feasible}
        self._memory = _memory_dict(solo)
        self._labels = _label_dict(solo)
        self._solo_util, self._pair_util = _util_dicts(solo, pairs)
        self.memory_source = memory_source if self._memory else "none"  # where mem_bytes came from
        self.devices = sorted({d for d, _ in self._tput})
        if reference_device not in self.devices:
            raise ValueError(f"solo table: reference device {reference_device!r} not among {self.devices}")

    def require_devices(self, devices: Sequence[str], where: str) -> None:
        """ValueError naming `where`, the first device the tables never measured and the devices they have."""
        missing = [device for device in devices if device not in self.devices]
        if missing:
            raise ValueError(f"{where}: device {missing[0]!r} has no measurements in the truth ({self.name}); "
                             f"expected devices among {self.devices}")

    def solo_tput(self, device: str, workload: str) -> float:
        """Solo iterations/s of `workload` on `device`."""
        try:
            return self._tput[(device, workload)]
        except KeyError:
            raise KeyError(f"solo table: no throughput for device={device!r} workload={workload!r}") from None

    def has_solo(self, device: str, workload: str) -> bool:
        return (device, workload) in self._tput

    def speed(self, device: str, workload: str) -> float:
        """Solo speed on `device` relative to the reference device (1.0 there)."""
        return self.solo_tput(device, workload) / self.solo_tput(self.reference_device, workload)

    def pair_norm(self, device: str, workload: str, other: str) -> float:
        """Normalized throughput of `workload` while co-located with `other` in this world (measured: the table's)."""
        key = (device, workload, other)
        if not self._feasible.get(key, False):
            if key not in self._feasible:
                raise KeyError(f"pairs table: no row for device={device!r} pair=({workload!r}, {other!r})")
            raise ValueError(f"pairs table: pair ({workload!r}, {other!r}) is infeasible on {device!r}")
        return self._norm[key] if self._world == "measured" else self._shared

    def norm(self, device: str, workload: str, others: Sequence[str]) -> float:
        """Normalized throughput of `workload` with co-runners `others`: measured, the product of its pairs (an
        extrapolation for 2+ co-runners); flat / none, the world's one factor for any number of co-runners."""
        if self._world != "measured":
            for other in others:
                self.pair_norm(device, workload, other)  # (every pair must fit, as in the measured world)
            return self._shared if others else 1.0
        value = 1.0
        for other in others:
            value *= self.pair_norm(device, workload, other)
        return value

    def pair_feasible(self, device: str, a: str, b: str) -> bool:
        """True if the measured pair fits on one GPU; unknown pairs are infeasible."""
        return self._feasible.get((device, a, b), False)

    def feasible(self, device: str, workloads: Sequence[str]) -> bool:
        """True if every pair among `workloads` is feasible on `device`."""
        n = len(workloads)
        return all(self.pair_feasible(device, workloads[i], workloads[k])
                   for i in range(n) for k in range(i + 1, n))

    def pair_norms(self) -> dict[tuple[str, str, str], float]:
        """Copy of {(device, workload, other): normalized throughput in this world} over feasible pairs."""
        if self._world != "measured":
            return dict.fromkeys(self._norm, self._shared)
        return dict(self._norm)

    def solo_throughputs(self) -> dict[tuple[str, str], float]:
        """Copy of {(device, workload): solo iterations/s} (what profiling a job alone gives)."""
        return dict(self._tput)

    def memory_fit(self) -> dict[tuple[str, str, str], bool]:
        """Copy of {(device, workload, other): fits on one GPU} over the measured pairs."""
        return dict(self._feasible)

    def memory_requests(self) -> dict[tuple[str, str], float]:
        """Copy of {(device, workload): peak GPU memory in bytes} where the solo table gives `mem_bytes` (a job's
        memory request, known before it runs: measured solo, or estimated from the model graph)."""
        return dict(self._memory)

    def packing_labels(self) -> dict[tuple[str, str], int]:
        """Copy of {(device, workload): Lucid's packing class 0/1/2} where the solo table gives `lucid_label` (made
        by Lucid's analyzer from the job type's solo profile: a fact known before the job shares a GPU)."""
        return dict(self._labels)

    def workloads(self, device: str) -> list[str]:
        """Workloads with a solo throughput on `device`, sorted."""
        return sorted(w for d, w in self._tput if d == device)

    def has_pairs(self, device: str, workload: str) -> bool:
        """Whether `workload` was measured next to some job type on `device` (it has a pairs row there)."""
        return (device, workload) in self._paired

    @property
    def measures_util(self) -> bool:
        """Whether the tables hold measured GPU utilization (solo `gpu_util`; Lucid's, not Gavel's)."""
        return bool(self._solo_util)

    def gpu_util(self, device: str, workloads: Sequence[str]) -> float:
        """Measured GPU utilization (a share, 0 to 1) of one GPU running `workloads`: 0 idle, the job's solo
        `gpu_util` alone, the pair's `pair_gpu_util` for two; NaN where not measured (3+ jobs, an unmeasured pair
        or job type, a source without utilization)."""
        if not workloads:
            return 0.0
        if len(workloads) == 1:
            return self._solo_util.get((device, workloads[0]), math.nan)
        if len(workloads) == 2 and self._world == "measured":
            return self._pair_util.get((device, *sorted(workloads)), math.nan)
        return math.nan


def _solo_dict(solo: pd.DataFrame) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for row in solo[list(SOLO_COLUMNS)].itertuples(index=False):
        key = (row.device, row.workload)
        tput = float(row.throughput)
        if key in out:
            raise ValueError(f"solo table: duplicate row for device={key[0]!r} workload={key[1]!r}")
        if not (tput > 0 and math.isfinite(tput)):
            raise ValueError(f"solo table: throughput of {key} is {tput}; expected a positive number")
        out[key] = tput
    return out


def _memory_dict(solo: pd.DataFrame) -> dict[tuple[str, str], float]:
    """{(device, workload): mem_bytes} over the solo rows that give a positive finite mem_bytes (optional column)."""
    if "mem_bytes" not in solo.columns:
        return {}
    out = {}
    for device, workload, value in zip(solo["device"], solo["workload"], solo["mem_bytes"], strict=True):
        value = float(value)
        if math.isnan(value):
            continue
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"solo table: mem_bytes of ({device!r}, {workload!r}) is {value}; expected positive bytes")
        out[(device, workload)] = value
    return out


def _label_dict(solo: pd.DataFrame) -> dict[tuple[str, str], int]:
    """{(device, workload): lucid_label} over the solo rows that give one (optional column; empty rows skipped)."""
    if "lucid_label" not in solo.columns:
        return {}
    out = {}
    for row, (device, workload, value) in enumerate(zip(solo["device"], solo["workload"], solo["lucid_label"], strict=True)):
        if pd.isna(value):
            continue
        if value not in (0, 1, 2):
            raise ValueError(f"solo table row {row}: lucid_label of ({device!r}, {workload!r}) is {value!r}; "
                             f"expected Lucid's packing class 0, 1 or 2")
        out[(device, workload)] = int(value)
    return out


def _util_dicts(solo: pd.DataFrame, pairs: pd.DataFrame):
    """({(device, workload): share}, {(device, a, b) with a <= b: share}) of the measured GPU utilization in % (solo
    `gpu_util`, pairs `pair_gpu_util`; optional columns, NaN rows left out); a value outside [0, 100] is refused."""
    found = []
    for frame, column, keys, name in ((solo, "gpu_util", ("device", "workload"), "solo table"),
                                      (pairs, "pair_gpu_util", ("device", "workload_a", "workload_b"), "pairs table")):
        out = {}
        if column in frame.columns:
            for i, row in enumerate(frame[[*keys, column]].itertuples(index=False)):
                value = float(row[-1])
                if math.isnan(value):
                    continue
                if not 0.0 <= value <= 100.0:
                    raise ValueError(f"{name} row {i}: {column} of {tuple(row[:-1])} is {value}; expected a GPU "
                                     f"utilization in [0, 100] %")
                key = tuple(row[:-1]) if len(keys) == 2 else (row[0], *sorted(row[1:3]))
                out[key] = value / 100.0
        found.append(out)
    return found[0], found[1]


def _pair_dicts(pairs: pd.DataFrame):
    """({key: norm} over feasible pairs, {key: feasible}), key = (device, workload, other).

    coloc.pairs.directed's rule: a pair answers both orders; a self-pair's two jobs are two
    instances of one job type, so its value is the mean of the two.
    """
    for i, row in enumerate(pairs[list(PAIRS_COLUMNS)].itertuples(index=False)):
        na, nb = float(row.norm_a), float(row.norm_b)
        if bool(row.feasible) and not (0 < na <= MAX_NORM and 0 < nb <= MAX_NORM):
            raise ValueError(f"pairs table row {i}: feasible pair {row.workload_a!r}/{row.workload_b!r} "
                             f"on {row.device!r} has norms ({na}, {nb}); expected normalized throughputs in "
                             f"(0, {MAX_NORM:g}] (a job's co-located over solo speed)")
    rows = directed(pairs[list(PAIRS_COLUMNS)].assign(feasible=pairs["feasible"].astype(bool)))
    feasible: dict[tuple[str, str, str], bool] = {}
    source: dict[tuple[str, str, str], int] = {}
    n = len(pairs)
    for i, (device, workload, other, ok) in enumerate(zip(rows["device"], rows["workload"], rows["other"],
                                                           rows["feasible"], strict=True)):
        key = (device, workload, other)
        if source.setdefault(key, i % n) != i % n:
            raise ValueError(f"pairs table row {i % n}: duplicate pair {key} (also row {source[key]})")
        feasible[key] = bool(ok)
    return keyed_mean(rows[rows["feasible"]], "norm"), feasible
