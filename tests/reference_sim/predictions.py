"""REFERENCE lookups of predictions, kept only for the exactness test: the same values as a run's
coloc.sim.predictions.Predictions (its checked, clipped and averaged tables, read once by `copy_of`), or the measured
pairs for the oracle (`from_truth`), answered by this module's own lookups. The reference runs read these in place
of the production object's, so a change of how the production module answers a lookup shows as a different
decision. How the tables are read from files (seeds, clipping, averaging) is not copied: both runs start from the
same values.
"""
from __future__ import annotations


class Predictions:
    """Predicted normalized throughput (with spread), per-resource ratios and solo utilization, as plain dicts."""

    def __init__(self, norms: dict, stds: dict | None = None, utils: dict | None = None,
                 resources: dict | None = None):
        self._norm, self._std, self._util, self._resources = norms, stds or {}, utils or {}, resources or {}

    @classmethod
    def copy_of(cls, production) -> "Predictions":
        """The values a production Predictions holds."""
        return cls(dict(production._norm), dict(production._std), dict(production._util),
                   dict(production._resources))

    @classmethod
    def from_truth(cls, truth) -> "Predictions":
        """The measured pairs (the oracle's)."""
        return cls(truth.pair_norms())

    def norm(self, device: str, workload: str, other: str) -> float:
        return self._norm[(device, workload, other)]

    def std(self, device: str, workload: str, other: str) -> float:
        return self._std.get((device, workload, other), 0.0)

    def has_norm(self) -> bool:
        return bool(self._norm)

    def has_resources(self) -> bool:
        return bool(self._resources)

    def resource_ratios(self, device: str, workload: str, other: str) -> tuple[float, ...]:
        return self._resources[(device, workload, other)]

    def has_util(self) -> bool:
        return bool(self._util)

    def util(self, device: str, workload: str) -> float:
        return self._util[(device, workload)]
