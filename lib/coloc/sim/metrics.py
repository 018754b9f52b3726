"""Per-run metrics from a SimResult: JCT, makespan, queueing, utilization, co-location."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from coloc.sim.engine import SimResult


def time_integral(timeline: pd.DataFrame, column: str, end: float) -> float:
    """Integral of a step function (value holds from its time to the next row's) up to `end`."""
    times = np.append(timeline["time"].to_numpy(), end)
    return float(np.sum(timeline[column].to_numpy() * np.diff(times)))


def summarize(result: SimResult, total_gpus: int) -> dict:
    """One row of metrics (seconds unless named otherwise).

    makespan: first submission to last completion. queue_delay: all time a job
    waited (including after preemptions). gpu_util_mean: time-weighted busy
    GPUs (>= 1 job) over GPUs x makespan. busy_share: the same from the first
    submission to the last job's (first) start, while work was waiting or
    arriving (the drain tail left out). effective_throughput: time-weighted
    sum over running jobs of GPUs x normalized throughput (exclusive-GPU
    equivalents of progress) over GPUs x makespan; it exceeds the utilization
    when sharing pays. colocated_share: seconds run next to another job over
    seconds run. extrapolated_share: seconds run in a set of 3 or more jobs on a GPU over seconds run, where
    the truth is the product of measured pairs (an extrapolation; 0 where no GPU held more than two).
    measured_util_mean: what nvidia-smi would show, time-weighted over GPUs x makespan (an idle GPU 0, a lone
    job its measured solo utilization, a pair its measured pair utilization): Lucid's data only; NaN where the
    truth has no measured utilization (Gavel's) or a GPU ever held a set never measured (3+ jobs).
    measured_util_busy: the same over busy GPU time only (what nvidia-smi shows on a GPU with a job: sharing raises
    it, while the cluster-wide mean may fall as the same work leaves GPUs idle sooner).
    slowdown: JCT / exclusive duration on the reference device.
    longest_job_s: the most any one job alone holds the makespan to, its submission (from the first) plus its
    exclusive duration on the reference device: a makespan near it is pinned by that job, whatever the policy.
    decision_ms_per_job: wall time inside the policy over the number of jobs.
    """
    jobs, stats = result.jobs, result.stats
    jct, delay = jobs["jct"].to_numpy(), jobs["queue_delay"].to_numpy()
    start, end = float(jobs["submit_time"].min()), float(jobs["finish_time"].max())
    makespan = end - start
    busy = time_integral(result.timeline, "busy_gpus", end)
    effective = time_integral(result.timeline, "effective_gpus", end)
    return {
        "n_jobs": len(jobs),
        "jct_mean": float(jct.mean()),
        "jct_median": float(np.median(jct)),
        "jct_p90": float(np.percentile(jct, 90)),
        "jct_p99": float(np.percentile(jct, 99)),
        "makespan": makespan,
        "longest_job_s": float((jobs["submit_time"] + jobs["duration"]).max()) - start,
        "queue_delay_mean": float(delay.mean()),
        "queue_delay_p99": float(np.percentile(delay, 99)),
        "gpu_util_mean": busy / (total_gpus * makespan),
        "busy_share": _busy_share(result.timeline, start, float(jobs["start_time"].max()), total_gpus),
        "effective_throughput": effective / (total_gpus * makespan),
        "measured_util_mean": _measured_util(result.timeline, end) / (total_gpus * makespan),
        "measured_util_busy": _measured_util(result.timeline, end) / busy if busy > 0 else math.nan,
        "jobs_per_hour": len(jobs) / makespan * 3600.0,
        "colocated_share": float(jobs["colocated_time"].sum() / jobs["run_time"].sum()),
        "extrapolated_share": float(jobs["crowded_time"].sum() / jobs["run_time"].sum())
        if "crowded_time" in jobs else 0.0,
        "slowdown_mean": float(jobs["slowdown"].mean()),
        "decision_ms_per_job": 1000.0 * stats["decision_time_s"] / len(jobs),
        "preemptions": int(stats["preemptions"]),
        "migrations": int(stats["migrations"]),
        "sim_wall_s": float(stats.get("wall_s", np.nan)),
    }


def _measured_util(timeline: pd.DataFrame, end: float) -> float:
    """GPU-seconds of measured utilization up to `end`; NaN where the timeline has none (see summarize)."""
    if "measured_util_gpus" not in timeline.columns:
        return math.nan
    return time_integral(timeline, "measured_util_gpus", end)


def _busy_share(timeline: pd.DataFrame, start: float, end: float, total_gpus: int) -> float:
    """Busy GPU-seconds over GPU-seconds in [start, end) (NaN if end <= start); the timeline starts at `start`."""
    if end <= start:
        return float("nan")
    return time_integral(timeline[timeline["time"] < end], "busy_gpus", end) / (total_gpus * (end - start))


MAX_UTIL_BINS = 1_000_000  # rows of one run's utilization series (a loop per bin)


def utilization_series(timeline: pd.DataFrame, total_gpus: int, bin_s: float) -> pd.DataFrame:
    """Per `bin_s` bin, as shares of the cluster, time-weighted: busy GPUs (`gpu_util`: a GPU with a job counts
    whole), effective GPUs (`effective_util`: GPUs x normalized throughput) and the measured utilization nvidia-smi
    would show (`measured_util`; NaN without measured utilization, e.g. on Gavel's data)."""
    times = timeline["time"].to_numpy()
    end = times[-1] if len(times) else 0.0
    if not (bin_s > 0 and end / bin_s <= MAX_UTIL_BINS):
        raise ValueError(f"utilization series: util_bin_s = {bin_s:g} s over a run of {end:g} s gives "
                         f"{end / bin_s if bin_s > 0 else math.inf:.3g} bins; expected at most {MAX_UTIL_BINS} "
                         f"(a wider util_bin_s)")
    edges = np.arange(0.0, end + bin_s, bin_s)
    columns = ["busy_gpus", "effective_gpus", "measured_util_gpus"]
    if "measured_util_gpus" not in timeline.columns:
        timeline = timeline.assign(measured_util_gpus=math.nan)
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        rows.append((lo, *(_bin_mean(timeline, c, lo, hi) / total_gpus for c in columns)))
    return pd.DataFrame(rows, columns=["time", "gpu_util", "effective_util", "measured_util"])


def _bin_mean(timeline: pd.DataFrame, column: str, lo: float, hi: float) -> float:
    times = timeline["time"].to_numpy()
    values = timeline[column].to_numpy()
    i = max(int(np.searchsorted(times, lo, side="right")) - 1, 0)
    j = int(np.searchsorted(times, hi, side="left"))
    points = np.clip(np.append(times[i:j], hi), lo, hi)
    return float(np.sum(values[i:j] * np.diff(points)) / (hi - lo))
