"""TEMPORARY alias while notebooks move to coloc.plots.profiling (removed before this change lands)."""
from coloc.plots.profiling import *  # noqa: F401,F403
from coloc.plots.profiling import norm_matrix, repeat_spread, slowdown_heatmap  # noqa: F401
