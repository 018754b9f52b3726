"""The probe scenario's figure: mean JCT and its paired change against k, the lines without probes beside."""
import numpy as np
import pandas as pd

from coloc.plots.probe import jct_against_k


def test_the_figure_shows_every_k_and_each_line_without_probes():
    table = pd.DataFrame({
        "policy": ["coloc-probe k=0", "coloc-probe k=2", "coloc-online, no probes", "coloc, every family seen",
                   "oracle (upper bound)"],
        "k": [0.0, 2.0, np.nan, np.nan, np.nan], "load": 1.0, "jct_mean": [7200.0, 6840.0, 6700.0, 6500.0, 6000.0],
        "jct_low": [7000.0, 6600.0, 6600.0, np.nan, 5800.0], "jct_high": [7400.0, 7000.0, 6800.0, np.nan, 6200.0],
        "change_vs_k0": [0.0, -0.05, -0.07, -0.1, -0.2], "change_low": [0.0, -0.07, -0.09, -0.12, -0.25],
        "change_high": [0.0, -0.03, -0.05, -0.08, -0.15], "seeds": 3, "probe_gpu_s": [0.0, 7200.0, 0.0, 0.0, 0.0]})
    fig = jct_against_k(table, "truth: Gavel; test")
    left, right = fig.axes
    (points,) = [line for line in left.get_lines() if line.get_marker() == "o"]
    assert list(points.get_xdata()) == [0.0, 2.0] and list(points.get_ydata()) == [2.0, 1.9]  # hours
    flat = sorted(round(line.get_ydata()[0], 3) for line in left.get_lines() if line.get_marker() != "o"
                  and len(set(line.get_ydata())) == 1 and len(line.get_ydata()) == 2)
    assert {1.861, 1.806, 1.667} <= set(flat)  # coloc-online (6700 s), every family seen (6500 s), oracle (6000 s)
    styles = {round(line.get_ydata()[0], 3): line.get_linestyle() for line in left.get_lines() if line.get_marker() != "o"}
    assert len({styles[1.861], styles[1.806], styles[1.667]}) == 3  # each line without probes drawn its own way
    assert any(text.get_text() == "2.0 GPU-h of probes" for text in left.texts)
    (changes,) = [line for line in right.get_lines() if line.get_marker() == "o"]
    assert list(changes.get_ydata()) == [0.0, -5.0]
    assert fig._suptitle.get_text() == "truth: Gavel; test"
