"""Regret: how far each policy's mean JCT is from coloc's bound, measured against fifo, per scenario point.

regret = (policy's mean - bound's mean) / (baseline's mean - bound's mean), means over seeds of a metric
(mean JCT): 0 is as good as the bound (`oracle`: coloc's rule on the measured pairs, an upper bound, not a
deployable policy), 1 no better than the baseline (`fifo`), below 0 better than the bound (the bound is coloc's
rule on the truth, not the best schedule), above 1 worse than fifo. Where fifo is hardly slower than the bound
(an uncontended point) the ratio is large and noisy: :func:`regret_report` adds fifo's busy share, so that a
reader (and the figure) sees which points are contended (busy share >= `CONTENDED`). Tables only (pandas and
coloc.stats): the figures rule computes it from the gathered summary.
"""
from __future__ import annotations

import math

import pandas as pd

from coloc.stats import ratio_ci

CONTENDED = 0.8  # fifo busy share from which a point counts as contended (queues form)
REPORT_COLUMNS = ["scenario", "point", "policy", "protocol", "kind", "seeds", "mean", "bound_mean", "baseline_mean",
                  "regret", "regret_low", "regret_high", "baseline_busy_share", "contended"]


def regret_table(summary: pd.DataFrame, metric: str = "jct_mean", bound: str = "oracle", baseline: str = "fifo",
                 keys=("scenario", "point")) -> pd.DataFrame:
    """Regret of every policy against the upper bound, per scenario point and prediction protocol:
    (mean - bound's mean) / (baseline's mean - bound's mean), means over seeds of `metric`. 0: as good as the
    bound (`oracle`, coloc's rule on the measured pairs); 1: no better than the baseline (`fifo`). The bound and
    baseline read no predictions, so their runs under any protocol are pooled (a seed's runs averaged). A point
    lacking either is left out; where the baseline's mean equals the bound's (nothing to gain) the regret is NaN.
    Its 95% interval is Fieller's for the ratio of the paired means of (policy - bound) and (baseline - bound)
    over the seeds all three ran (coloc.stats.ratio_ci; each seed is one job mix, the same for every policy);
    NaN with fewer than two seeds or a baseline not distinguishable from the bound.
    Columns: the keys, `policy`, `protocol`, `kind` (where the summary has it), `seeds`, `mean`, `bound_mean`,
    `baseline_mean`, `regret`, `regret_low`, `regret_high`."""
    keys = list(keys)
    missing = [c for c in (*keys, "policy", "protocol", "seed", metric) if c not in summary.columns]
    if missing:
        raise ValueError(f"regret_table: the summary lacks columns {missing}; expected a sim summary table")
    per_seed = {}
    for name in (bound, baseline):
        rows = summary[summary["policy"] == name]
        if rows.empty:
            raise ValueError(f"regret_table: no runs of {name!r}; have {sorted(summary['policy'].unique())}")
        per_seed[name] = rows.groupby([*keys, "seed"])[metric].mean()
    others = summary[~summary["policy"].isin([bound, baseline])]
    rows = []
    for group, part in others.groupby([*keys, "policy", "protocol"], sort=True):
        at = group[:len(keys)]
        ref = {name: _at(values, at) for name, values in per_seed.items()}
        if ref[bound].empty or ref[baseline].empty:
            continue
        row = dict(zip([*keys, "policy", "protocol"], group, strict=True))
        if "kind" in part.columns:
            row["kind"] = part["kind"].iloc[0]
        mine = part.groupby("seed")[metric].mean()
        row.update(seeds=int(part["seed"].nunique()), mean=float(mine.mean()), bound_mean=float(ref[bound].mean()),
                   baseline_mean=float(ref[baseline].mean()))
        gap = row["baseline_mean"] - row["bound_mean"]
        row["regret"] = (row["mean"] - row["bound_mean"]) / gap if gap != 0.0 else math.nan  # fifo as good as the bound
        row["regret_low"], row["regret_high"] = _regret_interval(mine, ref[bound], ref[baseline])
        rows.append(row)
    columns = [*keys, "policy", "protocol", *(["kind"] if "kind" in summary.columns else []), "seeds", "mean",
               "bound_mean", "baseline_mean", "regret", "regret_low", "regret_high"]
    return pd.DataFrame(rows, columns=columns)


def _at(per_seed: pd.Series, at: tuple) -> pd.Series:
    """The per-seed values of one scenario point (index: seed); empty if the point has none."""
    try:
        return per_seed.xs(at, level=list(range(len(at))))
    except KeyError:
        return per_seed.iloc[:0]


def _regret_interval(mine: pd.Series, bound: pd.Series, baseline: pd.Series) -> tuple[float, float]:
    """Fieller's 95% interval of mean(mine - bound) / mean(baseline - bound) over the seeds all three ran."""
    seeds = sorted(set(mine.index) & set(bound.index) & set(baseline.index))
    if len(seeds) < 2:
        return math.nan, math.nan
    gap = baseline.loc[seeds] - bound.loc[seeds]
    if gap.mean() == 0.0:
        return math.nan, math.nan
    _, low, high = ratio_ci(mine.loc[seeds] - bound.loc[seeds], gap)
    return low + 1.0, high + 1.0


def regret_report(summary: pd.DataFrame, metric: str = "jct_mean", bound: str = "oracle",
                  baseline: str = "fifo") -> pd.DataFrame:
    """:func:`regret_table` per scenario point, with the swept key (`sweep`), the baseline's mean busy share there
    (`baseline_busy_share`: busy GPU time from the first arrival to the last start) and `contended` (it is >=
    CONTENDED), ordered by scenario (as in the summary), point, then the policies as they first appear. A
    summary without a run of the bound or of the baseline gives no rows (a config may leave them out)."""
    if not {bound, baseline} <= set(summary["policy"]):
        return pd.DataFrame(columns=[*REPORT_COLUMNS[:1], "sweep", *REPORT_COLUMNS[1:]])
    table = regret_table(summary, metric, bound, baseline)
    base = summary[summary["policy"] == baseline]
    busy = base.groupby(["scenario", "point"])["busy_share"].mean().rename("baseline_busy_share")
    sweeps = summary.drop_duplicates("scenario").set_index("scenario")["sweep"]
    table = table.join(busy, on=["scenario", "point"])
    table.insert(1, "sweep", table["scenario"].map(sweeps))
    table["contended"] = table["baseline_busy_share"] >= CONTENDED
    scenarios = {s: i for i, s in enumerate(dict.fromkeys(summary["scenario"]))}
    policies = {p: i for i, p in enumerate(dict.fromkeys(summary["policy"]))}
    order = table.assign(_s=table["scenario"].map(scenarios), _p=table["policy"].map(policies))
    return order.sort_values(["_s", "point", "_p", "protocol"]).drop(columns=["_s", "_p"]).reset_index(drop=True)
