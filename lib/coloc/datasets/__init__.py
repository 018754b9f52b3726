"""The measured datasets, each one registered :class:`Dataset` of a module of this package.

A dataset is one source of ``solo`` and ``pairs`` tables (ARCHITECTURE.md, "Table contracts"): Gavel's K80/P100/V100
pairs (:mod:`.gavel`), the tables the profiling stage measures on this machine (:mod:`.profiled`), Lucid's RTX 3090
pairs (:mod:`.lucid`) and Gavel's and Lucid's together (:mod:`.gavel_lucid`), in that order (the predictors stage
runs them so); a user's own CSV files are the dataset ``user-<name>`` (:mod:`.user`). Its module owns everything the
code says of it: its devices and reference device, its raw files and parser, its families, what it measured
besides throughput, its licence, and the names outputs give it. Adding one is a module with its parser and its
``DATASET``, named in the list at the bottom of this file (which registers them in its order), plus its raw
files' entries under the config's ``sources`` (docs/extending.md). The shared helpers (:mod:`.tables`) and the
parsers stay importable from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

DEFAULT = "gavel"  # the dataset of a scenario, a claim or a trace that names none
MEASURES = ("utilization", "memory")  # what a dataset may have measured besides throughput (solo and pairs columns)


def measured_label(title: str) -> Callable[[Sequence[str], Sequence[str]], str]:
    """The source label of a published dataset: ``"<title> (measured, K80/P100), families a, b only"``."""
    def label(devices: Sequence[str], families: Sequence[str] = ()) -> str:
        text = f"{title} (measured, {'/'.join(d.upper() for d in sorted(set(devices)))})"
        return text + (f", families {', '.join(families)} only" if families else "")
    return label


@dataclass(frozen=True)
class Dataset:
    """One measured dataset and everything the code says of it.

    ``name``: as the config, the folders and the tables' ``dataset`` column name it. ``short``: how messages and
    source labels name it ("Gavel"); ``title``: how figure titles and claims name it ("Lucid's RTX 3090");
    ``truth``: how the simulator names its measured pairs ("Lucid, RTX 3090"), None where no scenario runs on it.
    ``folder``: where the workflow keeps its tables. ``devices``: its device types (empty: the machine decides);
    ``reference_device``: a scenario's reference device on it (None: ``simulation.reference_device``).
    ``families``: the model families a trace on it may draw from; ``families_key``: the ``predictors`` key of the
    families the predictors stage keeps (None: all). ``measures``: of :data:`MEASURES`. ``sources``: its raw
    files' keys of the config's ``sources``; ``licence``: the licence their entries start with; ``load``: its
    parser, those files (in the order of ``sources``) -> (solo, pairs). ``parts``: the datasets a cross dataset
    joins (empty for one source). ``published``: measured by others and published (the README's tables), not on
    this machine. ``label``: (devices, families) -> the line figures and tables name the source by.
    """

    name: str
    short: str
    title: str
    folder: str
    label: Callable[..., str]
    truth: str | None = None
    devices: tuple[str, ...] = ()
    reference_device: str | None = None
    families: Callable[[], list[str]] = field(default=lambda: [])
    families_key: str | None = None
    measures: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    licence: str = ""
    load: Callable | None = None
    parts: tuple[str, ...] = ()
    published: bool = True

    def __post_init__(self):
        unknown = [m for m in self.measures if m not in MEASURES]
        if unknown:
            raise ValueError(f"dataset {self.name!r}: measures {unknown}; expected some of {list(MEASURES)}")

    @property
    def simulated(self) -> bool:
        """Whether a scenario may run on it: it has a measured truth and its device types are known."""
        return self.truth is not None and bool(self.devices)


_REGISTRY: dict[str, Dataset] = {}


def register(dataset: Dataset) -> Dataset:
    """Add ``dataset`` to the registry (after those already there); ValueError for a name taken or a user name."""
    from coloc.datasets.user import PREFIX

    if dataset.name in _REGISTRY or dataset.name.startswith(PREFIX):
        raise ValueError(f"dataset {dataset.name!r}: already registered or of the users' prefix {PREFIX!r}; "
                         f"registered: {names()}")
    _REGISTRY[dataset.name] = dataset
    return dataset


def unregister(name: str) -> None:
    """Remove a dataset registered by :func:`register` (a test's toy one)."""
    del _REGISTRY[name]


def names() -> list[str]:
    """The registered datasets' names, in the order they were registered (the predictors stage's order)."""
    return list(_REGISTRY)


def get(name: str) -> Dataset:
    """The dataset ``name``: a registered one, or a user's own source ``user-<name>``; KeyError naming the known."""
    from coloc.datasets import user

    if name in _REGISTRY:
        return _REGISTRY[name]
    if user.is_user(name):
        return user.dataset(name)
    raise KeyError(f"unknown dataset {name!r}; expected one of {names()} or {user.PREFIX}<name>")


def simulated() -> list[str]:
    """The registered datasets a scenario may run on (:attr:`Dataset.simulated`)."""
    return [name for name, dataset in _REGISTRY.items() if dataset.simulated]


# The datasets, registered in this order; the shared helpers and parsers, importable from here.
from coloc.datasets import gavel, profiled, lucid, gavel_lucid  # noqa: E402,F401,I001  (the order is the registry's)
from coloc.datasets.gavel import GAVEL_DEVICES, gavel_workload_id, load_gavel  # noqa: E402
from coloc.datasets.philly import MAX_GPUS, assign_workloads, load_philly, trace_from_philly  # noqa: E402
from coloc.datasets.tables import MAX_NORM, DataError, family_of, pair_summary, save_table  # noqa: E402
from coloc.datasets.user import load_user  # noqa: E402

for _module in (gavel, profiled, lucid, gavel_lucid):
    register(_module.DATASET)

__all__ = ["DEFAULT", "GAVEL_DEVICES", "MAX_GPUS", "MAX_NORM", "MEASURES", "DataError", "Dataset", "assign_workloads",
           "family_of", "gavel_workload_id", "get", "load_gavel", "load_philly", "load_user", "measured_label", "names",
           "pair_summary", "register", "save_table", "simulated", "trace_from_philly", "unregister"]
