"""95% intervals over seeds: a mean, and a paired relative change of policy X against baseline Y.

Seeds are independent replications (job mixes), so a metric's mean over seeds gets a Student t interval.
A comparison "X vs Y" runs both policies on the same seeds; `ratio_ci` estimates the relative change of
the means, mean(X) / mean(Y) - 1 (how the papers state their gains, e.g. -16.1% mean completion time),
with Fieller's interval for a ratio of paired means, which uses the pairing (the covariance of X and Y
over seeds) and needs no large-sample approximation beyond the t distribution.
An interval that cannot be given (one seed, or a baseline mean not distinguishable from zero, where
Fieller's set is unbounded) is NaN, never a made-up width.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as _scipy_stats

__all__ = ["mean_ci", "positive_ci", "ratio_ci"]


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the mean over seeds and its Student t interval at `level`.

    One value gives (value, NaN, NaN). Values must be finite; an empty input is an error.
    """
    x = _finite("mean_ci", "values", values)
    _check_level(level)
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    half = _t(level, len(x)) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return mean, mean - half, mean + half


def positive_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """(geometric mean, low, high) of a positive quantity over seeds (a time, an error): the Student t interval of
    the mean of the logs, taken back, so that no interval of a positive quantity reaches below 0 (a time's spread
    over seeds is multiplicative: one slow seed doubles it, it cannot make it negative).

    One value gives (value, NaN, NaN). Values must be finite and > 0."""
    x = _finite("positive_ci", "values", values)
    if (x <= 0).any():
        raise ValueError(f"positive_ci: values must be > 0; got {x[x <= 0][:3].tolist()}")
    if len(x) < 2:
        return float(x[0]), math.nan, math.nan
    center, low, high = mean_ci(np.log(x), level)
    return math.exp(center), math.exp(low), math.exp(high)


def ratio_ci(x, y, level: float = 0.95) -> tuple[float, float, float]:
    """(change, low, high): mean(x) / mean(y) - 1 over paired seeds, with Fieller's interval at `level`.

    `x` (the policy) and `y` (the baseline) hold one value per seed, the same seeds in both: as
    sequences of equal length in the same seed order, or as pandas Series indexed by seed (aligned by
    index; both must have the same seeds). Negative values are reductions (-0.161 = 16.1% lower).
    Fewer than two seeds, or a baseline mean within its own t interval of zero, give a NaN interval.
    """
    x, y = _paired(x, y)
    _check_level(level)
    a, b = float(x.mean()), float(y.mean())
    if b == 0.0:
        raise ValueError(f"ratio_ci: the baseline's mean is 0 over {len(y)} seeds; a relative change is undefined")
    change = a / b - 1.0
    n = len(x)
    if n < 2:
        return change, math.nan, math.nan
    t2 = _t(level, n) ** 2
    s_xx, s_yy = float(x.var(ddof=1)) / n, float(y.var(ddof=1)) / n
    s_xy = float(np.cov(x, y, ddof=1)[0, 1]) / n
    # {R : (a - R b)^2 <= t^2 (s_xx - 2 R s_xy + R^2 s_yy)}, a quadratic in R
    qa = b * b - t2 * s_yy
    qb = a * b - t2 * s_xy
    qc = a * a - t2 * s_xx
    if qa <= 0.0:  # the set is unbounded
        return change, math.nan, math.nan
    root = math.sqrt(max(qb * qb - qa * qc, 0.0))  # >= 0 when qa > 0 (R = a/b lies inside); clip rounding
    return change, (qb - root) / qa - 1.0, (qb + root) / qa - 1.0


def _t(level: float, n: int) -> float:
    return float(_scipy_stats.t.ppf(0.5 + level / 2.0, n - 1))


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level {level!r}: expected a confidence level strictly between 0 and 1, e.g. 0.95")


def _finite(func: str, name: str, values) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if len(x) == 0:
        raise ValueError(f"{func}: {name} is empty; expected one value per seed")
    bad = np.flatnonzero(~np.isfinite(x))
    if len(bad):
        raise ValueError(f"{func}: {name}[{int(bad[0])}] = {x[bad[0]]}; expected finite values "
                         f"({len(bad)} of {len(x)} are not)")
    return x


def _paired(x, y) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(x, pd.Series) and isinstance(y, pd.Series):
        if set(x.index) != set(y.index) or not x.index.is_unique or not y.index.is_unique:
            raise ValueError(f"ratio_ci: x and y must hold the same seeds once each; x has "
                             f"{sorted(x.index)}, y has {sorted(y.index)}")
        y = y.loc[x.index]
    x, y = _finite("ratio_ci", "x", x), _finite("ratio_ci", "y", y)
    if len(x) != len(y):
        raise ValueError(f"ratio_ci: x has {len(x)} values and y {len(y)}; expected one pair per seed")
    return x, y
