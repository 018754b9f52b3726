"""coloc.plots: policies ordered by kind; saving writes the file and frees the figure when nothing shows it."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from coloc import plots
from coloc.plots.simulation import policy_order


def test_policies_are_ordered_by_kind_then_by_appearance():
    summary = pd.DataFrame({"policy": ["oracle", "coloc", "fifo", "isacpp", "sjf", "tiresias"],
                            "kind": ["oracle", "predictive", "baseline", "predictive", "oracle", "baseline"]})
    assert policy_order(summary) == ["fifo", "tiresias", "coloc", "isacpp", "oracle", "sjf"]


def test_an_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="'bound'"):
        policy_order(pd.DataFrame({"policy": ["x"], "kind": ["bound"]}))


def test_save_writes_the_figure_and_closes_it_on_a_file_only_backend(tmp_path):
    assert plt.get_backend().lower() == "agg"  # tests/conftest.py
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = plots.save(fig, tmp_path / "sub" / "line.png")
    assert path.stat().st_size > 1000 and fig.number not in plt.get_fignums()


def test_a_protocol_without_horus_utilization_says_so_instead_of_empty_axes():
    from coloc.plots.predictors import utilization_scatter
    empty = pd.DataFrame(columns=["device", "workload", "util", "pred_util", "util_source"])
    fig = utilization_scatter(empty, "Gavel", "lojo")
    ax = fig.axes[0]
    assert not ax.axison and not ax.collections  # no axes, no points
    assert "did not run under lojo" in ax.texts[0].get_text()
    full = pd.DataFrame({"device": ["v100"], "workload": ["w"], "util": [0.5], "pred_util": [0.4], "util_source": ["smi"]})
    assert utilization_scatter(full, "Gavel", "lofo").axes[0].collections  # the points of a protocol that ran it
    plt.close("all")
