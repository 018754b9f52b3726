"""coloc-probe: coloc's packing rule, with a job of an unseen family profiled before it is placed.

A job whose model family the predictor was not trained on (`new_families`) is new. Before its
training starts it runs its `probes` probes: k runs of `probe_s` seconds each next to reference job
types, charged as k x `probe_s` seconds of GPU time on the GPUs it is placed on
(`SchedulerView.probe`: its run grows by that much, so those GPUs are busy that much longer). It is
charged once, at its first placement; a restart does not probe again. The placement itself already
uses the probes' results: the profiling is taken to end at the moment of the decision.

The predictions it reads (`view.predictions`) are the probe-informed ones: for the new families'
pairs, a predictor that saw the family only through its k probes; for the probe pairs themselves, the
values the probes measured (the only measured pairs the policy sees, and it pays for them); for the
other pairs, out-of-fold predictions of a predictor that trained on their families
(`coloc.studies.probing.probe_predictions` builds that table). Everything else is coloc's rule
(coloc.policies.coloc); with `probes` = 0 or no new family it is coloc.
"""
from __future__ import annotations

import math

from coloc.datasets import family_of
from coloc.policies.base import register
from coloc.policies.coloc import Coloc


@register("coloc-probe")
class ColocProbe(Coloc):
    """coloc; a job of a family in `new_families` first runs `probes` probes of `probe_s` seconds."""

    def __init__(self, probes: int = 2, probe_s: float = 30.0, new_families=(), **params):
        super().__init__(**params)
        if isinstance(probes, bool) or not isinstance(probes, int) or probes < 0:
            raise ValueError(f"policy coloc-probe: probes={probes!r}; expected a whole number >= 0")
        if not (isinstance(probe_s, (int, float)) and math.isfinite(probe_s) and probe_s >= 0):
            raise ValueError(f"policy coloc-probe: probe_s={probe_s!r}; expected seconds >= 0")
        if isinstance(new_families, str):
            raise ValueError(f"policy coloc-probe: new_families={new_families!r}; expected a list of families")
        self.probes = probes
        self.probe_s = float(probe_s)
        self.new_families = frozenset(new_families)

    def reset(self, view) -> None:
        super().reset(view)
        self._probed: set[int] = set()

    def is_new(self, job) -> bool:
        """Whether the job's family is one the predictor was not trained on."""
        return family_of(job.workload) in self.new_families

    def schedule(self, view) -> None:
        if not (self.probes and self.new_families):
            super().schedule(view)
            return
        placements = view.stats["placements"]
        before = set(view.running)
        super().schedule(view)
        if view.stats["placements"] == placements:
            return
        for job_id in sorted(view.running.keys() - before):
            job = view.running[job_id]
            if job_id not in self._probed and self.is_new(job):
                self._probed.add(job_id)
                view.probe(job, self.probes * self.probe_s)
