"""Figures of the claims stage: the claims map (each simulated claim's verdict in every cell of its group)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

VERDICT_COLORS = {"reproduced": "#1b9e77", "same direction, smaller": "#a6d96a", "not reproduced": "#d95f02",
                  "not comparable": "#bdbdbd", "coloc's finding": "#7570b3"}
GROUP_TITLES = {"horus": "Horus on Gavel's V100s (its simulation's shape: Philly arrivals, 64 GPUs, 3 per GPU)",
                "isacpp": "ISACPP's testbed on Gavel's K80/P100/V100",
                "horus-3090": "Horus on Lucid's RTX 3090s (Philly arrivals)",
                "isacpp-3090": "ISACPP's testbed on Lucid's RTX 3090s"}


def claims_map(table: pd.DataFrame) -> plt.Figure:
    """One panel per group: a row per claim, a column per cell (the paper's setting first, coloc's last), coloured by
    the verdict, each cell labelled with coloc's change (%). The verdict legend sits below the panels."""
    shown = table[table["verdict"] != "coloc's finding"]
    groups = list(dict.fromkeys(shown["group"]))
    if not groups:
        raise ValueError("claims map: no claim to show; expected rows of results/claims_map.csv")
    heights = [max(1, shown.loc[shown["group"] == g, "claim"].nunique()) for g in groups]
    width = max(shown.loc[shown["group"] == g, "cell"].nunique() for g in groups)
    fig, axes = plt.subplots(len(groups), 1, figsize=(2.0 + 1.35 * width + 3.2, 1.0 + 0.42 * sum(heights)
                                                      + 0.9 * len(groups)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, group in zip(axes[:, 0], groups, strict=True):
        _panel(ax, shown[shown["group"] == group], GROUP_TITLES.get(group, group))
    handles = [Patch(color=c, label=v) for v, c in VERDICT_COLORS.items() if v != "coloc's finding"]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle("The claims map: each simulated claim's verdict in the paper's setting, one factor moved, and "
                 "coloc's setting\n(value: coloc's change in %, mean over seeds at the scenario's headline point)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    return fig


def _panel(ax, part: pd.DataFrame, title: str) -> None:
    claims = list(dict.fromkeys(part["claim"]))
    cells = list(dict.fromkeys(part["cell"]))
    codes = {v: i for i, v in enumerate(VERDICT_COLORS)}
    grid = np.full((len(claims), len(cells)), np.nan)
    for row in part.itertuples():
        i, j = claims.index(row.claim), cells.index(row.cell)
        grid[i, j] = codes[row.verdict]
        value = row.coloc_value
        label = "n/a" if not math.isfinite(value) else f"{value:+.0f}%"
        ax.text(j, i, label, ha="center", va="center", fontsize=7, color="black")
    cmap = plt.matplotlib.colors.ListedColormap(list(VERDICT_COLORS.values()))
    ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=-0.5, vmax=len(VERDICT_COLORS) - 0.5, aspect="auto")
    ax.set_xticks(range(len(cells)), [c.replace("=", "=\n") for c in cells], fontsize=7)
    ax.set_yticks(range(len(claims)), claims, fontsize=7)
    ax.set_xticks(np.arange(-0.5, len(cells)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(claims)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    ax.set_title(title, fontsize=9, loc="left")
