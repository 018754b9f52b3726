"""Gavel's and Lucid's tables together, restricted to the model families both measured in pairs (resnet18 and
lm): the dataset of the cross-dataset protocol (``xdataset``, :mod:`coloc.predict.protocols`), which trains on one
source's devices and predicts the other's. Notebook 00_lucid writes it from the two sources' tables.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from coloc.datasets import Dataset
from coloc.datasets.tables import family_of

PARTS = ("gavel", "lucid")


def cross_tables(first: tuple[pd.DataFrame, pd.DataFrame], second: tuple[pd.DataFrame, pd.DataFrame],
                 names=PARTS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(solo, pairs) of two sources together, each row's ``source`` named, restricted to the families both
    measured in pairs (Gavel's and Lucid's: resnet18 and lm); their solo rows of those families too. Columns one
    source lacks (Lucid's measured utilization) are NaN on the other's rows.
    """
    def families(pairs):
        return set(pairs["workload_a"].map(family_of)) | set(pairs["workload_b"].map(family_of))

    shared = families(first[1]) & families(second[1])
    solos, pairs = [], []
    for name, (solo, pair) in zip(names, (first, second), strict=True):
        solos.append(solo[solo["workload"].map(family_of).isin(shared)].assign(source=name))
        keep = pair["workload_a"].map(family_of).isin(shared) & pair["workload_b"].map(family_of).isin(shared)
        pairs.append(pair[keep].assign(source=name))
    return pd.concat(solos, ignore_index=True), pd.concat(pairs, ignore_index=True)


def label(devices: Sequence[str], families: Sequence[str] = ()) -> str:
    """The cross dataset's source label (its devices are always both sources')."""
    return "Gavel (K80/P100/V100) and Lucid (RTX3090), the families both measured in pairs"


DATASET = Dataset(name="gavel-lucid", short="Gavel and Lucid", title="Gavel and Lucid's RTX 3090",
                  folder="data/processed/gavel-lucid", label=label, parts=PARTS)
