"""Choosing a scenario's free numbers by fitting a baseline to what its paper published.

ISACPP's paper lists its 51 testbed jobs' types and epochs, not their run times on a GPU, and not its nodes'
GPU counts. coloc chooses such numbers by simulating the scenario's *baseline* (``volcano``, the scheduler ISACPP
compares itself with) for each candidate and keeping the candidate whose completion times come closest to the
baseline's published ones (`coloc.published`). The fit never looks at ISACPP's or Horus's own numbers, so the
comparison of those with the baseline stays a measurement.

Distance: the published sample's n sorted values are compared with the simulated completion times' quantiles
at the same plotting positions (i + 0.5) / n, as the mean absolute difference of their logarithms (completion
times span two orders of magnitude: a ratio, not a difference, is what matters).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd


def quantile_distance(simulated: Sequence[float], published: Sequence[float]) -> float:
    """Mean |log q_sim(p_i) - log x_(i)| over the published sample's sorted values x_(i), p_i = (i + 0.5) / n."""
    sim = np.asarray(simulated, dtype=float)
    pub = np.sort(np.asarray(published, dtype=float))
    if sim.size == 0 or pub.size == 0 or not (np.all(sim > 0) and np.all(pub > 0)):
        raise ValueError(f"quantile_distance: {sim.size} simulated and {pub.size} published values; expected "
                         f"positive completion times in both")
    positions = (np.arange(pub.size) + 0.5) / pub.size
    return float(np.mean(np.abs(np.log(np.quantile(sim, positions)) - np.log(pub))))


def fit(candidates: Iterable, simulate: Callable[[object], Sequence[float]], published: Sequence[float],
        describe: Callable[[object], dict] = lambda c: {"candidate": c}) -> pd.DataFrame:
    """Every candidate's distance (simulate(candidate): the baseline's completion times over every seed), least
    first, ties in the candidates' order; `describe` gives a candidate's columns."""
    rows = [{**describe(c), "distance": quantile_distance(simulate(c), published), "order": i}
            for i, c in enumerate(candidates)]
    if not rows:
        raise ValueError("calibrate.fit: no candidates")
    return pd.DataFrame(rows).sort_values(["distance", "order"], kind="stable").drop(columns="order").reset_index(
        drop=True)
