"""ORACLE: coloc's packing rule on the measured pairs, an UPPER BOUND, not a deployable policy.

The one policy given the simulator's ground truth, and only through its constructor:
`policies.get("oracle", truth=truth)` (coloc.studies.experiment.run passes it because the policy
declares the need "truth"). It reads the measured pairs as if they were predictions with no
error and no spread.
"""
from __future__ import annotations

from reference_sim.base import register
from reference_sim.coloc import JctPack
from reference_sim.predictions import Predictions


@register("oracle")
class Oracle(JctPack):
    """ORACLE upper bound: coloc's rule on the measured pairs (no prediction error, no spread)."""

    kind = "oracle"
    needs = ("truth",)

    def __init__(self, truth, **params):
        super().__init__(**params)
        self._measured = Predictions.from_truth(truth)

    def _predictions(self, view) -> Predictions:
        return self._measured
