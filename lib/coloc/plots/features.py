"""Figures of the features stage (notebook 02_features): the zoo's model-graph features."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from coloc.features import COARSE

SOURCE = "coloc workload zoo, features measured on the meta device (torch FlopCounterMode)"


def _palette(table: pd.DataFrame) -> dict:
    families = sorted(table["family"].unique())
    return dict(zip(families, sns.color_palette("husl", len(families)), strict=True))


def flops_vs_params(table: pd.DataFrame) -> plt.Figure:
    """Per-sample forward FLOPs vs parameters, and step FLOPs vs activation memory per job type."""
    data = table.assign(flops_per_sample=table["flops_fwd"] / table["batch_size"],
                        gflops_step=table["flops_step"] / 1e9,
                        activation_gib=table["activation_bytes"] / 2**30,
                        mparams=table["params"] / 1e6)
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 6.5))
    style = dict(hue="family", style="dataset", palette=_palette(table), s=70)
    sns.scatterplot(data=data, x="mparams", y="flops_per_sample", ax=left, legend=False, **style)
    left.set(xscale="log", yscale="log", xlabel="parameters (millions)",
             ylabel="forward FLOPs per sample", title="Model size vs. compute per sample")
    sns.scatterplot(data=data, x="activation_gib", y="gflops_step", ax=right, **style)
    right.set(xscale="log", yscale="log", xlabel="activation memory kept for backward (GiB)",
              ylabel="training-step GFLOPs (forward + backward)",
              title="Per job type, at its batch size")
    right.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, ncol=2)
    fig.suptitle(f"Feature space of {len(table)} job types; {SOURCE}", fontsize=12)
    fig.tight_layout()
    return fig


def feature_correlations(table: pd.DataFrame) -> plt.Figure:
    """Spearman rank correlation between the numeric features (constant columns dropped)."""
    numeric = table.select_dtypes("number")
    numeric = numeric.loc[:, numeric.nunique() > 1]
    corr = numeric.corr(method="spearman")
    size = 0.38 * len(corr) + 3
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    sns.heatmap(corr, ax=ax, vmin=-1, vmax=1, cmap="vlag", square=True,
                cbar_kws={"label": "Spearman rank correlation"})
    ax.set_title(f"Feature correlations over {len(table)} job types\n{SOURCE}")
    fig.tight_layout()
    return fig


def operator_mix(table: pd.DataFrame) -> plt.Figure:
    """Horus's coarse operator counts (conv, linear, activation, other) per family and dataset."""
    counts = (table.assign(model=table["family"] + " / " + table["dataset"])
              .groupby("model")[[f"n_{c}_coarse" for c in COARSE]].first())
    counts.columns = list(COARSE)
    counts = counts.loc[counts.sum(axis=1).sort_values().index]
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(counts) + 2))
    counts.plot.barh(stacked=True, ax=ax, color=sns.color_palette("Set2", len(COARSE)), width=0.8)
    for y, total in enumerate(counts.sum(axis=1)):
        ax.text(total, y, f" {total}", va="center", fontsize=8)
    ax.set(xlabel="graph nodes in one forward pass", ylabel="")
    ax.set_title(f"Operator mix per model (Horus's four classes; batch-independent)\n{SOURCE}")
    ax.legend(title="operator class", loc="lower right")
    fig.tight_layout()
    return fig
