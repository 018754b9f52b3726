"""Figures of the predictors stage (the shape of ISACPP's prediction figures).

Every title names the data source, the protocol and what was predicted.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from coloc.pairs import directed


def _jobs(predictions: pd.DataFrame, predictors) -> pd.DataFrame:
    """One row per job of each pair (coloc.pairs.directed): norm (measured), pred (predicted), ape (%)."""
    rows = directed(predictions[predictions["predictor"].isin(predictors)])
    rows = rows.rename(columns={"pred_norm": "pred"})
    rows["ape"] = 100 * (rows["pred"] - rows["norm"]).abs() / rows["norm"]
    return rows


def predicted_vs_measured(predictions: pd.DataFrame, predictors, source: str, protocol: str) -> plt.Figure:
    """Predicted vs measured normalized throughput, one panel per predictor, coloured by device."""
    rows = _jobs(predictions, predictors)
    n = len(predictors)
    cols = min(n, 3)
    fig, axes = plt.subplots(int(np.ceil(n / cols)), cols, figsize=(4 * cols, 3.8 * np.ceil(n / cols)),
                             squeeze=False, sharex=True, sharey=True)
    colors = dict(zip(sorted(rows["device"].unique()), sns.color_palette("colorblind"), strict=False))
    for ax, name in zip(axes.flat, predictors, strict=False):
        part = rows[rows["predictor"] == name]
        for device, color in colors.items():
            sub = part[part["device"] == device]
            ax.scatter(sub["norm"], sub["pred"], s=6, alpha=0.5, color=color, label=device, rasterized=True)
        ax.plot([0, 1.1], [0, 1.1], color="grey", lw=1, ls="--")
        if ax is axes.flat[0]:
            ax.legend(fontsize=7, markerscale=2)
        mape = part["ape"].mean()
        ax.set(title=f"{name} (MAPE {mape:.1f}%)", xlabel="measured normalized throughput",
               ylabel="predicted", xlim=(0, 1.1), ylim=(0, 1.3))
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle(f"Co-located normalized throughput, out-of-fold ({protocol}); data: {source}")
    fig.tight_layout()
    return fig


def error_cdf(predictions: pd.DataFrame, predictors, source: str, protocol: str) -> plt.Figure:
    """CDF of the absolute percentage error of each predictor."""
    rows = _jobs(predictions, predictors)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in predictors:
        ape = np.sort(rows.loc[rows["predictor"] == name, "ape"].to_numpy())
        if len(ape):
            ax.plot(ape, np.arange(1, len(ape) + 1) / len(ape), label=name)
    ax.set(xscale="symlog", xlabel="absolute percentage error of normalized throughput (%)",
           ylabel="fraction of jobs", title=f"Error CDF, out-of-fold ({protocol}); data: {source}")
    ax.axvline(6, color="grey", lw=0.8, ls=":")
    ax.axvline(15, color="grey", lw=0.8, ls=":")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def family_errors(scores: pd.DataFrame, predictors, source: str, protocol: str) -> plt.Figure:
    """MAPE per model family and predictor (mean over seeds, bars show the spread over seeds)."""
    part = scores[(scores["scope"] == "family") & (scores["protocol"] == protocol)
                  & scores["predictor"].isin(predictors)]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * part["key"].nunique() + 2), 4))
    sns.barplot(data=part, x="key", y="MAPE", hue="predictor", hue_order=list(predictors), errorbar="sd", ax=ax)
    ax.set(xlabel="family of the predicted job", ylabel="MAPE (%)",
           title=f"Error per family ({protocol}); data: {source}")
    ax.tick_params(axis="x", rotation=30)
    ax.legend(title="predictor", fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def utilization_scatter(utilization: pd.DataFrame, source: str, protocol: str) -> plt.Figure:
    """Horus: predicted vs label solo utilization, out-of-fold, coloured by device; a note instead of axes when the
    protocol ran no Horus utilization model (its `protocols` option leaves it out)."""
    fig, ax = plt.subplots(figsize=(5, 4.5))
    if utilization.empty:
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"Horus's utilization model did not run under {protocol}\n"
                f"(predictors.util_models.horus.protocols)", ha="center", va="center", wrap=True)
        ax.set_title(f"Horus utilization ({protocol}); data: {source}")
        return fig
    for device, sub in utilization.groupby("device"):
        ax.scatter(sub["util"], sub["pred_util"], s=14, label=device)
    ax.legend(fontsize=8)
    top = max(float(utilization[["util", "pred_util"]].max().max()), 0.05) * 1.1
    ax.plot([0, top], [0, top], color="grey", lw=1, ls="--")
    kinds = ", ".join(sorted(utilization["util_source"].unique()))
    ax.set(xlabel=f"solo utilization ({kinds})", ylabel="Horus predicted",
           title=f"Horus utilization ({protocol}); data: {source}")
    fig.tight_layout()
    return fig


def probe_curves(probe: pd.DataFrame, predictors, source: str, base: str = "lofo") -> plt.Figure:
    """MAPE against the number of probes k, one panel overall and one per device, a line per predictor.

    ``probe``: :func:`coloc.predict.stage.probe_table` of one dataset; the top axis gives the profiling
    seconds of a new job on one device type (k x the probe window).
    """
    part = probe[(probe["base"] == base) & probe["predictor"].isin(predictors)]
    keys = ["all"] + sorted(set(part["key"]) - {"all"})
    fig, axes = plt.subplots(1, len(keys), figsize=(3.6 * len(keys), 3.6), sharey=True, squeeze=False)
    window = float((part["profiling_s"] / part["k"].where(part["k"] > 0)).dropna().iloc[0]) if (part["k"] > 0).any() else 0.0
    for ax, key in zip(axes.flat, keys, strict=True):
        for name in predictors:
            line = part[(part["key"] == key) & (part["predictor"] == name)].sort_values("k")
            if not line.empty:
                ax.errorbar(line["k"], line["MAPE"], yerr=line["MAPE_std"].fillna(0), marker="o", ms=4, capsize=2,
                            label=name)
        ax.set(xlabel="probes per new job type and device (k)", title="all devices" if key == "all" else key,
               xticks=sorted(part["k"].unique()))
        if window:
            top = ax.secondary_xaxis("top", functions=(lambda k: k * window, lambda s: s / window))
            top.set_xlabel(f"profiling seconds per device type (k x {window:g} s)", fontsize=8)
    axes.flat[0].set_ylabel("MAPE (%) on the held-out group's other pairs")
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"Prediction error against probes ({base}-probe-k, mean over seeds; bars: std); data: {source}")
    fig.tight_layout()
    return fig


def probe_seconds(probe: pd.DataFrame, predictors, source: str, base: str = "lofo") -> plt.Figure:
    """Overall MAPE against a new job's profiling seconds on all device types (k x window x device types)."""
    part = probe[(probe["base"] == base) & probe["predictor"].isin(predictors) & (probe["key"] == "all")]
    devices = sorted(set(probe.loc[probe["scope"] == "device", "key"]))
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in predictors:
        line = part[part["predictor"] == name].sort_values("k")
        if not line.empty:
            ax.plot(line["profiling_s"] * len(devices), line["MAPE"], marker="o", label=name)
    ax.set(xlabel=f"profiling GPU seconds of a new job type (k probes x window x {len(devices)} device types)",
           ylabel="MAPE (%), all devices", title=f"Error against profiling time ({base}-probe-k); data: {source}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
