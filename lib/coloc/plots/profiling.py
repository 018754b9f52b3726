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


def extrapolation(errors: pd.DataFrame, source: str = SOURCE) -> plt.Figure:
    """Each job of each measured set of 3+: measured normalized throughput (x) against the product of its
    measured pair norms (y), the simulator's rule; on the diagonal the rule is exact, above it too optimistic.

    ``errors`` is :func:`coloc.profiler.extrapolation.extrapolation_error`. One colour per set, one marker per
    job type; the legends sit beside the axes so that they hide no point.
    """
    both = errors.dropna(subset=["measured", "product"])
    if both.empty:
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, f"no set of 3 or more measured with all its pairs ({source})", ha="center", va="center")
        return fig
    fig, ax = plt.subplots(figsize=(12.5, 5.6))
    top = max(1.0, float(both[["measured", "product"]].to_numpy().max()) * 1.05)
    ax.plot([0, top], [0, top], color="0.4", linewidth=0.8, zorder=1, label="product = measured")
    markers = dict(zip(sorted(both["workload"].unique()), "osD^vP*X", strict=False))
    colours = dict(zip(sorted(both["set"].unique()), sns.color_palette("colorblind", both["set"].nunique()), strict=True))
    for (name, workload), group in both.groupby(["set", "workload"], sort=True):
        ax.errorbar(group["measured"], group["product"], xerr=group["measured_std"].fillna(0.0), fmt=markers[workload],
                    color=colours[name], markersize=7, markeredgecolor="0.2", capsize=2, linestyle="none", zorder=3)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_aspect("equal")
    ax.set_xlabel("measured normalized throughput in the set (bar: std over rounds)")
    ax.set_ylabel("product of its measured pair norms")
    mare = both["abs_rel_error"].mean()
    devices = ", ".join(sorted(both["device"].unique()))
    low, high = int(both["repeats"].min()), int(both["repeats"].max())
    repeats = str(low) if low == high else f"{low}-{high}"
    ax.set_title(f"Product-of-pairs rule against measured sets of 3+, {devices}\n({source}; medians of {repeats} "
                 f"repeats; mean |product - measured| / measured = {mare:.1%} over {len(both)} jobs)", fontsize=9)
    line = plt.Line2D([], [], color="0.4", linewidth=0.8)
    sets = [plt.Line2D([], [], marker="s", linestyle="none", color=c, markeredgecolor="0.2") for c in colours.values()]
    jobs = [plt.Line2D([], [], marker=m, linestyle="none", color="0.7", markeredgecolor="0.2") for m in markers.values()]
    first = ax.legend([line, *sets], ["product = measured", *colours], title="set (colour)", loc="upper left",
                      bbox_to_anchor=(1.02, 1.0), fontsize=7, title_fontsize=8, frameon=False)
    ax.add_artist(first)
    ax.legend(jobs, list(markers), title="job (marker)", loc="lower left", bbox_to_anchor=(1.02, 0.0), fontsize=7,
              title_fontsize=8, frameon=False)
    fig.subplots_adjust(left=0.06, right=0.44, top=0.88, bottom=0.1)  # the legends' room on the right
    return fig
