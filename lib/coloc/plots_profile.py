"""Figures of the profiling stage: one function per figure, seaborn on matplotlib's Agg backend.

Each function returns the matplotlib Figure; :func:`coloc.plots.save` writes and closes it.
Every figure names its data source (measured here by coloc.profiler) and device.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

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
                 f"{infeasible} pair(s) failed (x)", fontsize=9)
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
    """Each repeat's throughput relative to the mean of its repeats, per job in each set.

    The shaded band is 1 ± band/2: repeats inside it are within ``band`` of each other.
    Points are coloured by the other processes' load on the device's cores while measuring.
    """
    ok = jobs[jobs["feasible"]].copy()
    ok["label"] = np.where(ok["partners"].fillna("") == "", ok["workload"] + "  (solo)",
                           ok["workload"] + "  next to " + ok["partners"].fillna(""))
    ok["relative"] = ok["throughput"] / ok.groupby(["device", "set", "slot"])["throughput"].transform("mean")
    order = sorted(ok["label"].unique(), key=lambda s: (" next to " in s, s))
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * max(len(order), 1)))
    ax.axvspan(1 - band / 2, 1 + band / 2, color="0.92", zorder=0, label=f"1 ± {band / 2:.0%}")
    load = ok["other_cpu_pct"].fillna(0.0)
    points = ax.scatter(ok["relative"], ok["label"].map({s: i for i, s in enumerate(order)}), c=load,
                        cmap="magma_r", vmin=0, vmax=max(50.0, float(load.max()) if len(load) else 50.0),
                        s=36, edgecolor="0.2", linewidth=0.5, zorder=3)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="0.4", linewidth=0.8)
    fig.colorbar(points, ax=ax, label="other processes' load on the cores (%)")
    spread = (ok.groupby(["device", "set", "slot"])["relative"].agg(lambda s: s.max() - s.min()))
    devices = ", ".join(sorted(ok["device"].unique()))
    ax.set_xlabel("throughput of a repeat / mean of its repeats")
    ax.set_title(f"Spread of repeated measurements, {devices} ({source})\n"
                 f"(max - min) / mean: median {spread.median():.1%}, largest {spread.max():.1%}, "
                 f"{(spread <= band).mean():.0%} of jobs' repeats within {band:.0%} of each other", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def _only_device(table: pd.DataFrame) -> str:
    devices = sorted(table["device"].unique())
    if len(devices) != 1:
        raise ValueError(f"pairs hold devices {devices}: pass device= to choose one")
    return devices[0]
