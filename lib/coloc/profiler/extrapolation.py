"""How wrong the product-of-pairs rule is for sets of 3 or more jobs, measured.

The simulator's truth for a GPU holding 3 or more jobs is an extrapolation
(:meth:`coloc.sim.interference.GroundTruth.norm`): a job's normalized throughput is the product of its
pairwise normalized throughputs with each co-runner. Here both sides come from one profiling run: the
``sets`` table's measured norm of each job of a set, and the product of that job's norms in the
``pairs`` table, looked up by the simulator's rule (:mod:`coloc.pairs`: a pair answers both orders, a
self-pair gives the mean of its two instances). ``rel_error`` = (product - measured) / measured:
positive where the product promises more throughput than the set gave.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coloc.pairs import directed, keyed_mean

COLUMNS = ["device", "set", "slot", "workload", "partners", "measured", "product", "pair_norms", "rel_error",
           "abs_rel_error", "measured_std", "repeats"]


def extrapolation_error(pairs: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """Per job of each measured set: its measured norm, the product of its pair norms, the relative error.

    ``pair_norms``: the factors, in the order of ``partners`` (text, e.g. ``0.61 x 0.55``). A factor
    whose pair was not measured, or did not fit, makes the product NaN; so does a set that did not fit
    (its measured norm is NaN).
    """
    missing = [c for c in ("device", "set", "slot", "workload", "partners", "norm") if c not in sets.columns]
    missing += [f"pairs.{c}" for c in ("device", "workload_a", "workload_b", "norm_a", "norm_b", "feasible")
                if c not in pairs.columns]
    if missing:
        raise KeyError(f"extrapolation_error: missing columns {missing} (the sets and pairs tables of the profiler)")
    if sets.empty:
        return pd.DataFrame(columns=COLUMNS)
    fits = pairs[pairs["feasible"].astype(bool)] if len(pairs) else pairs
    norm = keyed_mean(directed(fits), "norm") if len(fits) else {}
    rows = []
    for row in sets.itertuples(index=False):
        partners = row.partners.split("+")
        factors = [norm.get((row.device, row.workload, other), np.nan) for other in partners]
        product = float(np.prod(factors))
        measured = float(row.norm)
        error = (product - measured) / measured if measured > 0 else np.nan
        rows.append({"device": row.device, "set": row.set, "slot": row.slot, "workload": row.workload,
                     "partners": row.partners, "measured": measured, "product": product,
                     "pair_norms": " x ".join(f"{f:.3f}" for f in factors), "rel_error": error,
                     "abs_rel_error": abs(error), "measured_std": getattr(row, "norm_std", np.nan),
                     "repeats": getattr(row, "repeats", np.nan)})
    return pd.DataFrame(rows, columns=COLUMNS)


def extrapolation_summary(errors: pd.DataFrame) -> dict:
    """Headline figures of :func:`extrapolation_error`'s table over the jobs with both values."""
    both = errors.dropna(subset=["rel_error"])
    return {
        "sets": int(errors["set"].nunique()),
        "jobs": len(errors),
        "jobs_compared": len(both),
        "mean_abs_rel_error": float(both["abs_rel_error"].mean()) if len(both) else np.nan,
        "median_abs_rel_error": float(both["abs_rel_error"].median()) if len(both) else np.nan,
        "max_abs_rel_error": float(both["abs_rel_error"].max()) if len(both) else np.nan,
        "mean_rel_error": float(both["rel_error"].mean()) if len(both) else np.nan,
        "product_too_high": int((both["rel_error"] > 0).sum()),
    }
