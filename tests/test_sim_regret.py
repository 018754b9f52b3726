"""The regret table: (policy - oracle) / (fifo - oracle) per scenario point and protocol, from a hand-made summary."""
import pandas as pd
import pytest

from coloc.sim.experiment import regret_table


def summary():
    rows = []
    for point, oracle, fifo in ((2.0, 1.0, 3.0), (4.0, 2.0, 6.0)):
        for seed in (0, 1):
            rows += [("s", point, "oracle", "lofo", seed, oracle), ("s", point, "fifo", "lofo", seed, fifo)]
            rows += [("s", point, "coloc", "lofo", seed, oracle + 1.0 + seed),      # mean oracle + 1.5
                     ("s", point, "coloc", "random5", seed, oracle + 0.5)]
    rows.append(("t", 1.0, "coloc", "lofo", 0, 9.0))  # a point with no bound: left out
    return pd.DataFrame(rows, columns=["scenario", "point", "policy", "protocol", "seed", "jct_mean"])


def test_regret_by_hand():
    table = regret_table(summary()).set_index(["point", "protocol"])
    assert list(table["policy"].unique()) == ["coloc"] and set(table.index.get_level_values(0)) == {2.0, 4.0}
    assert table.loc[(2.0, "lofo"), "regret"] == pytest.approx(1.5 / 2.0)
    assert table.loc[(4.0, "lofo"), "regret"] == pytest.approx(1.5 / 4.0)
    assert table.loc[(2.0, "random5"), "regret"] == pytest.approx(0.5 / 2.0)
    assert table.loc[(4.0, "random5"), "seeds"] == 2 and table.loc[(4.0, "random5"), "bound_mean"] == 2.0


def test_regret_needs_the_bound_and_the_baseline():
    with pytest.raises(ValueError, match="no runs of 'oracle'"):
        regret_table(summary().query("policy != 'oracle'"))
