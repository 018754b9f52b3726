"""Figures of the data stage (notebook 00_data): the measured interference and the trace."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from coloc.plots import GAVEL_SOURCE, PHILLY_SOURCE


def ordered_norm_matrix(pairs: pd.DataFrame, device: str) -> pd.DataFrame:
    """Matrix of normalized throughput of the row job when co-located with the column job."""
    sub = pairs[pairs["device"] == device]
    forward = sub[["workload_a", "workload_b", "norm_a"]].set_axis(["job", "with", "norm"], axis=1)
    backward = sub[["workload_b", "workload_a", "norm_b"]].set_axis(["job", "with", "norm"], axis=1)
    both = pd.concat([forward, backward]).drop_duplicates(["job", "with"])
    return both.pivot(index="job", columns="with", values="norm")


def interference_heatmap(pairs: pd.DataFrame, devices: list[str] | None = None, source: str = GAVEL_SOURCE) -> plt.Figure:
    """Heatmap per device of the normalized co-located throughput (blank: the pair did not fit)."""
    devices = devices or sorted(pairs["device"].unique())
    fig, axes = plt.subplots(1, len(devices), figsize=(8.5 * len(devices), 8), squeeze=False)
    for ax, device in zip(axes[0], devices, strict=True):
        matrix = ordered_norm_matrix(pairs, device)
        sns.heatmap(matrix, ax=ax, vmin=0, vmax=1, cmap="viridis", square=True,
                    cbar_kws={"label": "normalized throughput of row job"})
        infeasible = int((~pairs.loc[pairs["device"] == device, "feasible"]).sum())
        ax.set_title(f"{device}: row job next to column job ({infeasible} pairs did not fit, blank)")
        ax.set_xlabel("co-located with")
        ax.set_ylabel("job")
    fig.suptitle(f"Measured interference, {source}; 1 = no slowdown", fontsize=14)
    fig.tight_layout()
    return fig


def trace_overview(trace: pd.DataFrame, source: str = PHILLY_SOURCE) -> plt.Figure:
    """Arrivals per hour over time, CDF of duration, and the number of GPUs per job."""
    fig, (arrivals, durations, gpus) = plt.subplots(1, 3, figsize=(16, 4.5))
    hours = trace["submit_time"] / 3600.0
    arrivals.hist(hours, bins=min(200, max(10, int(hours.max() // 24) + 1)), color="tab:blue")
    arrivals.set_xlabel("hours since first submission")
    arrivals.set_ylabel("jobs submitted per bin")
    arrivals.set_title("arrivals over time")
    ordered = np.sort(trace["duration"].to_numpy())
    durations.plot(ordered, np.arange(1, len(ordered) + 1) / len(ordered), color="tab:orange")
    durations.set_xscale("log")
    durations.set_xlabel("duration (s, log scale)")
    durations.set_ylabel("fraction of jobs")
    durations.set_title("duration CDF")
    counts = trace["num_gpus"].value_counts().sort_index()
    gpus.bar([str(g) for g in counts.index], counts.to_numpy(), color="tab:green")
    gpus.set_yscale("log")
    gpus.set_xlabel("GPUs per job")
    gpus.set_ylabel("jobs (log scale)")
    gpus.set_title("GPUs per job")
    fig.suptitle(f"{source}: {len(trace):,} jobs", fontsize=13)
    fig.tight_layout()
    return fig
