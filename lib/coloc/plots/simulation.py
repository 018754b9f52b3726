"""Figures of the simulation stage: per scenario (notebook 04_simulation_figures) and the scheduling delay (05).

Per scenario, from the gathered tables (coloc.studies.experiment; one row per run in `summary`, per job in
`jobs`, per time bin in `utilization`, each keyed by scenario, policy, seed and sweep point):

* `policy_bars`: every policy's mean JCT, makespan, queueing delay and GPU busy share at one sweep point
  (the scenario's headline), mean over seeds with 95% Student t intervals (coloc.stats.mean_ci);
* `jct_density`: the distribution of job completion times per policy (ISACPP Fig. 14);
* `utilization_over_time`: busy and effective GPUs over time per policy (ISACPP Fig. 15), and on Lucid's data
  the GPU utilization nvidia-smi measured (solo for a lone job, the pair's for two);
* `sweep`: mean JCT and makespan against the swept value, with fifo's GPU busy share until the last
  job starts (is the cluster contended?);
* `scheduling_delay`: one round's wall time against the queue length, log-log (ISACPP Fig. 16);
* `regret`: every deployable policy's regret against coloc's bound (coloc.studies.regret) per scenario and point.

Titles carry the data source, cluster, devices and prediction protocol. Policies appear in the order of
their kind (baselines, predictive policies, oracles); oracles are labelled upper bounds and hatched.
Legends sit beside the panels, never over data.
"""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from coloc import datasets
from coloc.policies import KINDS
from coloc.stats import mean_ci
from coloc.studies.regret import CONTENDED

BAR_METRICS = {"jct_mean": "mean JCT (h)", "makespan": "makespan (h)",
               "queue_delay_mean": "mean queueing delay (h)", "gpu_util_mean": "GPU utilization\n(busy share of the makespan)"}
MEASURED_UTIL = {"measured_util_mean": "nvidia-smi utilization\n(measured by Lucid)"}  # where the data has it
SWEEP_METRICS = {"jct_mean": "mean JCT (h)", "makespan": "makespan (h)"}
HOURS = {"jct_mean", "jct_median", "jct_p90", "jct_p99", "makespan", "queue_delay_mean"}
SWEEP_NAMES = {"load": "load factor", "interval_s": "arrival interval (s)", "gpus": "GPUs"}


SCENARIO_FIGURES = ("policies", "jct_density", "utilization", "sweep")  # figures/sim/<scenario>/<name>.png


def scenario_figures(summary: pd.DataFrame, jobs: pd.DataFrame, utilization: pd.DataFrame, scenario: str,
                     point: float) -> dict[str, plt.Figure]:
    """The figures of one scenario by name (SCENARIO_FIGURES): three at sweep point `point`, the sweep over all."""
    rows = at_point(summary, scenario, point)
    order = policy_order(rows)
    kinds = dict(zip(rows["policy"], rows["kind"], strict=True))
    every = summary[summary["scenario"] == scenario]
    return {
        "policies": policy_bars(rows, metrics=bar_metrics(rows),
                                title=scenario_title(rows, "mean over seeds, whiskers: 95% interval", point)),
        "jct_density": jct_density(at_point(jobs, scenario, point), order, kinds,
                                   title=scenario_title(rows, "job completion times, every seed's jobs", point)),
        "utilization": utilization_over_time(at_point(utilization, scenario, point), order, kinds,
                                             title=scenario_title(rows, "GPU utilization over time, mean over seeds",
                                                                  point)),
        "sweep": sweep(every, title=scenario_title(every, "mean over seeds, whiskers: 95% interval")),
    }


def bar_metrics(rows: pd.DataFrame) -> list[str]:
    """The bar figure's metrics: BAR_METRICS, and nvidia-smi's measured utilization where the runs have it."""
    measured = "measured_util_mean" in rows.columns and rows["measured_util_mean"].notna().any()
    return [*BAR_METRICS, *(MEASURED_UTIL if measured else ())]


def policy_order(summary: pd.DataFrame) -> list[str]:
    """Policies by kind (baselines, predictive, oracles), in order of appearance within a kind.

    ``summary`` has the columns policy and kind (the simulation summary has both).
    """
    kinds = dict(zip(summary["policy"], summary["kind"], strict=True))
    rank = {kind: i for i, kind in enumerate(KINDS)}
    unknown = sorted(set(kinds.values()) - set(rank))
    if unknown:
        raise ValueError(f"policy kinds {unknown} not among {list(KINDS)}")
    return sorted(kinds, key=lambda policy: rank[kinds[policy]])


def label(policy: str, kind: str) -> str:
    """The policy's legend entry: the oracle marked an upper bound, '@profiled-pairs' the paper's assumption."""
    if kind == "oracle":
        return f"{policy} (oracle, upper bound)"
    if policy.endswith("@profiled-pairs"):
        return f"{policy} (paper's assumption: measured pairs)"
    return policy


def _whiskers(stats: list[tuple[float, float, float]]) -> np.ndarray:
    """Error bars (below, above) of (mean, low, high) intervals: 0 where an interval is undefined or misses its own
    mean by a rounding error (the last bits differ across CPUs), never a bar below 0."""
    return np.clip(np.nan_to_num(np.array([[s[0] - s[1], s[2] - s[0]] for s in stats]).T), 0.0, None)


def palette(order: list[str]) -> dict[str, tuple]:
    """One colour per policy, by its place in ``order`` (the same in every figure of a scenario)."""
    colours = sns.color_palette("tab10" if len(order) <= 10 else "tab20", len(order))
    return dict(zip(order, colours, strict=True))


def truth_of(rows: pd.DataFrame) -> str:
    """The rows' ground truth: the measured data and the interference world, e.g. 'Gavel + Lucid's RTX 3090
    measured pairs' (world measured), 'world flat:0.2 (Gavel's memory fit)'."""
    shown = sorted(rows["dataset"].dropna().unique()) if "dataset" in rows.columns else [datasets.DEFAULT]
    names = " + ".join(datasets.get(d).title if d in datasets.simulated() else d for d in shown)
    worlds = sorted(rows["world"].dropna().unique()) if "world" in rows.columns else ["measured"]
    return "; ".join(f"{names} measured pairs" if world == "measured" else f"world {world} ({names}'s memory fit)"
                     for world in worlds or ["measured"])


def source_line(rows: pd.DataFrame) -> str:
    """Where the numbers come from: the ground truth and the predictions (protocol, predictors)."""
    protocols = ",".join(sorted({p for p in rows["protocol"].dropna().unique() if p})) or "none"
    norm = ",".join(sorted({p for p in rows.get("predictor_norm", pd.Series(dtype=str)).dropna().unique() if p}))
    util = ",".join(sorted({p for p in rows.get("predictor_util", pd.Series(dtype=str)).dropna().unique() if p}))
    return (f"truth: {truth_of(rows)}; policies see out-of-fold predictions "
            f"(protocol {protocols}; pairs {norm or '-'}, utilization {util or '-'})")


def scenario_title(rows: pd.DataFrame, what: str, point: float | None = None) -> str:
    """'<scenario>: <what>' and a line naming the trace, cluster, sweep point, seeds and the source."""
    first = rows.iloc[0]
    clusters = list(dict.fromkeys(rows["cluster"]))
    where = (f"{first['trace']} trace, cluster {first['cluster']} ({int(first['gpus'])} GPUs)" if len(clusters) == 1
             else f"{first['trace']} trace, clusters {'; '.join(clusters)}")
    if point is not None:
        where += f", {first['sweep']} = {_number(point)}"
    return f"{first['scenario']}: {what}\n{where}, {rows['seed'].nunique()} seeds; {source_line(rows)}"


def at_point(table: pd.DataFrame, scenario: str, point: float) -> pd.DataFrame:
    """Rows of `scenario` at sweep point `point`; an error names the scenarios or points there are."""
    rows = table[table["scenario"] == scenario]
    if rows.empty:
        raise ValueError(f"no rows of scenario {scenario!r}; have {sorted(table['scenario'].unique())}")
    chosen = rows[np.isclose(rows["point"].astype(float), float(point))]
    if chosen.empty:
        raise ValueError(f"scenario {scenario!r}: no rows at {rows['sweep'].iloc[0]} = {point}; "
                         f"have {sorted(float(p) for p in rows['point'].unique())}")
    return chosen


def policy_bars(summary: pd.DataFrame, metrics=tuple(BAR_METRICS), title: str = "") -> plt.Figure:
    """One panel per metric, a horizontal bar per policy: the mean over seeds, whiskers its 95% interval."""
    order = policy_order(summary)
    kinds = dict(zip(summary["policy"], summary["kind"], strict=True))
    colours = palette(order)
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics) + 1.5, 0.42 * len(order) + 1.6),
                             sharey=True, squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        scale = 3600.0 if metric in HOURS else 1.0
        stats = [mean_ci(summary.loc[summary["policy"] == p, metric] / scale) for p in order]
        means = np.array([s[0] for s in stats])
        y = np.arange(len(order))
        bars = ax.barh(y, means, xerr=_whiskers(stats), color=[colours[p] for p in order],
                       error_kw={"elinewidth": 1, "capsize": 2})
        for bar, policy in zip(bars, order, strict=True):
            if kinds[policy] == "oracle":
                bar.set_hatch("//")
                bar.set_edgecolor("black")
        ax.set_title({**BAR_METRICS, **MEASURED_UTIL}.get(metric, metric))
        ax.set_yticks(y, [label(p, kinds[p]) for p in order])
        ax.invert_yaxis() if ax is axes[0][0] else None
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlim(left=0)  # every metric is >= 0; a wide interval of few seeds is cut at 0, not drawn below it
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def jct_density(jobs: pd.DataFrame, order: list[str], kinds: dict[str, str], title: str = "") -> plt.Figure:
    """Distribution of job completion times per policy (all seeds' jobs pooled), a violin each.

    The JCT axis is logarithmic when the completion times span more than a factor of 30.
    """
    data = jobs.assign(hours=jobs["jct"] / 3600.0)
    log = bool(data["hours"].max() > 30 * data["hours"].min())
    names = {p: label(p, kinds[p]) for p in order}
    data["policy "] = data["policy"].map(names)
    fig, ax = plt.subplots(figsize=(11, 0.5 * len(order) + 1.6))
    sns.violinplot(data=data, x="hours", y="policy ", order=[names[p] for p in order], hue="policy ",
                   palette={names[p]: c for p, c in palette(order).items()}, cut=0, inner="quart",
                   density_norm="width", log_scale=log, legend=False, ax=ax)
    ax.set_xlabel("job completion time (h)" + (", log scale" if log else ""))
    ax.set_ylabel("")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def utilization_over_time(series: pd.DataFrame, order: list[str], kinds: dict[str, str], title: str = "",
                          columns: int = 4) -> plt.Figure:
    """A panel per policy: busy GPUs and effective GPUs (shares of the cluster) over time, mean over seeds, and
    where the data measured it (Lucid's) the utilization nvidia-smi showed (dotted).

    A run counts as idle (0) after its last job ends, so a shorter makespan shows as an earlier drop.
    Each panel repeats fifo's busy share in grey, for reference, where fifo ran.
    """
    curves = _mean_over_seeds(series)
    measured = "measured_util" in series.columns and series["measured_util"].notna().any()
    rows = math.ceil(len(order) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 2.4 * rows), sharex=True, sharey=True,
                             squeeze=False)
    colours = palette(order)
    for ax, policy in zip(axes.flat, order, strict=False):
        mine = curves[curves["policy"] == policy]
        if policy != "fifo" and "fifo" in order:
            fifo = curves[curves["policy"] == "fifo"]
            ax.plot(fifo["hours"], fifo["gpu_util"], color="0.6", lw=1, label="fifo: busy GPUs")
        ax.plot(mine["hours"], mine["gpu_util"], color=colours[policy], lw=1.6, label="busy GPUs")
        ax.plot(mine["hours"], mine["effective_util"], color=colours[policy], lw=1.2, ls="--",
                label="effective GPUs (progress)")
        if measured:
            ax.plot(mine["hours"], mine["measured_util"], color=colours[policy], lw=1.4, ls=":",
                    label="nvidia-smi utilization (measured)")
        ax.set_title(label(policy, kinds[policy]), fontsize=9)
        ax.grid(alpha=0.3)
    top = max(1.0, float(curves[["gpu_util", "effective_util"]].max().max()))
    for ax in axes.flat:
        ax.set_ylim(0, 1.05 * top)
    for i, ax in enumerate(axes.flat):
        if i >= len(order):
            ax.set_visible(False)
        elif i + columns >= len(order):  # the lowest panel of its column: it carries the time axis
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel("time (h)")
    for ax in axes[:, 0]:
        ax.set_ylabel("share of GPUs")
    keys = [Line2D([], [], color="black", lw=1.6), Line2D([], [], color="black", lw=1.2, ls="--")]
    names = ["busy GPUs (>= 1 job)", "effective GPUs\n(progress in exclusive-GPU units)"]
    if measured:
        keys.append(Line2D([], [], color="black", lw=1.4, ls=":"))
        names.append("nvidia-smi utilization\n(measured by Lucid: a job's\nsolo, a pair's together)")
    if "fifo" in order and len(order) > 1:
        keys.append(Line2D([], [], color="0.6", lw=1))
        names.append("fifo: busy GPUs (reference)")
    _legend_beside(fig, keys, names, title, "")
    return fig


def _mean_over_seeds(series: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, time bin): the mean over seeds, a seed's bins after its run ended counted as 0."""
    seeds = sorted(series["seed"].unique())
    times = np.sort(series["time"].unique())
    full = pd.MultiIndex.from_product([sorted(series["policy"].unique()), seeds, times],
                                      names=["policy", "seed", "time"])
    columns = [c for c in ("gpu_util", "effective_util", "measured_util") if c in series.columns]
    values = (series.set_index(["policy", "seed", "time"])[columns]
              .groupby(level=[0, 1, 2]).mean().reindex(full, fill_value=0.0))
    out = values.groupby(level=["policy", "time"]).mean().reset_index()
    return out.assign(hours=out["time"] / 3600.0)


def sweep(summary: pd.DataFrame, metrics=tuple(SWEEP_METRICS), title: str = "") -> plt.Figure:
    """`metrics` against the swept value per policy (mean over seeds, whiskers: 95% intervals, set a little
    apart per policy), and fifo's busy share.

    The last panel is fifo's GPU busy share while work waits or arrives (summary column busy_share:
    first submission to the last job's start, coloc.sim.metrics) with the contended threshold of 80%;
    without a fifo run it shows every policy's.
    """
    order = policy_order(summary)
    kinds = dict(zip(summary["policy"], summary["kind"], strict=True))
    colours = palette(order)
    swept = SWEEP_NAMES.get(summary["sweep"].iloc[0], summary["sweep"].iloc[0])
    height = max(3.9, 0.3 * (len(order) + 3))  # the legend beside the panels: a line per policy, none cut off
    fig, axes = plt.subplots(1, len(metrics) + 1, figsize=(4.3 * (len(metrics) + 1), height), squeeze=False)
    axes = axes[0]
    for ax, metric in zip(axes, metrics, strict=False):
        scale = 3600.0 if metric in HOURS else 1.0
        for i, policy in enumerate(order):
            _line_with_interval(ax, summary[summary["policy"] == policy], metric, scale, colours[policy],
                                label(policy, kinds[policy]), kinds[policy] == "oracle",
                                shift=0.012 * (i - (len(order) - 1) / 2))
        values = summary[metric] / scale
        if values.min() > 0 and values.max() > 10 * values.min():
            ax.set_yscale("log")
        ax.set_title(SWEEP_METRICS.get(metric, metric))
    busy = axes[-1]
    shown = ["fifo"] if "fifo" in order else order
    for policy in shown:
        _line_with_interval(busy, summary[summary["policy"] == policy], "busy_share", 1.0, colours[policy],
                            label(policy, kinds[policy]), kinds[policy] == "oracle")
    busy.axhline(CONTENDED, color="0.3", ls=":", lw=1, label=f"{CONTENDED:.0%} busy: contended")
    busy.set_ylim(0, 1.05)
    busy.set_title(("fifo: " if shown == ["fifo"] else "") + "GPU busy share\nuntil the last job starts")
    for ax in axes:
        ax.set_xlabel(swept)
        ax.grid(alpha=0.3)
    handles, labels = {}, []
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            if text not in handles:
                handles[text] = handle
                labels.append(text)
    _legend_beside(fig, [handles[t] for t in labels], labels, title, "policy")
    return fig


def _line_with_interval(ax, rows: pd.DataFrame, metric: str, scale: float, colour, name: str, oracle: bool,
                        shift: float = 0.0):
    """Mean over seeds per sweep point, whiskers its 95% interval; `shift` moves the whiskers sideways
    (a share of the swept range) so that policies' whiskers do not hide each other. A metric undefined in a run
    (NaN, e.g. the busy share when every job started at once) leaves that run out; a point without any is not drawn."""
    rows = rows[np.isfinite(rows[metric].to_numpy(dtype=float))]
    if rows.empty:
        return
    points = np.array(sorted(rows["point"].unique()), dtype=float)
    stats = [mean_ci(rows.loc[rows["point"] == p, metric] / scale) for p in points]
    mean = np.array([s[0] for s in stats])
    err = _whiskers(stats)
    ax.plot(points, mean, marker="o", ms=4, color=colour, ls="--" if oracle else "-", label=name)
    width = (points.max() - points.min()) or 1.0
    ax.errorbar(points + shift * width, mean, yerr=err, fmt="none", ecolor=colour, elinewidth=0.9, alpha=0.6)


def scheduling_delay(table: pd.DataFrame, paper: dict[str, float] | None = None,
                     paper_names: dict[str, str] | None = None, paper_queue: int = 100,
                     title: str = "") -> plt.Figure:
    """One round's wall time against the number of queued jobs, log-log, one panel per cluster.

    Lines: mean over seeds, band: 95% interval. `paper`: {policy: seconds at `paper_queue` queued jobs}
    reported by the paper (ISACPP Fig. 16), drawn as stars in the policy's colour for reference.
    """
    order = policy_order(table)
    kinds = dict(zip(table["policy"], table["kind"], strict=True))
    colours = palette(order)
    clusters = list(dict.fromkeys(table["cluster"]))
    fig, axes = plt.subplots(1, len(clusters), figsize=(5.2 * len(clusters), 4.2), sharey=True, squeeze=False)
    for ax, cluster in zip(axes[0], clusters, strict=True):
        rows = table[table["cluster"] == cluster]
        for policy in order:
            mine = rows[rows["policy"] == policy]
            sizes = sorted(mine["queued_jobs"].unique())
            stats = [mean_ci(mine.loc[mine["queued_jobs"] == n, "decision_s"]) for n in sizes]
            mean = np.array([s[0] for s in stats])
            ax.plot(sizes, mean, marker="o", ms=3, color=colours[policy], ls="--" if kinds[policy] == "oracle" else "-",
                    label=label(policy, kinds[policy]))
            low, high = np.array([s[1] for s in stats]), np.array([s[2] for s in stats])
            ok = np.isfinite(low) & (low > 0)
            if ok.any():
                ax.fill_between(np.array(sizes)[ok], low[ok], high[ok], color=colours[policy], alpha=0.15, lw=0)
        for policy, seconds in (paper or {}).items():
            name = (paper_names or {}).get(policy, policy)
            ax.plot([paper_queue], [seconds], marker="*", ms=13, ls="none", markeredgecolor="black",
                    color=colours.get(policy, "0.5"), label=f"paper: {name} {seconds:g} s at {paper_queue} jobs")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("queued jobs")
        ax.set_title(f"cluster {cluster} ({int(rows['gpus'].iloc[0])} GPUs)")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("one scheduling round (s)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    _legend_beside(fig, handles, labels, title, "policy")
    return fig


REGRET_SHOWN = (-0.5, 2.0)  # the regret axis; values beyond it are written at its edge, in their point's colour


def regret_title(summary: pd.DataFrame) -> str:
    """What the regret figure shows and where its numbers come from: truth, clusters, protocols, predictors."""
    firsts = summary.drop_duplicates("scenario")
    clusters = "; ".join(f"{s} {c}" for s, c in zip(firsts["scenario"], firsts["cluster"], strict=True))
    read = summary[summary["kind"] == "predictive"] if "kind" in summary.columns else summary
    protocols = ", ".join(sorted(p for p in read["protocol"].dropna().unique() if p)) or "none"
    norm = ", ".join(sorted(p for p in read.get("predictor_norm", pd.Series(dtype=str)).dropna().unique() if p)) or "-"
    return (f"Regret of each deployable policy against coloc's bound, mean JCT, per scenario point\n"
            f"truth: {truth_of(summary)}\n" + "\n".join(textwrap.wrap(f"clusters: {clusters}", 130)) + "\n"
            f"predictions out-of-fold, protocols {protocols} ('@' names a policy's own; pair predictors {norm})")


def regret(table: pd.DataFrame, title: str = "") -> plt.Figure:
    """A panel per scenario: each deployable policy's regret (coloc.studies.regret.regret_report's table, oracle
    kinds left out), baselines first, at every sweep point, a marker per point (filled where fifo's busy share
    makes it contended, hollow where not) with its 95% interval; 0 is the bound (oracle, an upper bound), 1 is
    fifo. A regret beyond the axis is written at the row's edge, in its point's colour, beside an arrow."""
    shown = table[table["kind"] != "oracle"]
    scenarios = list(dict.fromkeys(shown["scenario"]))
    if not scenarios:  # no scenario ran both the oracle and fifo
        fig, ax = plt.subplots(figsize=(8, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "no scenario point has runs of both oracle and fifo: regret is undefined", ha="center")
        fig.suptitle(title, fontsize=9)
        return fig
    sizes = [shown.loc[shown["scenario"] == s, "policy"].nunique() for s in scenarios]
    fig, axes = plt.subplots(len(scenarios), 1, figsize=(10, 0.32 * sum(sizes) + 1.3 * len(scenarios) + 0.8),
                             gridspec_kw={"height_ratios": [n + 2 for n in sizes]}, squeeze=False)
    for ax, scenario in zip(axes[:, 0], scenarios, strict=True):
        _regret_panel(ax, shown[shown["scenario"] == scenario])
        ax.set_title(scenario, fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("regret = (mean JCT - oracle's) / (fifo's - oracle's); whiskers: 95% interval (Fieller, "
                           "paired seeds)")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.16 * (title.count("\n") + 1) / fig.get_figheight()))  # room for the title's lines
    return fig


def _regret_panel(ax, rows: pd.DataFrame) -> None:
    low, high = REGRET_SHOWN
    policies = policy_order(rows)
    points = sorted(rows["point"].unique())
    colours = dict(zip(points, sns.color_palette("viridis", len(points)), strict=True))
    beyond: dict[tuple[int, bool], list] = {}  # (row, right side) -> [(value, colour)]
    for j, point in enumerate(points):
        at = rows[rows["point"] == point].set_index("policy").reindex(policies)
        y = np.arange(len(policies)) + 0.5 * (j - (len(points) - 1) / 2) / len(points)
        value = at["regret"].to_numpy(float)
        # an interval may miss its own value by a rounding error (the last bits differ across CPUs): no bar below 0
        err = np.clip(np.nan_to_num(np.array([value - at["regret_low"].to_numpy(float),
                                              at["regret_high"].to_numpy(float) - value])), 0.0, None)
        inside = (value >= low) & (value <= high)
        contended = bool(at["contended"].dropna().any())
        colour = colours[point]
        ax.errorbar(value[inside], y[inside], xerr=err[:, inside], fmt="o", ms=5, color=colour, capsize=2,
                    elinewidth=0.9, mfc=colour if contended else "white",
                    label=_number(point) + (" (contended)" if contended else ""))
        for i in np.flatnonzero(~inside & np.isfinite(value)):
            beyond.setdefault((int(i), bool(value[i] > high)), []).append((value[i], colour))
    for (i, right), values in beyond.items():
        edge, step = (high, -1) if right else (low, 1)
        ax.plot([edge], [i], marker=">" if right else "<", ms=6, color="0.3", ls="none")
        offset = 7
        for value, colour in values:
            text = f"{value:.1f}"
            ax.annotate(text, (edge, i), xytext=(step * offset, 0), textcoords="offset points", fontsize=7,
                        va="center", ha="right" if right else "left", color=colour)
            offset += 4.3 * len(text) + 4
    ax.axvline(0.0, color="black", ls="--", lw=1, label="0: oracle (upper bound)")
    ax.axvline(1.0, color="0.5", ls=":", lw=1, label="1: fifo")
    ax.set_yticks(np.arange(len(policies)), policies)
    ax.set_ylim(len(policies) - 0.5, -0.5)
    ax.set_xlim(low - 0.05, high + 0.05)
    ax.grid(axis="x", alpha=0.3)
    swept = SWEEP_NAMES.get(rows["sweep"].iloc[0], rows["sweep"].iloc[0])
    ax.legend(title=swept, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8,
              title_fontsize=8)


def _legend_beside(fig: plt.Figure, handles, labels, title: str, legend_title: str) -> plt.Figure:
    """One legend to the right of the panels, where it hides no data; the panels' own legends go."""
    for ax in fig.axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    fig.suptitle(title)
    fig.tight_layout()
    fig.legend(handles, labels, title=legend_title or None, loc="center left", bbox_to_anchor=(1.0, 0.5),
               frameon=False)
    return fig


def _number(value: float) -> str:
    return f"{value:g}"
