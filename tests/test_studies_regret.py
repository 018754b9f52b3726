"""The regret table: (policy - oracle) / (fifo - oracle) per scenario point and protocol, from a hand-made summary."""
import pandas as pd
import pytest

from coloc.studies.regret import regret_report, regret_table


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


def test_the_interval_pairs_the_seeds():
    """Each seed is one job mix, the same for every policy: where every seed's gap to the bound is the same share
    of fifo's, the regret is that share and its paired interval has no width, although the mixes differ."""
    rows = []
    for seed, scale in enumerate((1.0, 1.2, 1.5)):
        rows += [("s", 1.0, "oracle", "lofo", seed, 10.0 * scale), ("s", 1.0, "fifo", "lofo", seed, 14.0 * scale),
                 ("s", 1.0, "coloc", "lofo", seed, 11.0 * scale), ("s", 1.0, "horus", "lofo", seed, 10.0 * scale + seed)]
    table = regret_table(pd.DataFrame(rows, columns=["scenario", "point", "policy", "protocol", "seed", "jct_mean"]))
    coloc = table.set_index("policy").loc["coloc"]
    assert coloc["regret"] == pytest.approx(0.25)
    assert coloc["regret_low"] == pytest.approx(0.25) and coloc["regret_high"] == pytest.approx(0.25)
    horus = table.set_index("policy").loc["horus"]  # gaps 0, 1, 2 against fifo's 4, 4.8, 6: an interval with width
    assert horus["regret"] == pytest.approx(3.0 / 14.8)
    assert horus["regret_low"] < horus["regret"] < horus["regret_high"]


def test_one_seed_gives_no_interval():
    table = regret_table(summary().query("seed == 0"))
    assert table["regret"].notna().all() and table["regret_low"].isna().all() and table["regret_high"].isna().all()


def test_the_report_marks_the_contended_points_and_orders_as_the_summary():
    frame = summary().assign(sweep="load", kind="predictive")
    frame["busy_share"] = frame["point"].map({2.0: 0.5, 4.0: 0.9, 1.0: 0.95})
    table = regret_report(frame)
    assert list(table["point"]) == [2.0, 2.0, 4.0, 4.0] and list(table["protocol"]) == ["lofo", "random5"] * 2
    assert list(table["contended"]) == [False, False, True, True] and (table["sweep"] == "load").all()
    assert table["baseline_busy_share"].tolist() == [0.5, 0.5, 0.9, 0.9]
    empty = regret_report(frame[frame["policy"] != "oracle"])  # a config without the bound: no rows, not an error
    assert empty.empty and {"regret", "contended", "sweep"} <= set(empty.columns)


def test_where_fifo_is_the_bound_the_regret_is_undefined_not_an_error():
    frame = summary()
    frame.loc[(frame["point"] == 2.0) & (frame["policy"] == "fifo"), "jct_mean"] = 1.0  # the oracle's
    table = regret_table(frame).set_index(["point", "protocol"])
    assert table.loc[(2.0, "lofo"), ["regret", "regret_low", "regret_high"]].isna().all()
    assert table.loc[(4.0, "lofo"), "regret"] == pytest.approx(1.5 / 4.0)
