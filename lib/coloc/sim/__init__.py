"""Trace-driven cluster simulator whose interference is the measured data.

Policies act on a SchedulerView (what a real scheduler knows); the Simulator alone holds the
measured co-location numbers (GroundTruth).
"""
from coloc.sim.checks import SimulationError
from coloc.sim.cluster import Cluster, ClusterSpec
from coloc.sim.engine import SimResult, Simulator, simulate
from coloc.sim.interference import GroundTruth
from coloc.sim.predictions import Predictions
from coloc.sim.view import Profile, SchedulerView

__all__ = ["Cluster", "ClusterSpec", "GroundTruth", "Predictions", "Profile", "SchedulerView", "SimResult",
           "SimulationError", "Simulator", "simulate"]
