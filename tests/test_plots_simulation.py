"""coloc.plots.simulation: each scenario figure and the scheduling-delay figure is written, shows what its
numbers say (means and 95% intervals over seeds, policies by kind, oracles marked) and keeps its legend off the data."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from coloc import plots
from coloc.plots import simulation as ps
from coloc.stats import mean_ci

POLICIES = (("oracle", "oracle"), ("coloc", "predictive"), ("fifo", "baseline"))  # not in kind order on purpose


def summary_table() -> pd.DataFrame:
    """Two seeds x two sweep points x three policies; fifo's JCT at point 2 is 1 h and 3 h over the seeds."""
    rows = []
    for policy, kind in POLICIES:
        for point in (1.0, 2.0):
            for seed in (0, 1):
                jct = 3600.0 * (point + 2 * seed) * (0.5 if kind == "oracle" else 1.0)
                rows.append({"scenario": "s", "policy": policy, "kind": kind, "seed": seed, "sweep": "load",
                             "point": point, "trace": "poisson", "cluster": "k80:2,v100:2", "gpus": 4,
                             "protocol": "lofo", "predictor_norm": "egat", "predictor_util": "horus",
                             "jct_mean": jct, "makespan": 2 * jct, "queue_delay_mean": jct / 4,
                             "gpu_util_mean": 0.3 * point, "busy_share": 0.4 * point + 0.1 * seed})
    return pd.DataFrame(rows)


def jobs_table() -> pd.DataFrame:
    return pd.DataFrame([{"scenario": "s", "policy": p, "seed": seed, "point": point, "jct": 600.0 * (1 + i + seed)}
                         for p, _ in POLICIES for seed in (0, 1) for point in (1.0, 2.0) for i in range(5)])


def utilization_table() -> pd.DataFrame:
    rows = []
    for p, _ in POLICIES:
        for seed, bins in ((0, 3), (1, 2)):  # seed 1's run ends one bin earlier
            for b in range(bins):
                rows.append({"scenario": "s", "policy": p, "seed": seed, "point": 2.0, "time": 3600.0 * b,
                             "gpu_util": 0.8, "effective_util": 0.9})
    return pd.DataFrame(rows)


def legend_is_off_the_data(fig) -> bool:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return all(not legend.get_window_extent(renderer).overlaps(box) for legend in legends for box in panels)


def test_each_scenario_figure_is_written_with_its_legend_beside_the_panels(tmp_path):
    figures = ps.scenario_figures(summary_table(), jobs_table(), utilization_table(), "s", 2.0)
    assert tuple(figures) == ps.SCENARIO_FIGURES
    for name, fig in figures.items():
        assert legend_is_off_the_data(fig), name
        path = plots.save(fig, tmp_path / "s" / f"{name}.png", dpi=40)
        assert path.stat().st_size > 3000 and fig.number not in plt.get_fignums()


def test_policy_bars_are_means_with_95_percent_intervals_in_kind_order_oracle_marked():
    rows = ps.at_point(summary_table(), "s", 2.0)
    fig = ps.policy_bars(rows, metrics=("jct_mean", "gpu_util_mean"))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fifo", "coloc", "oracle (oracle, upper bound)"]
    fifo_bar = ax.patches[0]
    assert fifo_bar.get_width() == pytest.approx(3.0)  # fifo: 2 h and 4 h over the seeds at point 2
    _, low, high = mean_ci([2.0, 4.0])  # t(1 df) = 12.706: 3 +- 12.706 h
    (whisker,) = [c for c in ax.collections if len(c.get_segments()) == 3]
    assert whisker.get_segments()[0][:, 0] == pytest.approx([low, high])
    assert [bool(p.get_hatch()) for p in ax.patches] == [False, False, True]
    plt.close(fig)


def test_the_sweep_shows_fifos_busy_share_against_the_contended_line():
    fig = ps.sweep(summary_table())
    busy = fig.axes[-1]
    assert busy.get_title().startswith("fifo: GPU busy share")
    means = [line for line in busy.get_lines() if line.get_label() == "fifo"][0]
    assert list(means.get_ydata()) == pytest.approx([0.45, 0.85])  # mean over seeds of 0.4 x point + 0.1 x seed
    assert any(list(line.get_ydata()) == [ps.CONTENDED, ps.CONTENDED] for line in busy.get_lines())
    assert [t.get_text() for t in fig.legends[0].get_texts()][:3] == ["fifo", "coloc", "oracle (oracle, upper bound)"]
    plt.close(fig)


def test_the_sweep_leaves_out_runs_whose_busy_share_is_undefined():
    """Every job starting at once leaves an empty window (busy_share NaN): such runs are left out, not an error."""
    table = summary_table()
    table.loc[(table["policy"] == "fifo") & (table["point"] == 1.0), "busy_share"] = np.nan
    table.loc[(table["policy"] == "fifo") & (table["point"] == 2.0) & (table["seed"] == 0), "busy_share"] = np.nan
    fig = ps.sweep(table)
    means = [line for line in fig.axes[-1].get_lines() if line.get_label() == "fifo"][0]
    assert list(means.get_xdata()) == [2.0] and list(means.get_ydata()) == pytest.approx([0.9])  # seed 1 only
    plt.close(fig)


def test_utilization_counts_a_finished_run_as_idle_in_the_mean_over_seeds():
    curves = ps._mean_over_seeds(utilization_table())
    fifo = curves[curves["policy"] == "fifo"]
    assert list(fifo["gpu_util"]) == pytest.approx([0.8, 0.8, 0.4])  # seed 1 ended: (0.8 + 0) / 2


def test_a_point_or_scenario_not_run_is_refused_naming_those_there_are():
    with pytest.raises(ValueError, match=r"no rows at load = 3.0; have \[1.0, 2.0\]"):
        ps.at_point(summary_table(), "s", 3.0)
    with pytest.raises(ValueError, match=r"no rows of scenario 'x'; have \['s'\]"):
        ps.at_point(summary_table(), "x", 1.0)


def test_scheduling_delay_is_log_log_with_the_papers_values_marked(tmp_path):
    table = pd.DataFrame([{"policy": p, "kind": k, "queued_jobs": n, "cluster": c, "gpus": g, "seed": s,
                           "decision_s": 1e-4 * n * (1 + s), "placed": 1, "busy_gpus": 1}
                          for p, k in (("isacpp", "predictive"), ("fifo", "baseline"))
                          for c, g in (("v100:8", 8), ("v100:64", 64)) for n in (20, 100, 1000) for s in (0, 1)])
    fig = ps.scheduling_delay(table, {"isacpp": 35.4, "fifo": 9.3}, {"fifo": "Volcano"})
    assert len(fig.axes) == 2 and all(ax.get_xscale() == ax.get_yscale() == "log" for ax in fig.axes)
    stars = [line for line in fig.axes[0].get_lines() if line.get_marker() == "*"]
    assert sorted((line.get_xdata()[0], line.get_ydata()[0]) for line in stars) == [(100, 9.3), (100, 35.4)]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["fifo", "isacpp"] and "paper: Volcano 9.3 s at 100 jobs" in labels
    fifo = [line for line in fig.axes[0].get_lines() if line.get_label() == "fifo"][0]
    assert list(fifo.get_ydata()) == pytest.approx([1e-4 * n * 1.5 for n in (20, 100, 1000)])
    assert legend_is_off_the_data(fig)
    assert plots.save(fig, tmp_path / "delay.png", dpi=40).stat().st_size > 5000


def test_one_seed_draws_means_without_intervals():
    rows = ps.at_point(summary_table(), "s", 2.0)
    one = rows[rows["seed"] == 0]
    fig = ps.policy_bars(one, metrics=("jct_mean",))
    assert not any(np.isnan(seg).any() for c in fig.axes[0].collections for seg in c.get_segments())
    assert math.isnan(mean_ci(one.loc[one["policy"] == "fifo", "jct_mean"])[1])
    plt.close(fig)


def test_titles_name_the_scenario_trace_cluster_point_seeds_and_protocol():
    rows = summary_table()
    title = ps.scenario_title(ps.at_point(rows, "s", 2.0), "what", 2.0)
    assert title.startswith("s: what\npoisson trace, cluster k80:2,v100:2 (4 GPUs), load = 2, 2 seeds;")
    assert "protocol lofo; pairs egat, utilization horus" in title
    swept = rows.assign(cluster=rows["point"].map({1.0: "v100:8", 2.0: "v100:16"}))
    assert "clusters v100:8; v100:16" in ps.scenario_title(swept, "sweep")


def test_on_lucids_data_the_figures_show_the_measured_utilization_and_name_the_3090():
    summary = summary_table().assign(dataset="lucid", cluster="rtx3090:4",
                                     measured_util_mean=lambda f: 0.2 * f["point"])
    series = utilization_table().assign(measured_util=0.35)
    rows = ps.at_point(summary, "s", 2.0)
    assert ps.bar_metrics(rows)[-1] == "measured_util_mean"
    assert ps.bar_metrics(summary_table()) == list(ps.BAR_METRICS)  # Gavel's data: no measured panel
    assert "truth: Lucid's RTX 3090 measured pairs" in ps.scenario_title(rows, "what", 2.0)
    fig = ps.utilization_over_time(ps.at_point(series, "s", 2.0), ps.policy_order(rows),
                                   dict(zip(rows["policy"], rows["kind"], strict=True)))
    dotted = [line for ax in fig.axes for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert len(dotted) == len(POLICIES)  # one measured line per policy's panel
    assert dotted[0].get_ydata()[0] == pytest.approx(0.35)  # both seeds measured 0.35 in the first bin
    assert legend_is_off_the_data(fig)
    plt.close(fig)
    gavel = ps.utilization_over_time(ps.at_point(utilization_table().assign(measured_util=math.nan), "s", 2.0),
                                     ps.policy_order(rows), dict(zip(rows["policy"], rows["kind"], strict=True)))
    assert not [line for ax in gavel.axes for line in ax.get_lines() if line.get_linestyle() == ":"]
    plt.close(gavel)


def regret_rows():
    rows = []
    for scenario, points, busy in (("a", (1.0, 2.0), (0.5, 0.9)), ("b", (4.0,), (0.95,))):
        for point, share in zip(points, busy, strict=True):
            for policy, kind, value in (("coloc", "predictive", 0.2), ("coloc@random5", "predictive", 0.1),
                                        ("gandiva", "baseline", 3.5), ("sjf", "oracle", -0.2)):
                rows.append({"scenario": scenario, "sweep": "load", "point": point, "policy": policy, "protocol": "lofo",
                             "kind": kind, "regret": value, "regret_low": value - 0.1, "regret_high": value + 0.1,
                             "baseline_busy_share": share, "contended": share >= 0.8})
    return pd.DataFrame(rows)


def test_the_regret_figure_has_a_panel_per_scenario_the_deployable_policies_and_the_bounds_marked():
    fig = ps.regret(regret_rows(), title="truth: Gavel; test")
    a, b = fig.axes[:2]
    assert [t.get_text() for t in a.get_yticklabels()] == ["gandiva", "coloc", "coloc@random5"]  # baselines first; no oracle kind
    assert a.get_title(loc="left") == "a" and b.get_title(loc="left") == "b"
    bounds = {line.get_xdata()[0] for line in a.get_lines() if line.get_linestyle() in ("--", ":")}
    assert bounds == {0.0, 1.0}
    labels = [t.get_text() for t in a.get_legend().get_texts()]
    assert labels == ["0: oracle (upper bound)", "1: fifo", "1", "2 (contended)"]
    assert [t.get_text() for t in a.texts] == ["3.5", "3.5"]  # beyond the axis: at its edge, a value per point
    assert a.get_xlim()[1] < 3.5
    hollow = [line for line in a.get_lines() if line.get_marker() == "o" and line.get_markerfacecolor() == "white"]
    assert len(hollow) == 1  # the uncontended point


def test_the_regret_figure_says_when_no_point_has_the_bound_and_fifo():
    fig = ps.regret(regret_rows().iloc[:0], title="t")
    assert "regret is undefined" in fig.axes[0].texts[0].get_text()


def test_titles_name_the_interference_world_and_legends_the_papers_assumption():
    rows = ps.at_point(summary_table(), "s", 2.0)
    assert "truth: Gavel measured pairs;" in ps.scenario_title(rows, "what", 2.0)  # the measured world
    assert "truth: world flat:0.2 (Gavel's memory fit);" in ps.scenario_title(rows.assign(world="flat:0.2"), "w", 2.0)
    both = pd.concat([rows.assign(world="measured"), rows.assign(world="none")])
    assert "truth: Gavel measured pairs; world none (Gavel's memory fit)" in ps.scenario_title(both, "w", 2.0)
    assert ps.label("isacpp@profiled-pairs", "predictive") == "isacpp@profiled-pairs (paper's assumption: measured pairs)"
    assert ps.label("oracle", "oracle") == "oracle (oracle, upper bound)" and ps.label("isacpp", "predictive") == "isacpp"


def test_an_interval_that_misses_its_value_by_a_rounding_error_draws_no_negative_bar():
    """Another CPU's last bits put a zero-width interval a hair beside its value: the bar is 0 there, not an error
    (matplotlib refuses a negative error bar; a default run with numpy's AVX-512 paths off failed on it)."""
    rows = regret_rows()
    rows["regret_low"] = rows["regret"] + 1e-15
    rows["regret_high"] = rows["regret"] + 1e-15
    fig = ps.regret(rows, title="t")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["gandiva", "coloc", "coloc@random5"]
    plt.close(fig)
