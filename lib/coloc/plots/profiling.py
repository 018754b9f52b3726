"""Figures of the profiling stage (notebook 01_profiling).

Every figure names its data source (measured here by coloc.profiler) and device.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

SOURCE = "measured by coloc.profiler on this machine"


def slowdown_heatmap(pairs: pd.DataFrame, device: str | None = None, source: str = SOURCE) -> plt.Figure:
    """Normalized throughput of the row job next to the column job (median of repeats; x: did not run)."""
    if pairs.empty:  # e.g. only sets of three were measured
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, f"no pairs measured ({source})", ha="center", va="center")
        return fig
    device = device or _only_device(pairs)
    sub = pairs[pairs["device"] == device]
    matrix = norm_matrix(sub)
    n = max(len(matrix), 1)
    fig, ax = plt.subplots(figsize=(4.5 + 1.1 * n, 2.5 + 0.9 * n))
    sns.heatmap(matrix, ax=ax, vmin=0, vmax=max(1.0, float(np.nanmax(matrix.to_numpy(), initial=1.0))),
                cmap="viridis", annot=True, fmt=".2f", square=True, cbar_kws={"label": "normalized throughput"})
    for i, job in enumerate(matrix.index):
        for j, other in enumerate(matrix.columns):
            if np.isnan(matrix.loc[job, other]):
                ax.text(j + 0.5, i + 0.5, "x", ha="center", va="center", color="red", fontsize=14)
    repeats = int(sub["repeats"].max()) if "repeats" in sub and len(sub) else 0
    infeasible = int((~sub["feasible"].astype(bool)).sum())
    ax.set_title(f"{device}: throughput of the row job next to the column job / solo\n"
                 f"{source}\nmedian of {repeats} repeats; 1 = no slowdown; self-pairs: mean of both; "
                 f"{infeasible} pair(s) did not fit, x; pairs that failed otherwise are left out", fontsize=9)
    ax.set_xlabel("co-located with")
    ax.set_ylabel("job")
    ax.tick_params(axis="y", labelrotation=0)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.tight_layout()
    return fig


def norm_matrix(pairs: pd.DataFrame) -> pd.DataFrame:
    """Normalized throughput of the row job next to the column job (self-pairs: both instances' mean)."""
    forward = pairs[["workload_a", "workload_b", "norm_a"]].set_axis(["job", "with", "norm"], axis=1)
    backward = pairs[["workload_b", "workload_a", "norm_b"]].set_axis(["job", "with", "norm"], axis=1)
    both = pd.concat([forward, backward]).astype({"norm": float})
    return both.groupby(["job", "with"])["norm"].mean().unstack("with")


def repeat_spread(jobs: pd.DataFrame, band: float = 0.10, source: str = SOURCE) -> plt.Figure:
    """Each repeat's throughput relative to the mean of the repeats the tables use, per job in each set.

    ``jobs`` is :func:`coloc.profiler.jobs_table`. Dots: repeats the tables use; crosses: repeats
    left out as disturbed by other processes. Colour: the other processes' load on the device's
    cores. The shaded band is 1 ± band/2: repeats inside it are within ``band`` of each other.
    """
    ok = jobs[jobs["measured"]].copy()
    ok["label"] = np.where(ok["partners"].fillna("") == "", ok["workload"] + "  (solo)",
                           ok["workload"] + "  next to " + ok["partners"].fillna(""))
    keys = ["device", "set", "slot"]
    used_mean = ok["throughput"].where(ok["used"]).groupby([ok[k] for k in keys]).transform("mean")
    ok["relative"] = ok["throughput"] / used_mean
    order = sorted(ok["label"].unique(), key=lambda s: (" next to " in s, s))
    rows = ok["label"].map({s: i for i, s in enumerate(order)})
    fig, ax = plt.subplots(figsize=(9, 1.4 + 0.32 * max(len(order), 1)))
    ax.axvspan(1 - band / 2, 1 + band / 2, color="0.92", zorder=0, label=f"1 ± {band / 2:.0%}")
    load = ok["other_cpu_pct"].fillna(0.0)
    vmax = max(50.0, float(load.max()) if len(load) else 50.0)
    for used, marker, label in ((True, "o", "used by the tables"), (False, "X", "left out: disturbed")):
        pick = ok["used"] == used
        points = ax.scatter(ok.loc[pick, "relative"], rows[pick], c=load[pick], cmap="magma_r", vmin=0, vmax=vmax,
                            marker=marker, s=40, edgecolor="0.2", linewidth=0.5, zorder=3, label=label)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="0.4", linewidth=0.8)
    fig.colorbar(points, ax=ax, label="other processes' load on the cores (%)")
    used_spread = _spread(ok[ok["used"]], keys)
    all_spread = _spread(ok, keys)
    devices = ", ".join(sorted(ok["device"].unique()))
    ax.set_xlabel("throughput of a repeat / mean of the repeats used")
    ax.set_title(f"Spread of repeated measurements, {devices} ({source})\n"
                 f"(max - min) / mean over the repeats used: median {used_spread.median():.1%}, "
                 f"{(used_spread <= band).mean():.0%} within {band:.0%}; over all repeats: median "
                 f"{all_spread.median():.1%}, {(all_spread <= band).mean():.0%} within {band:.0%}", fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def _spread(jobs: pd.DataFrame, keys: list[str]) -> pd.Series:
    """(max - min) / mean of throughput per job in each set, over sets with two or more repeats."""
    grouped = jobs.groupby(keys)["throughput"]
    spread = (grouped.max() - grouped.min()) / grouped.mean()
    return spread[grouped.size() > 1]


def _only_device(table: pd.DataFrame) -> str:
    devices = sorted(table["device"].unique())
    if len(devices) != 1:
        raise ValueError(f"pairs hold devices {devices}: pass device= to choose one")
    return devices[0]
