"""Trace-driven cluster simulator whose interference is the measured data."""
from coloc.sim.cluster import Cluster, ClusterSpec
from coloc.sim.engine import SimResult, SimulationError, Simulator, simulate
from coloc.sim.interference import GroundTruth
from coloc.sim.predictions import Predictions

__all__ = ["Cluster", "ClusterSpec", "GroundTruth", "Predictions", "SimResult", "SimulationError",
           "Simulator", "simulate"]
