"""The profiler: measures training throughput of job types solo and co-located on this machine's device.

    from coloc import profiler
    measurements = profiler.plan(["lm-wikitext2-b5", "recommendation-ml20m-b512"], repeats=2)
    records = profiler.run(measurements, "data/interim/profiled/measurements.jsonl", profiler.Settings(window_s=3))
    solo, pairs = profiler.solo_table(records), profiler.pairs_table(records)
    sets = profiler.sets_table(records)  # sets of 3+ (plan's set_sizes or sets=[[a, b, c], ...])

See :mod:`coloc.profiler.sweep` (how measurements run), :mod:`coloc.profiler.worker` (one job's
process), :mod:`coloc.profiler.sampler` (NVML and psutil), :mod:`coloc.profiler.journal` (the log,
crash-safe), :mod:`coloc.profiler.outcome` (ok, out of memory, timeout, error: what a rerun measures
again), :mod:`coloc.profiler.tables`, :mod:`coloc.profiler.extrapolation` (sets of 3+ against the
product of their pairs).
"""

from .errors import ProfilerError
from .hardware import Device, resolve
from .journal import read as read_log
from .sweep import Measurement, Settings, TopUp, plan, run
from .tables import jobs_table, pairs_table, sets_table, solo_table, spread_table, summary

__all__ = ["ProfilerError", "Device", "resolve", "read_log", "Measurement", "Settings", "TopUp", "plan", "run",
           "jobs_table", "pairs_table", "sets_table", "solo_table", "spread_table", "summary"]
