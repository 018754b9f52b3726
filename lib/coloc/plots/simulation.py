"""Figures of the simulation stage (notebook 04_simulation_figures).

Titles carry the data source, the device and the prediction protocol. Policies appear in the order
of their kind: baselines, then predictive policies, then oracles (upper bounds, labelled so).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from coloc.policies import KINDS

SUMMARY_METRICS = {
    "jct_mean": "mean JCT (h)", "jct_p99": "p99 JCT (h)", "makespan": "makespan (h)",
    "queue_delay_mean": "mean queueing delay (h)", "gpu_util_mean": "GPU utilization (busy share)",
    "effective_throughput": "effective throughput (GPU share)", "colocated_share": "share of run time co-located",
    "slowdown_mean": "mean slowdown (JCT / exclusive)",
}
HOURS = {"jct_mean", "jct_p99", "makespan", "queue_delay_mean"}


def policy_order(summary: pd.DataFrame) -> list[str]:
    """Policies by kind (baselines, predictive, oracles), in order of appearance within a kind.

    ``summary`` has the columns policy and kind (the simulation summary has both).
    """
    kinds = dict(zip(summary["policy"], summary["kind"]))
    rank = {kind: i for i, kind in enumerate(KINDS)}
    unknown = sorted(set(kinds.values()) - set(rank))
    if unknown:
        raise ValueError(f"policy kinds {unknown} not among {list(KINDS)}")
    return sorted(kinds, key=lambda policy: rank[kinds[policy]])


def label(policy: str, kind: str) -> str:
    return f"{policy} (oracle)" if kind == "oracle" else policy


def policy_comparison(summary: pd.DataFrame, metrics=tuple(SUMMARY_METRICS), title: str = "") -> plt.Figure:
    """One bar panel per metric, a bar per policy (mean over seeds, error bar = spread over seeds)."""
    data = summary.copy()
    for metric in HOURS & set(metrics):
        data[metric] = data[metric] / 3600.0
    kinds = dict(zip(data["policy"], data["kind"]))
    order = policy_order(data)
    data["policy "] = [label(p, kinds[p]) for p in data["policy"]]
    labels = [label(p, kinds[p]) for p in order]
    cols = 4
    rows = int(np.ceil(len(metrics) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    palette = dict(zip(labels, sns.color_palette("tab10", len(labels))))
    for ax, metric in zip(axes.flat, metrics):
        sns.barplot(data=data, x="policy ", y=metric, order=labels, hue="policy ", palette=palette,
                    errorbar=("pi", 100), ax=ax, legend=False)
        ax.set_title(SUMMARY_METRICS.get(metric, metric))
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.tick_params(axis="x", rotation=60)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def jct_cdf(jobs: pd.DataFrame, order: list[str], title: str = "") -> plt.Figure:
    """Empirical CDF of job completion time per policy (log scale), policies in ``order``."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sns.ecdfplot(data=jobs, x="jct", hue="policy", hue_order=order, log_scale=True, ax=ax)
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("share of jobs")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def utilization_over_time(series: pd.DataFrame, order: list[str], title: str = "") -> plt.Figure:
    """Time-weighted busy and effective GPUs (shares of the cluster) per policy over time, policies in ``order``."""
    fig, axes = plt.subplots(1, 2, figsize=(13, 4), sharey=True)
    data = series.assign(hours=series["time"] / 3600.0)
    for ax, column, name in zip(axes, ("gpu_util", "effective_util"), ("busy GPUs", "effective GPUs")):
        sns.lineplot(data=data, x="hours", y=column, hue="policy", hue_order=order, ax=ax, errorbar=None)
        ax.set_title(f"{name} (share of the cluster)")
        ax.set_xlabel("time (h)")
        ax.set_ylabel("")
    return _legend_beside(fig, axes, title)


def load_sweep(summary: pd.DataFrame, metric: str = "jct_mean", title: str = "") -> plt.Figure:
    """`metric` against load per policy (mean over seeds), one panel per trace and cluster size."""
    data = summary.assign(value=summary[metric] / (3600.0 if metric in HOURS else 1.0))
    panels = list(data.groupby(["trace", "gpus"]).groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    order = policy_order(data)
    for ax, (trace, gpus) in zip(axes[0], panels):
        part = data[(data["trace"] == trace) & (data["gpus"] == gpus)]
        sns.lineplot(data=part, x="load", y="value", hue="policy", hue_order=order, marker="o", errorbar=None, ax=ax)
        ax.set_title(f"{trace}, {gpus} GPUs")
        ax.set_xlabel("load")
        ax.set_ylabel(SUMMARY_METRICS.get(metric, metric))
        ax.set_yscale("log")
    return _legend_beside(fig, axes.flat, title)


def _legend_beside(fig: plt.Figure, axes, title: str) -> plt.Figure:
    """One legend of the policies to the right of the panels, where it hides no data; the panels' own go."""
    axes = list(axes)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    fig.suptitle(title)
    fig.tight_layout()
    fig.legend(handles, labels, title="policy", loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig
