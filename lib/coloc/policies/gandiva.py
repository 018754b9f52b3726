"""Gandiva: greedy packing without prediction, then introspection and unpacking.

A job gets an idle GPU if there is one; otherwise a single-GPU job is packed
onto the least-loaded GPU that can take it (fits in memory, and not a set
already seen to interfere). Every `period_s`, each set that has shared a GPU
for at least `observe_s` is judged by its measured (observed) normalized
throughputs: if their sum is below `threshold` the set is remembered as bad
and the newest job is migrated to an idle GPU, or suspended back to the queue
when none is idle (Gandiva time-slices; here the job waits instead).
"""
from __future__ import annotations

import heapq

from coloc.policies.base import Policy, fill_idle, pack_singles, register


@register("gandiva")
class Gandiva(Policy):
    max_jobs_per_gpu = 2  # Gandiva packs pairs
    def __init__(self, period_s: float = 60.0, observe_s: float = 60.0, threshold: float = 1.0):
        self.period_s = period_s
        self.observe_s = observe_s
        self.threshold = threshold

    def reset(self, view) -> None:
        super().reset(view)
        self._bad: set[tuple[str, tuple[str, ...]]] = set()
        self._judged: dict[int, frozenset[int]] = {}
        self._fresh = view.cluster.newly_shared = set()  # shared GPUs whose current set may be unjudged
        self._later: list[tuple[float, int]] = []  # heap of (about when observed long enough, gpu) set aside

    def schedule(self, view) -> None:
        self._introspect(view)
        fill_idle(view)
        pack_singles(view, lambda job: self._pack_target(view, job))

    def _pack_target(self, view, job) -> int | None:
        best = None
        for device in view.cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            for sig, gpus in view.cluster.shareable_groups(device):
                members = tuple(sorted(sig + (job.workload,)))
                if (device, members) in self._bad or not view.can_share(device, members):
                    continue
                option = (len(sig), gpus.first())
                best = option if best is None or option < best else best
        return None if best is None else best[1]

    def _introspect(self, view) -> None:
        """Judge, in GPU order, each set of jobs sharing a GPU once it has been observed `observe_s`.

        Only GPUs whose set changed since it was last judged are looked at (`self._fresh`, kept by
        the cluster): a set already judged is passed over, as are GPUs no longer shared. A set not yet
        observed long enough is set aside (`self._later`) until shortly before it will be.
        """
        cluster, now, fresh, later = view.cluster, view.now, self._fresh, self._later
        while later and later[0][0] <= now:
            fresh.add(heapq.heappop(later)[1])
        fresh.intersection_update(cluster.shared_gpus)
        for gpu in sorted(fresh):  # a snapshot, as the set changes while jobs move
            here = list(cluster.residents[gpu])
            ids = frozenset(j.job_id for j in here)
            if self._judged.get(gpu) == ids:
                fresh.discard(gpu)
                continue
            if any(now - j.placed_at < self.observe_s for j in here):
                observed = max(j.placed_at for j in here) + self.observe_s
                heapq.heappush(later, (observed - 1e-9 * max(1.0, abs(observed)), gpu))  # early: rounding
                fresh.discard(gpu)
                continue
            self._judged[gpu] = ids
            fresh.discard(gpu)
            if sum(view.observed_factor(j) for j in here) >= self.threshold:
                continue
            device = cluster.gpu_device[gpu]
            self._bad.add((device, tuple(sorted(j.workload for j in here))))
            newest = max(here, key=lambda j: (j.placed_at, j.job_id))
            target = cluster.pick_free(device, 1)
            if target is not None:
                view.migrate(newest, target)
            else:
                view.preempt(newest)
