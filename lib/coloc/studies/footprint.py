"""The memory a simulate job needs, estimated from its scenario before it runs: the rule's ``mem_mb``, and the config
check's refusal of a scenario that a machine of :data:`LIMIT_MB` could not run.

A simulate job runs every seed x sweep point of one policy in one process (:func:`coloc.studies.scenarios.run_policy`)
and keeps each finished run's tables until it saves them all, so it needs about

    BASE_MB + jobs x (RUN_BYTES + KEPT_BYTES x runs) + GPUs x GPU_BYTES

``jobs`` the trace's jobs (its ``n_jobs``; a Philly slice without one: at most the shipped trace's rows), ``runs``
its seeds x sweep points, ``GPUs`` its largest cluster. The constants are the peak resident memory measured by
``python benchmarks/sim_memory.py`` (see :data:`RUN_BYTES`), rounded up.
"""
from __future__ import annotations

from collections.abc import Mapping

from coloc.sim.cluster import ClusterSpec

LIMIT_MB = 24_000  # the machine the config's bounds are made for (24 GB)
PHILLY_JOBS = 82_247  # rows of the shipped Philly trace: the most jobs of a Philly slice without n_jobs
DEFAULT_JOBS = {"poisson": 1000, "testbed": 51}  # coloc.sim.traces.build's n_jobs where a spec has none
MIB = 2 ** 20
# Measured (benchmarks/sim_memory.py: Poisson traces at load 1, peak resident memory of the process): before any run
# 128 MiB; v100:1024, 4 runs kept: coloc 428 MiB at 100,000 jobs (tables kept 101 MiB) and 894 MiB at 300,000 (303
# MiB), fifo 375 MiB at 100,000 (101 MiB): a run in progress 1.5 KB (fifo) to 2.0 KB (coloc) per job, the tables
# kept 265 B per job and run; v100:1000000, 1,000 jobs, one run: fifo 364 MiB, coloc 386 MiB, 250-270 B per GPU.
# The whole job (papermill and its kernel running notebook 04_simulation) of the default poisson scenario with coloc
# (3000 jobs, 4 runs): 302 MiB at its peak, summed over its processes.
BASE_MB = 600        # papermill and the kernel before any run, with room
RUN_BYTES = 2_000    # per job of the run in progress
KEPT_BYTES = 300     # per job of each finished run, kept until the tables are saved
GPU_BYTES = 400      # per GPU of the cluster


def jobs_of(trace: Mapping) -> int:
    """The most jobs one run of a trace spec simulates."""
    if trace.get("n_jobs") is not None:
        return int(trace["n_jobs"])
    return PHILLY_JOBS if trace["source"] == "philly" else DEFAULT_JOBS[trace["source"]]


def gpus_of(spec: Mapping) -> int:
    """The most GPUs of the scenario's clusters (its swept sizes where it sweeps gpus)."""
    sweep = spec.get("sweep", {})
    if "gpus" in sweep:
        return int(max(sweep["gpus"]))
    return sum(count for _, count in ClusterSpec.parse(spec["cluster"]).devices)


def simulate_mb(spec: Mapping) -> int:
    """Megabytes a simulate job of the scenario ``spec`` needs (module text), rounded up."""
    runs = len(spec["seeds"]) * len(next(iter(spec["sweep"].values())))
    need = BASE_MB * MIB + jobs_of(spec["trace"]) * (RUN_BYTES + KEPT_BYTES * runs) + gpus_of(spec) * GPU_BYTES
    return -(-need // MIB)


def problems(where: str, spec: Mapping) -> list[str]:
    """The scenario's simulate job would need more than :data:`LIMIT_MB`: say how much and why (empty if not)."""
    need = simulate_mb(spec)
    if need <= LIMIT_MB:
        return []
    runs = len(spec["seeds"]) * len(next(iter(spec["sweep"].values())))
    return [f"{where}: a simulate job of this scenario needs about {need} MB ({jobs_of(spec['trace'])} jobs x "
            f"{runs} runs (seeds x sweep points) kept in one process, {gpus_of(spec)} GPUs; coloc.studies.footprint), "
            f"more than the {LIMIT_MB} MB of the machine the config is bounded for; expected fewer jobs, seeds or "
            f"sweep points (or a scenario split in two)"]
