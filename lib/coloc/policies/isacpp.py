"""ISACPP as its authors built it: the multi-stage interference score, each job to the GPU of least score.

The score (coloc.policies.stages states it exactly, with the reference's lines): for a candidate GPU,
the new job and the jobs already there run in stages, each ending when the first job finishes. In a
stage a job's contention is the sum over resources of its solo over its predicted co-located use (no
time term); the stage where a job runs alone counts 0. A job's interference is the sum over its stages
of (stage length / its predicted co-located remaining time) x contention, a resident's only over the
stages until the first of it and the new job ends. The GPU's score is the new job's interference plus
the mean of the residents'; an idle GPU scores exactly 0.

Forms (the run summary's isacpp_score_form): "per-resource" where the predictions carry per-resource
co-located over solo use (Predictions.resource_ratios); "throughput-scaled" on Gavel's data, which
measured throughput only: contention = 1 (GPU memory, held) + 2 / factor (PCIe bandwidth and GPU
utilization, taken to scale with the job's normalized throughput, so solo / co-located = 1 / factor).

Where the job may go: no cap of ISACPP's own on jobs per GPU (max_jobs_per_gpu None: the cluster's cap,
the simulated world's, is the only count). The reference's only check is that the GPU memory requests of
the set fit the device (coloc.policies.volcano.memory_fits: declared peak memory, True where unknown), plus
the world's fit rule (view.can_share), which every policy respects. Queue order is FIFO; a job that fits
nowhere is passed over. Remaining times use the jobs' known work, as ISACPP knows epochs and iterations.

Every score is >= 0 and a shared GPU's is > 0 (contention > 0 in a shared stage of positive length), so
an idle GPU (0) beats every shared one: jobs go to idle GPUs first (base.fill_idle; ties among idle GPUs
go to the cluster's best fit, not to the lowest index), and shared GPUs are scored when none is idle.

Next to one resident the score is monotone on each side of the point where both would end together
(proof in _lone_pair), so the best GPU of a group of one-job GPUs is found without scoring them all
(coloc.policies.lone), and the score's values at the ends of its pieces bound the whole group: groups
are visited least bound first and the search stops at the first whose bound is above the best found.
Within that, a group whose score at its residents' least and greatest remaining times is above the best
is passed over without scoring its GPUs (the score's least over an interval is at one of its ends;
tested in the candidate loop from the group's order keys, and again in lone.best_lone_gpu).
The choice, ties included, is the one scoring every GPU gives (tests/reference_sim/isacpp.py).
"""
from __future__ import annotations

import math

from coloc.policies.base import Policy, fill_idle, pack_singles, register
from coloc.policies.lone import REL, best_lone_gpu, piece_floors
from coloc.policies.stages import isacpp_score, pair_score, resource_contention, throughput_contention
from coloc.policies.volcano import memory_fits


@register("isacpp")
class Isacpp(Policy):
    kind = "predictive"
    needs = ("norm",)

    def __init__(self, max_jobs_per_gpu: int | None = None):
        self.max_jobs_per_gpu = max_jobs_per_gpu

    def reset(self, view) -> None:
        super().reset(view)
        self._preds = view.predictions
        self._pair_terms: dict[tuple[str, str, str], tuple[float, ...]] = {}
        self._pairs: dict[tuple[str, str, str], tuple] = {}  # _lone_pair's, by (device, new, old)
        self._ranked: dict[str, tuple[int, list]] = {}
        self._by_group: dict[str, dict[tuple[str, tuple[str, ...]], tuple]] = {}  # _ranking's, by group
        self._candidates_at: dict[str, tuple[int, list]] = {}  # (cluster.open_changes, _candidates' answer)
        self._fit: dict[tuple[str, tuple[str, ...]], bool] = {}
        # the paper's form wherever resource predictions exist; else coloc's adaptation to throughput-only data
        self.score_form = "per-resource" if view.predictions.has_resources() else "throughput-scaled"
        self._cap = view.cluster.cap  # (capped at max_jobs_per_gpu by the view, when given)

    def schedule(self, view) -> None:
        fill_idle(view)
        pack_singles(view, lambda job: self._best_shared(view, job))

    def _best_shared(self, view, job) -> int | None:
        best = None
        open_groups = {device: view.cluster.open_groups(device) for device in view.cluster.devices}
        t_new = {}  # the new job's solo remaining time, per device
        now, ordered = view.now, not view.spec.share_multi_gpu  # (a lone gang job's GPU has no fixed order)
        for device, sig, cutoff, pair in self._candidates(view, job.workload):
            if best is not None and cutoff > best[0]:
                break  # this group and the rest score above the best (cutoff: least score a group can reach)
            gpus = open_groups[device].get(sig)
            if gpus is None:
                continue  # empty
            if device not in t_new:
                t_new[device] = job.remaining / view.speed(device, job.workload)
            if pair is not None:
                if best is not None and ordered:
                    # lone.best_lone_gpu's bound of the group, from its order's keys alone (inline: most groups of
                    # a decision end here): a key less now is its GPU's solo remaining time to within the order's
                    # rounding allowance, taken twice
                    order = gpus.by_finish(now)
                    if order and not gpus.unordered():
                        first, last = order[0][0], order[-1][0]
                        low = first - now - 2.0 * REL * (abs(first) + 1.0)
                        if low > 0:
                            n_new, n_old, c_new, c_old = pair[:4]
                            t, a = t_new[device], t_new[device] / n_new
                            b = low / n_old  # stages.pair_score at the least time
                            bound = (b / (b + (t - n_new * b)) * c_new + c_old if b < a
                                     else c_new + a / (a + (low - n_old * a)) * c_old)
                            high = last - now + 2.0 * REL * (abs(last) + 1.0)
                            b = high / n_old  # and at the greatest
                            score = (b / (b + (t - n_new * b)) * c_new + c_old if b < a
                                     else c_new + a / (a + (high - n_old * a)) * c_old)
                            if score < bound:
                                bound = score
                            if bound - REL * (1.0 + abs(bound)) > best[0]:
                                continue  # every GPU of the group scores above the best
                best = self._best_lone(view, pair, t_new[device], gpus, best)
                continue
            for gpu in gpus:
                option = (self.gpu_score(view, job, device, gpu), gpu)
                if best is None or option < best:
                    best = option
        return None if best is None else best[1]

    def _candidates(self, view, workload: str) -> list[tuple]:
        """(device, signature, cutoff, pair) of the groups `workload` may join, least cutoff first: cutoff, the
        least score any GPU of the group can reach less the rounding allowance (-inf where no bound is known:
        scored first); pair, the _lone_pair numbers where the group's GPUs hold one job each (else None). When
        most of the groups are empty, only the non-empty ones, sorted anew.
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
                if len(sig) >= self._cap or not self.fits(view, device, sig, workload):
                    continue
                if len(sig) == 1:
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

    def fits(self, view, device: str, sig: tuple[str, ...], workload: str) -> bool:
        """Whether a `workload` job may join the jobs `sig` on a GPU of `device`: the set's declared GPU memory
        fits the device (ISACPP's only check) and the world's fit rule allows the set."""
        key = (device, sig + (workload,))
        fit = self._fit.get(key)
        if fit is None:
            fit = self._fit[key] = memory_fits(view, device, sig, workload) and view.can_share(device, key[1])
        return fit

    def contention(self, device: str, workload: str, others, factor: float) -> float:
        """Contention of a `workload` job sharing a GPU of `device` with jobs `others`, at co-located `factor`."""
        if self.score_form == "per-resource":
            return resource_contention([self._preds.resource_ratios(device, workload, o) for o in others])
        return throughput_contention(factor)

    def _best_lone(self, view, pair: tuple, t_new: float, gpus, best=None):
        """Least (score, gpu) over a group of GPUs each holding one job (the pair's _lone_pair numbers) and `best`."""
        n_new, n_old, c_new, c_old, floors = pair
        now = view.now
        a = t_new / n_new

        def remaining(gpu: int) -> float:
            resident = view.cluster.residents[gpu][0]
            return resident.remaining_at(now) / resident.speed

        def score(t_old: float) -> float:  # stages.pair_score, inlined: the same operations
            b = t_old / n_old
            if b < a:
                return b / (b + (t_new - n_new * b)) * c_new + c_old
            return c_new + a / (a + (t_old - n_old * a)) * c_old

        if view.spec.share_multi_gpu:  # a lone gang job's speed follows its other GPUs: no fixed order
            return min([(score(remaining(gpu)), gpu) for gpu in gpus] + ([best] if best else []))
        return best_lone_gpu(gpus, now, remaining, score, n_old * a, best, floors)

    def _lone_pair(self, device: str, new: str, old: str) -> tuple:
        """A pair's terms (n_new, n_old, c_new, c_old) and the floors of its score's two pieces in the resident's
        solo remaining time t (lone.piece_floors).

        The score rises then falls in t, the shape lone.best_lone_gpu searches. With a = t_new / n_new and
        split = n_old a (both end together):
        * t < split (the resident ends first; b = t / n_old < a): score = c_old + c_new b / D(b) with
          D(b) = t_new - (n_new - 1) b, linear in b, D(0) = t_new > 0 and D(a) = a > 0, so D > 0 on [0, a];
          d/db (b / D(b)) = (D(b) + (n_new - 1) b) / D(b)^2 = t_new / D(b)^2 > 0: the score rises with t
          (strictly, as c_new > 0), from c_old (t -> 0) to c_old + c_new (t = split);
        * t >= split (the new job ends first): score = c_new + c_old a / E(t) with E(t) = a + (t - split) >= a
          > 0, increasing in t: the score falls with t (strictly, as c_old > 0), from c_new + c_old to c_new
          (t -> infinity).
        Every form's contentions are positive (sums of solo over co-located use); a negative one would break
        the shape, so it is refused.
        """
        pair = self._pairs.get((device, new, old))
        if pair is None:
            n_new, n_old, c_new, c_old = terms = self._pair_terms_of(device, new, old)
            if not (c_new >= 0.0 and c_old >= 0.0):
                raise ValueError(f"isacpp: contentions {c_new!r} ({new} next to {old}) and {c_old!r} ({old} next "
                                 f"to {new}) on {device}; expected numbers >= 0 (sums of solo over co-located use)")
            pair = self._pairs[(device, new, old)] = (*terms, piece_floors(self._pair_ends(device, new, old)))
        return pair

    def _pair_ends(self, device: str, new: str, old: str) -> tuple[float, float, float]:
        """The score of a `new` job next to one `old` job as the resident's remaining time goes to 0 (c_old),
        where both end together (c_new + c_old) and to infinity (c_new); monotone between (_lone_pair)."""
        n_new, n_old, c_new, c_old = self._pair_terms_of(device, new, old)
        return c_old, c_new + c_old, c_new

    def _pair_terms_of(self, device: str, new: str, old: str) -> tuple[float, ...]:
        terms = self._pair_terms.get((device, new, old))
        if terms is None:
            n_new, n_old = self._preds.norm(device, new, old), self._preds.norm(device, old, new)
            terms = self._pair_terms[(device, new, old)] = (
                n_new, n_old, self.contention(device, new, (old,), n_new), self.contention(device, old, (new,), n_old))
        return terms

    def gpu_score(self, view, job, device: str, gpu: int) -> float:
        """ISACPP's score of `gpu` for `job`: 0 if idle; the new job's interference plus the residents' mean."""
        residents = view.cluster.residents[gpu]
        if not residents:
            return 0.0
        t_new = job.remaining / view.speed(device, job.workload)
        if len(residents) == 1:
            n_new, n_old, c_new, c_old = self._pair_terms_of(device, job.workload, residents[0].workload)
            resident = residents[0]
            return pair_score(t_new, resident.remaining_at(view.now) / resident.speed, n_new, n_old, c_new, c_old)
        remaining = [t_new] + [m.remaining_at(view.now) / m.speed for m in residents]
        names = [job.workload] + [m.workload for m in residents]
        norm = self._preds.norm

        def pair_norm(i: int, k: int) -> float:
            return norm(device, names[i], names[k])

        def contention(i: int, active: tuple, factors: dict) -> float:
            return self.contention(device, names[i], [names[k] for k in active if k != i], factors[i])

        return isacpp_score(remaining, pair_norm, contention)
