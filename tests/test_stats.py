"""coloc.stats: Student t interval of a mean over seeds; Fieller's interval of a paired relative change."""

import math

import numpy as np
import pandas as pd
import pytest

from coloc.stats import mean_ci, ratio_ci

T2 = 4.30265273  # Student t, 2 degrees of freedom, 97.5% quantile (tables: 4.303)
T1 = 12.7062047  # 1 degree of freedom (tables: 12.706)


def test_mean_ci_of_three_values_by_hand():
    # mean 2, sample sd 1, n 3: half width = 4.3027 x 1 / sqrt(3) = 2.48414
    mean, low, high = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert low == pytest.approx(2.0 - T2 / math.sqrt(3), abs=1e-8)
    assert high == pytest.approx(2.0 + 2.48413771, abs=1e-8)


def test_a_lower_level_gives_a_narrower_interval_around_the_same_mean():
    wide, narrow = mean_ci([1.0, 2.0, 3.0], 0.95), mean_ci([1.0, 2.0, 3.0], 0.5)
    assert narrow[0] == wide[0] and wide[1] < narrow[1] < narrow[0] < narrow[2] < wide[2]
    # 75% quantile of t with 2 degrees of freedom is 0.8165 (= 1/sqrt(1.5))
    assert narrow[2] - narrow[0] == pytest.approx(1 / math.sqrt(1.5) / math.sqrt(3), rel=1e-9)


def test_one_seed_gives_no_interval_and_equal_seeds_a_zero_width_one():
    mean, low, high = mean_ci([5.0])
    assert mean == 5.0 and math.isnan(low) and math.isnan(high)
    assert mean_ci([4.0, 4.0, 4.0]) == (4.0, 4.0, 4.0)


@pytest.mark.parametrize("values, match", [([], "empty"), ([1.0, float("nan")], r"values\[1\] = nan"),
                                           ([1.0, float("inf")], "finite")])
def test_bad_values_are_refused_by_position(values, match):
    with pytest.raises(ValueError, match=match):
        mean_ci(values)


@pytest.mark.parametrize("level", [0.0, 1.0, 95])
def test_a_level_outside_zero_one_is_refused(level):
    with pytest.raises(ValueError, match="between 0 and 1"):
        mean_ci([1.0, 2.0], level)


def test_ratio_with_a_constant_baseline_is_the_t_interval_of_x_over_it():
    # y = 2 on both seeds: Fieller reduces to mean_ci(x) / 2; mean(x) = 3, sd sqrt(2), n 2: half = 12.706
    change, low, high = ratio_ci([2.0, 4.0], [2.0, 2.0])
    assert change == 0.5
    assert low == pytest.approx((3.0 - T1) / 2 - 1, abs=1e-7)
    assert high == pytest.approx((3.0 + T1) / 2 - 1, abs=1e-7)


def test_ratio_ci_of_paired_seeds_by_hand():
    # x = 12 14 13, y = 10 11 12: a = 13, b = 11, var x = var y = 1, cov = 0.5, n = 3, t^2 = 18.5128
    # qa = b^2 - t^2 var y / n = 121 - 6.17094 = 114.82906; qb = ab - t^2 cov / n = 143 - 3.08547 = 139.91453
    # qc = a^2 - t^2 var x / n = 169 - 6.17094 = 162.82906; sqrt(qb^2 - qa qc) = 29.64064
    # R = (139.91453 -+ 29.64064) / 114.82906 = 0.96033 .. 1.47659
    change, low, high = ratio_ci([12.0, 14.0, 13.0], [10.0, 11.0, 12.0])
    assert change == pytest.approx(13 / 11 - 1, rel=1e-12)
    assert low == pytest.approx(0.96033 - 1, abs=1e-5)
    assert high == pytest.approx(1.47659 - 1, abs=1e-5)


def test_proportional_seeds_give_the_ratio_without_spread_because_the_pairing_counts():
    # every seed has x = 0.8 y: the change is -20% on each; an unpaired interval would be wide
    y = np.array([10.0, 30.0, 20.0, 50.0])
    assert ratio_ci(0.8 * y, y) == pytest.approx((-0.2, -0.2, -0.2), abs=1e-6)
    unpaired = ratio_ci(0.8 * y, y[::-1])
    assert unpaired[0] == pytest.approx(-0.2) and unpaired[2] - unpaired[1] > 0.5


def test_series_are_paired_by_seed_not_by_position():
    x = pd.Series([12.0, 14.0, 13.0], index=[0, 1, 2])
    y = pd.Series([12.0, 10.0, 11.0], index=[2, 0, 1])
    assert ratio_ci(x, y) == pytest.approx(ratio_ci([12.0, 14.0, 13.0], [10.0, 11.0, 12.0]), rel=1e-12)
    with pytest.raises(ValueError, match="same seeds"):
        ratio_ci(x, y.rename(index={2: 3}))


def test_a_baseline_indistinguishable_from_zero_gives_no_interval():
    change, low, high = ratio_ci([1.0, 2.0], [-1.0, 2.0])
    assert change == 2.0 and math.isnan(low) and math.isnan(high)
    assert all(math.isnan(v) for v in ratio_ci([3.0], [2.0])[1:])


def test_ratio_ci_refuses_unpaired_or_zero_baselines():
    with pytest.raises(ValueError, match="x has 2 values and y 3"):
        ratio_ci([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="mean is 0"):
        ratio_ci([1.0, 2.0], [1.0, -1.0])
    with pytest.raises(ValueError, match=r"y\[0\] = nan"):
        ratio_ci([1.0], [float("nan")])


def test_ratio_ci_covers_the_true_change_about_as_often_as_it_says():
    rng = np.random.default_rng(0)
    trials, n, covered = 2000, 5, 0
    for _ in range(trials):
        y = rng.normal(100.0, 10.0, n)
        x = 0.8 * y + rng.normal(0.0, 5.0, n)  # true change of the means: -20%
        _, low, high = ratio_ci(x, y)
        covered += low <= -0.2 <= high
    assert 0.93 <= covered / trials <= 0.97
