"""ISACPP: multi-stage interference score on predicted co-located performance.

For a candidate GPU, the jobs already there plus the new job run in stages
(each ends when the first job finishes). In a stage a job's contention is the
sum over resources of co-located demand over solo demand; its interference is
the sum over its stages of (stage length / its solo remaining time) x
contention. The GPU's score is the new job's interference plus the mean
interference of the jobs already there; an idle GPU scores the new job alone.
The job goes to the GPU of least score, in FIFO order.

Two forms (coloc.policies.stages; the run's summary column isacpp_score_form says which ran):
* "per-resource", the paper's, when the predictions carry per-resource co-located over solo use
  (Predictions.resource_ratios): contention = 1 / factor + the sum of those ratios; every GPU is scored.
* "two-resource", coloc's adaptation to Gavel data (no per-resource co-location measurements):
resources are (1) time, contention 1 / predicted normalized throughput, and
(2) SM utilization, contention max(1, sum of the stage's predicted solo
utilizations) (demand over the GPU's capacity) when utilization predictions
are given. Remaining times use the jobs' known durations, as ISACPP assumes
known epoch counts. Predicted slowdowns are >= 1, so an idle GPU always
scores below a shared one: shared GPUs are scored only when none is idle.
Queue order is FIFO with backfilling (a job that does not fit is passed over).

Next to one resident the score is piecewise monotone in the resident's remaining time, so the
best GPU of a group of one-job GPUs is found without scoring them all (coloc.policies.lone),
and the score's values at the ends of its pieces bound the whole group: groups are visited
least bound first and the search stops at the first whose bound is above the best found. The
choice, ties included, is the one scoring every GPU gives.
"""
from __future__ import annotations

import math

import numpy as np

from coloc.policies.base import Policy, fill_idle, pack_singles, register
from coloc.policies.lone import REL, best_lone_gpu, direction, least_of_flat_pieces, piece_floors
from coloc.policies.stages import per_resource_score, two_resource_score


@register("isacpp")
class Isacpp(Policy):
    kind = "predictive"
    needs = ("norm",)
    optional = ("util",)

    def __init__(self, use_util: bool = True, max_jobs_per_gpu: int | None = None):
        self.use_util = use_util
        self.max_jobs_per_gpu = max_jobs_per_gpu

    def reset(self, view) -> None:
        super().reset(view)
        self._preds = view.predictions
        self._pair_terms: dict[tuple[str, str, str], tuple[float, ...]] = {}
        self._pairs: dict[tuple[str, str, str], tuple] = {}  # _lone_pair's, by (device, new, old)
        self._ranked: dict[str, tuple[int, list]] = {}
        self._by_group: dict[str, dict[tuple[str, tuple[str, ...]], tuple]] = {}  # _ranking's, by group
        self._candidates_at: dict[str, tuple[int, list]] = {}  # (cluster.open_changes, _candidates' answer)
        self._util = self.use_util and view.predictions.has_util()
        # the paper's form wherever resource predictions exist; else coloc's two-resource adaptation
        self.score_form = "per-resource" if view.predictions.has_resources() else "two-resource"
        self._cap = view.cluster.cap  # (capped at max_jobs_per_gpu by the view, when given)

    def schedule(self, view) -> None:
        fill_idle(view)
        pack_singles(view, lambda job: self._best_shared(view, job))

    def _best_shared(self, view, job) -> int | None:
        best = None
        open_groups = {device: view.cluster.open_groups(device) for device in view.cluster.devices}
        t_new = {}  # the new job's solo remaining time, per device
        flat: list = []  # long flat pieces set aside (coloc.policies.lone), scored together at the end
        for device, sig, cutoff, pair in self._candidates(view, job.workload):
            if best is not None and cutoff > best[0]:
                break  # this group and the rest score above the best (cutoff: least score a group can reach)
            gpus = open_groups[device].get(sig)
            if gpus is None:
                continue  # empty
            if device not in t_new:
                t_new[device] = job.remaining / view.speed(device, job.workload)
            if pair is not None:
                best = self._best_lone(view, pair, t_new[device], gpus, best, flat)
                continue
            for gpu in gpus:
                option = (self.gpu_score(view, job, device, gpu), gpu)
                if best is None or option < best:
                    best = option
        if flat:
            best = least_of_flat_pieces(flat, view.now, best)
        return None if best is None else best[1]

    def _candidates(self, view, workload: str) -> list[tuple]:
        """(device, signature, cutoff, pair) of the groups `workload` may join, least cutoff first: cutoff, the
        least score any GPU of the group can reach less the rounding allowance (-inf where no bound is known:
        scored first); pair, the _lone_pair numbers where the group's GPUs hold one job each and the score is
        the two-resource form (else None). When most of the groups are empty, only the non-empty ones, sorted anew.
        Kept while the same groups are open (a group is made open: cluster.open_changes counts both)."""
        cluster = view.cluster
        cached = self._candidates_at.get(workload)
        if cached is not None and cached[0] == cluster.open_changes:
            return cached[1]
        ranked = self._ranking(view, workload)
        if 4 * cluster.shareable_group_count() >= len(ranked):
            candidates = ranked
        else:
            by_group = self._by_group[workload]
            candidates = sorted([by_group[(device, sig)] for device in cluster.devices
                                 for sig, _ in cluster.shareable_groups(device) if (device, sig) in by_group],
                                key=lambda c: c[2])
        self._candidates_at[workload] = (cluster.open_changes, candidates)
        return candidates

    def _ranking(self, view, workload: str) -> list[tuple]:
        """_candidates over every group, empty or not; cached while the cluster has the same groups (groups are
        created, never deleted)."""
        groups = view.cluster.shareable
        size = view.cluster.groups_made()
        cached = self._ranked.get(workload)
        if cached is not None and cached[0] == size:
            return cached[1]
        ranked = []
        for device in view.cluster.devices:
            if not view.has_solo(device, workload):
                continue
            for sig in groups[device]:
                if len(sig) >= self._cap or not view.can_share(device, sig + (workload,)):
                    continue
                if len(sig) == 1 and self.score_form == "two-resource":
                    pair = self._lone_pair(device, workload, sig[0])
                    bound = min(self._pair_ends(device, workload, sig[0]))
                    ranked.append((device, sig, bound - REL * (1.0 + abs(bound)), pair))
                else:
                    ranked.append((device, sig, -math.inf, None))
        ranked.sort(key=lambda c: c[2])  # stable: ties keep device, then signature order
        self._ranked[workload] = (size, ranked)
        self._by_group[workload] = {c[:2]: c for c in ranked}
        return ranked

    def summary_fields(self) -> dict:
        return {"isacpp_score_form": self.score_form}

    def _contention(self, device: str, factor: float, workloads) -> float:
        if not self._util:
            return 1.0 / factor
        return 1.0 / factor + max(1.0, sum(self._preds.util(device, w) for w in workloads))

    def _best_pair(self, view, device: str, new: str, t_new: float, old: str, gpus, best=None):
        """Least (gpu_score, gpu) over a group of GPUs each holding one job of workload `old`, and `best`."""
        return self._best_lone(view, self._lone_pair(device, new, old), t_new, gpus, best)

    def _best_lone(self, view, pair: tuple, t_new: float, gpus, best=None, flat: list | None = None):
        """_best_pair with the pair's _lone_pair numbers; long flat pieces set aside in `flat` where given."""
        n_new, n_old, c_new, c_old, alone_new, alone_old, below, above, floors, key = pair
        residents, now = view.cluster.residents, view.now
        a = t_new / n_new  # the stage ends when the first ends: min(a, t_old / n_old)
        split = n_old * a
        i_new_first = a / t_new * c_new + (t_new - n_new * a) / t_new * alone_new  # i_new when the new job ends first

        def remaining(gpu: int) -> float:
            resident = residents[gpu][0]
            return resident.remaining_at(now) / resident.speed

        def score(t_old: float) -> float:  # i_new + i_old, stage = min(a, b); the same operations either way
            b = t_old / n_old
            if b < a:
                return (b / t_new * c_new + (t_new - n_new * b) / t_new * alone_new
                        + (b / t_old * c_old + (t_old - n_old * b) / t_old * alone_old))
            return i_new_first + (a / t_old * c_old + (t_old - split) / t_old * alone_old)

        def scores(t_old: np.ndarray) -> np.ndarray:  # score, element-wise (the same operations)
            stage = np.minimum(a, t_old / n_old)
            return (stage / t_new * c_new + (t_new - n_new * stage) / t_new * alone_new
                    + (stage / t_old * c_old + (t_old - n_old * stage) / t_old * alone_old))

        if view.spec.share_multi_gpu:  # a lone gang job's speed follows its other GPUs: no fixed order
            return min([(score(remaining(gpu)), gpu) for gpu in gpus] + ([best] if best else []))
        return best_lone_gpu(gpus, now, remaining, score, split, below, above, None, best, floors, scores, flat, key)

    def _lone_pair(self, device: str, new: str, old: str) -> tuple:
        """A pair's terms (_terms), the directions of its score's two pieces, their floors (lone.piece_floors) and
        a key equal for pairs of equal terms on one device (their pieces' scores are one function of t_old).

        Resident ends first (t_old < n_old t_new / n_new):
          i_new = alone_new + t_old (c_new - n_new alone_new) / (n_old t_new), i_old constant;
        new job ends first: i_old = alone_old + (t_new / n_new) (c_old - n_old alone_old) / t_old, i_new constant.
        """
        pair = self._pairs.get((device, new, old))
        if pair is None:
            n_new, n_old, c_new, c_old, alone_new, alone_old = terms = self._pair_terms_of(device, new, old)
            pair = self._pairs[(device, new, old)] = (
                *terms, direction(c_new - n_new * alone_new), -direction(c_old - n_old * alone_old),
                piece_floors(self._pair_ends(device, new, old)), (device, *terms))
        return pair

    def _pair_ends(self, device: str, new: str, old: str) -> tuple[float, float, float]:
        """Two-resource score of a `new` job next to one `old` job as the resident's remaining time goes to 0
        (c_old / n_old + alone_new), where both end together (c_new / n_new + c_old / n_old) and to infinity
        (c_new / n_new + alone_old). The score is monotone between them (coloc.policies.lone)."""
        n_new, n_old, c_new, c_old, alone_new, alone_old = self._pair_terms_of(device, new, old)
        return c_old / n_old + alone_new, c_new / n_new + c_old / n_old, c_new / n_new + alone_old

    def _pair_terms_of(self, device: str, new: str, old: str) -> tuple[float, ...]:
        terms = self._pair_terms.get((device, new, old))
        if terms is None:
            terms = self._pair_terms[(device, new, old)] = self._terms(device, new, old)
        return terms

    def _terms(self, device: str, new: str, old: str) -> tuple[float, ...]:
        """(n_new, n_old, contention of each co-located, of each alone) of a new `new` next to an `old`."""
        n_new, n_old = self._preds.norm(device, new, old), self._preds.norm(device, old, new)
        c_new, c_old = self._contention(device, n_new, (new, old)), self._contention(device, n_old, (new, old))
        alone_new, alone_old = self._contention(device, 1.0, (new,)), self._contention(device, 1.0, (old,))
        return n_new, n_old, c_new, c_old, alone_new, alone_old

    def gpu_score(self, view, job, device: str, gpu: int) -> float:
        """New job's interference plus the mean of the residents' interference on `gpu`."""
        members = [job] + view.cluster.residents[gpu]
        remaining = [job.remaining / view.speed(device, job.workload)]
        remaining += [m.remaining_at(view.now) / m.speed for m in members[1:]]
        names = [m.workload for m in members]
        norm = self._preds.norm

        def pair_norm(i: int, k: int) -> float:
            return norm(device, names[i], names[k])

        if self.score_form == "per-resource":
            preds = self._preds
            return per_resource_score(remaining, pair_norm,
                                      lambda i, k: preds.resource_ratios(device, names[i], names[k]),
                                      len(preds.resource_names))
        solo_util = [self._preds.util(device, w) for w in names] if self._util else None
        return two_resource_score(remaining, pair_norm, solo_util)
