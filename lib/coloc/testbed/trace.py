"""A testbed trace shaped like ISACPP's testbed: every job submitted at once, short jobs, several job types.

Job types are drawn in turn from a shuffled cycle (each type about as often as the others); each job's length is
drawn log-uniformly between `min_s` and `max_s` seconds of solo training on the testbed's device and turned into
whole iterations with the profiled solo throughput there (at least `min_iters`). `duration` is the same work in
solo seconds (iterations / solo throughput), the simulator's unit. Same seed, same trace.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd


def make(workloads, n_jobs: int, solo_tput: dict[str, float], min_s: float, max_s: float, seed: int = 0,
         interval_s: float = 0.0, min_iters: int = 3) -> pd.DataFrame:
    """The trace: `job_id`, `submit_time` (0 for all, or job i at i x `interval_s`), `workload`, `iterations`,
    `duration` (solo seconds), `num_gpus` (1). `solo_tput`: iterations/s of each job type alone on the device."""
    workloads = list(workloads)
    missing = [w for w in workloads if not solo_tput.get(w, 0) > 0]
    if not workloads or missing:
        raise ValueError(f"testbed trace: job types {missing or workloads} have no solo throughput > 0 "
                         f"(have {sorted(solo_tput)}); expected every job type profiled alone")
    if n_jobs < 1 or not 0 < min_s <= max_s or interval_s < 0:
        raise ValueError(f"testbed trace: n_jobs {n_jobs}, min_s {min_s}, max_s {max_s}, interval_s {interval_s}: "
                         "expected n_jobs >= 1, 0 < min_s <= max_s and interval_s >= 0")
    rng = np.random.default_rng([seed, 37])
    cycles = math.ceil(n_jobs / len(workloads))
    types = np.concatenate([rng.permutation(workloads) for _ in range(cycles)])[:n_jobs]
    seconds = np.exp(rng.uniform(math.log(min_s), math.log(max_s), n_jobs))
    iterations = [max(min_iters, int(round(s * solo_tput[w]))) for w, s in zip(types, seconds, strict=True)]
    return pd.DataFrame({"job_id": np.arange(n_jobs, dtype=np.int64),
                         "submit_time": np.arange(n_jobs, dtype=float) * interval_s, "workload": list(types),
                         "iterations": np.array(iterations, dtype=np.int64),
                         "duration": [n / solo_tput[w] for n, w in zip(iterations, types, strict=True)],
                         "num_gpus": np.ones(n_jobs, dtype=np.int64)})
