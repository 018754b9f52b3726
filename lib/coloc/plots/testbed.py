"""Figures of the testbed: real against simulated completion times."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def jct_scatter(jobs: pd.DataFrame, device: str, replay: str, source: str) -> plt.Figure:
    """Each job's simulated against real JCT, one colour per policy, the line of equality and the 0.8x / 1.25x
    band. `jobs`: per_job rows of coloc.testbed.compare with a `policy` column."""
    fig, ax = plt.subplots(figsize=(6, 5.4))
    for policy, rows in jobs.groupby("policy", sort=False):
        ax.scatter(rows["jct_real"], rows["jct_sim"], s=18, alpha=0.75, label=policy)
    top = float(np.nanmax(jobs[["jct_real", "jct_sim"]].to_numpy())) * 1.05
    line = np.array([0.0, top])
    ax.plot(line, line, color="black", lw=1)
    ax.plot(line, 0.8 * line, color="grey", lw=0.8, ls="--")
    ax.plot(line, 1.25 * line, color="grey", lw=0.8, ls="--", label="0.8x, 1.25x")
    ax.set(xlim=(0, top), ylim=(0, top), xlabel="real JCT (s)", ylabel=f"simulated JCT (s), {replay}")
    ax.set_title(f"testbed: real vs simulated JCT per job\ndevice {device}; world: measured (truth: {source}); "
                 "predictions: leave one pair out", fontsize=9)
    ax.legend(fontsize=8)
    return fig
