"""TEMPORARY alias while notebooks move to coloc.plots.predictors (removed before this change lands)."""
from coloc.plots.predictors import *  # noqa: F401,F403
