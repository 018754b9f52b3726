"""Figure of the probe scenario : mean JCT against the probes k of every new job.

From :func:`coloc.studies.probing.jct_against_k`'s table, two panels: (left) coloc-probe's mean JCT over seeds
at each k with its 95% interval (Student t), the GPU time its probes cost written at each point, next to
coloc-online without probes (dash-dot: it learns from the pairs it runs), coloc with every family seen (dotted)
and the oracle (an upper bound, dashed); (right) the same runs as the
paired change of mean JCT against coloc without probes (k = 0) over the same seeds, with Fieller's 95%
interval: the seeds' job mixes differ a lot, the pairing shows what the probes change.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

HOURS = 3600.0
STYLES = {"oracle": ("--", "black"), "coloc-online": ("-.", "tab:green"), "other": (":", "grey")}


def _style(policy: str) -> tuple[str, str]:
    """Line style and colour of a line without probes, by the policy its label starts with."""
    name = next((key for key in STYLES if policy.startswith(key)), "other")
    return STYLES[name]


def _errors(frame: pd.DataFrame, mean: str, low: str, high: str, scale: float) -> list[np.ndarray]:
    return [(frame[mean] - frame[low]).fillna(0).to_numpy() * scale, (frame[high] - frame[mean]).fillna(0).to_numpy() * scale]


def jct_against_k(table: pd.DataFrame, title: str) -> plt.Figure:
    """Mean JCT (h) and its paired change against k = 0 (%), against k; the lines without probes beside."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 3.9))
    probes = table[table["k"].notna()].sort_values("k")
    others = table[table["k"].isna()]
    line = "coloc-probe (k probes per new job; k = 0: coloc without probes)"
    left.errorbar(probes["k"], probes["jct_mean"] / HOURS, yerr=_errors(probes, "jct_mean", "jct_low", "jct_high",
                                                                        1 / HOURS), marker="o", capsize=3, label=line)
    last = probes["k"].max()
    for row in probes.itertuples():  # the last k's label below its point, to its left: inside the panel
        left.annotate(f"{row.probe_gpu_s / HOURS:.1f} GPU-h of probes", (row.k, row.jct_mean / HOURS),
                      textcoords="offset points", xytext=(-4, -12) if row.k == last else (4, 6), fontsize=7,
                      ha="right" if row.k == last else "left")
    right.errorbar(probes["k"], 100 * probes["change_vs_k0"], yerr=_errors(probes, "change_vs_k0", "change_low",
                                                                          "change_high", 100), marker="o", capsize=3)
    for row in others.itertuples():
        style, color = _style(row.policy)
        left.axhline(row.jct_mean / HOURS, linestyle=style, color=color, label=row.policy)
        right.axhline(100 * row.change_vs_k0, linestyle=style, color=color)
    right.axhline(0.0, color="lightgrey", linewidth=0.8)
    for ax in (left, right):
        ax.set_xticks(sorted(probes["k"].unique()))
        ax.set_xlabel("probes per job of a new family (k)")
    left.set_ylabel("mean JCT (h), 95% CI over seeds")
    right.set_ylabel("mean JCT vs k = 0 (%), paired, 95% CI")
    fig.legend(*left.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=7,
               frameon=False)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    return fig
