"""The tables the profiling stage measures on this machine (:mod:`coloc.profiler`, config ``profiling``): their
devices are the machine's, so no scenario runs on them; the profiler writes them, no parser reads raw files.
"""

from __future__ import annotations

from typing import Sequence

from coloc.datasets import Dataset


def label(devices: Sequence[str], families: Sequence[str] = ()) -> str:
    """"profiled on cpu, cuda:0": the devices the profiler measured."""
    return f"profiled on {', '.join(sorted(set(devices)))}"


DATASET = Dataset(name="profiled", short="profiled", title="profiled", folder="data/processed/profiled", label=label,
                  measures=("utilization", "memory"), published=False)
