"""coloc's own policy: risk-averse, JCT-aware packing (its oracle upper bound is in `oracle`).

1. Shortest remaining time first (`order='sjf'`): the same knowledge of
   durations that ISACPP's remaining times assume; `order='fifo'` is the
   ablation without reordering.
2. Idle GPUs first. With none idle, a single-GPU job joins a GPU only where sharing pays in predicted
   total completion time against waiting (`wait_rule`). Packed next to a resident, with pessimistic
   values (prediction - risk x predicted spread), it adds `cost` = (both jobs' predicted finish times
   packed) - (each alone) and saves `saved` = t_new + the GPU's busy time without it - its busy time
   with it (GPU time; negative for a set that loses throughput). Waiting costs the job `wait`: until the
   k-th running job's predicted end (coloc.policies.ends), k = its place among this round's waiting
   jobs. The GPU time saved comes back to the other queued jobs, each starting about saved / N sooner
   (N GPUs): the job joins if

       cost - (queued jobs behind it / N) x saved < wait,

   for one resident (1 - (1 + q)(n_new + n_old - 1)) min(t_new / n_new, t_old / n_old) < wait, q the
   queued jobs per GPU. So with a short queue even a set that gains throughput is formed only if its
   slowdown costs less than the wait; with a long one any set that gains enough is; a set that loses
   throughput costs the queue too. The candidates are the least-cost GPU among the sets that gain
   throughput (pessimistic combined normalized throughput >= `min_combined`) and the least-cost among
   those that do not, if below it; of those that pass, the least score wins. Without the wait rule
   (ablation) a set that gains throughput is joined whatever it costs.
3. The least-cost GPU is found as before: (new job's and residents' predicted finish times when
   packed) - (new job alone + residents undisturbed), the JCT of both jobs; the test above is then
   made on it alone (O(1) per decision: `saved_time`).

ISACPP packs whenever no GPU is idle, whatever the pair costs; Horus packs by
utilization even when GPUs are idle; Gandiva learns a bad pair only after
suffering it (coloc-online, coloc.policies.coloc_online, learns from the pairs it runs). `oracle`
(coloc.policies.oracle) is the same rule fed the measured pairs (no spread): an UPPER BOUND, not a predictor.

At cluster scale no decision costs every GPU. Next to one resident of solo remaining time t the new
job adds (2 - n_new - n_old) min(t / n_old, t_new / n_new) in exact arithmetic, which never falls with
t (norms are at most 1): a group of one-job GPUs, ordered by t (GpuGroup.by_finish), is scanned from
its least t until no GPU further on can cost less, and its value at the least t bounds the whole group,
so groups are visited least bound first and the search stops at the first bound above the best found
(the bounds allow for rounding; GPUs that tie up to rounding are costed as arrays); the groups a job type
may join are kept while the same groups are open. An offer that cannot pay against its wait is declined
before any search (`_declines`): its score next to one resident never falls with t either, so the device's
groups, read by their first finish (coloc.sim.firsts) until a bound over all of them reaches the wait, prove
it (at 100,000 jobs on 10,000 V100s: 5 offers in 6, each reading about 2 groups), tested first against a
time the wait does not exceed, read off the first finishers of the one-job GPUs (RoundWaits.at_most). The
wait rule's predicted ends are kept across rounds (coloc.policies.ends), read only where that test or a
candidate's score (not negative) needs the wait, and the k-th least is found among a few candidates, not all
running jobs. Costs are the scalar expressions' floating-point operations, so the choices, ties included, are
those of the plain loops.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from operator import itemgetter

import numpy as np

from coloc.policies.base import Policy, fill_idle, register
from coloc.policies.ends import PredictedEnds
from coloc.policies.lone import REL
from coloc.policies.stages import pair_finish_times, run_stages
from coloc.sim.predictions import Predictions
from coloc.sim.queue import fifo_key

UNKNOWN = object()
VECTOR_MIN = 16  # an order whose added times hardly grow with t is costed as arrays from this many GPUs


class JctPack(Policy):
    kind = "predictive"
    needs = ("norm",)
    skip_unpaying = True  # decline, unsearched, an offer that provably cannot pay against its wait (_declines)
    parameters = {"order": ("sjf", "fifo"), "risk": float, "min_combined": float, "wait_rule": bool,
                  "lookahead": int | None, "max_jobs_per_gpu": int}  # what a config entry may set

    def __init__(self, order: str = "sjf", risk: float = 1.0, min_combined: float = 1.0,
                 wait_rule: bool = True, lookahead: int | None = 128, max_jobs_per_gpu: int = 2):
        if order not in ("sjf", "fifo"):
            raise ValueError(f"policy coloc: order={order!r}; expected 'sjf' or 'fifo'")
        self.order = order
        self.risk = risk
        self.min_combined = min_combined
        self.wait_rule = wait_rule
        self.lookahead = lookahead
        self.max_jobs_per_gpu = max_jobs_per_gpu

    def queue_key(self, job) -> tuple:
        return (job.remaining, *fifo_key(job)) if self.order == "sjf" else fifo_key(job)

    def reset(self, view) -> None:
        super().reset(view)
        self._preds = self._predictions(view)
        self._cache: dict[tuple[str, str, str], float] = {}
        self._rules: dict[tuple[str, str], dict] = {}
        self._joinable_at: dict[tuple[str, str], tuple[int, dict, tuple]] = {}  # (open_changes, rules, kept)
        self._ends = PredictedEnds(view, lambda job: self._predicted_factor(view, job)) if self.wait_rule else None
        self._cap = view.cluster.cap  # (the view's cluster is capped at max_jobs_per_gpu already)

    def _predictions(self, view) -> Predictions:
        return view.predictions

    def schedule(self, view) -> None:
        fill_idle(view)
        cluster = view.cluster
        if cluster.max_free() > 0 or not cluster.any_shareable():
            return
        waits, waiting, gpus = None, 0, cluster.num_gpus
        offers = view.queue.first_singles(self.lookahead or len(view.queue))
        for i, job in enumerate(offers):
            if not cluster.any_shareable():
                return
            if self.wait_rule and waits is None:
                waits = RoundWaits(self._ends, view, len(offers) - 1)
            wait = partial(waits.wait, waiting) if waits is not None and waits.known else None
            ceiling = partial(waits.at_most, waiting) if wait is not None else None
            behind = (len(view.queue) - 1) / gpus  # the queue's share of each GPU-second saved (queue_weight)
            gpu = self._best_gpu(view, job, wait, behind, ceiling)
            if gpu is None:
                waiting += 1
                continue
            if waits is not None and i + 1 < len(offers):
                waits.read()  # the later offers' waits are the ends as at the first offer
            view.place(job, (gpu,))

    def _predicted_factor(self, view, job) -> float:
        """A running job's predicted (pessimistic) normalized throughput with its co-runners; a gang job
        runs at its slowest GPU. Its predicted end (coloc.policies.ends) is remaining time / this."""
        factor = 1.0
        for gpu in job.gpus:
            here = 1.0
            for other in view.cluster.residents[gpu]:
                if other is not job:
                    here *= self._norm(job.device, job.workload, other.workload)
            factor = min(factor, here)
        return factor

    def _norm(self, device: str, a: str, b: str) -> float:
        """Pessimistic predicted normalized throughput of a next to b: prediction - risk x spread."""
        key = (device, a, b)
        value = self._cache.get(key)
        if value is None:
            mean, std = self._belief(device, a, b)
            value = self._cache[key] = min(max(mean - self.risk * std, 0.01), 1.0)
        return value

    def _belief(self, device: str, a: str, b: str) -> tuple[float, float]:
        """(predicted normalized throughput of a next to b, its spread); coloc-online refines it."""
        return self._preds.norm(device, a, b), self._preds.std(device, a, b)

    def admissible(self, device: str, workloads) -> bool:
        """Pessimistic combined normalized throughput of the set >= min_combined."""
        total = 0.0
        for i, a in enumerate(workloads):
            factor = 1.0
            for k, b in enumerate(workloads):
                if k != i:
                    factor *= self._norm(device, a, b)
            total += factor
        return total >= self.min_combined

    def _best_gpu(self, view, job, wait: Callable[[], float] | None, behind: float = 0.0,
                  ceiling: Callable[[], float] | None = None) -> int | None:
        """The admissible GPU adding least completion time; None if the job should wait.

        The sets that gain throughput are searched first; then those that do not, for a GPU below that best:
        wait(), the job's wait under the wait rule (None: no rule), is asked only if one is found, and the job
        joins it if packing adds less than the wait. The groups are visited least floor first (lone_floor;
        -inf where GPUs hold several jobs), up to the first floor above the best so far. Under the wait rule an
        offer whose every GPU scores at least its wait is declined before any search (`_declines`; ceiling(), if
        given, is a time the wait does not exceed).
        """
        if wait is not None and self.skip_unpaying and self._declines(view, job, wait, behind, ceiling):
            return None
        gaining, others, now, rel, residents = [], [], view.now, REL, view.cluster.residents
        for device in view.cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            t_new = job.remaining / view.speed(device, job.workload)
            for sig, gpus, rule in self._joinable(view, device, job.workload):
                gains_throughput, lone, up_old, up_new, e_new, e_old, _ = rule
                if not gains_throughput and wait is None:
                    continue
                if lone is None:
                    floor = -math.inf
                elif gpus.unordered():
                    floor = lone_floor(now, t_new, rule, gpus, residents)
                else:  # lone_floor, inline (it is computed for every group of every decision)
                    order = gpus.by_finish(now)
                    first = order[0][0]
                    t = first - now
                    low, high = up_old * (t - rel * (abs(first) + 1.0)), up_new * t_new
                    floor = (low if low < high else high) - 2.0 * (
                        rel + t_new * e_new + (abs(t) + abs(order[-1][0] - now) + 1.0) * e_old)
                (gaining if gains_throughput else others).append((floor, device, t_new, sig, gpus, lone))
        best = self._least(view, job.workload, gaining, None)
        other = self._least(view, job.workload, others, best)
        if wait is None:  # no wait rule (ablation): a set that gains throughput is joined whatever it costs
            return None if best is None else best[1]
        chosen, least, waited = None, None, None
        for option in (other, best):  # the least-cost GPU of the losing and of the gaining sets
            if option is None:
                continue
            score = option[0] - behind * self.saved_time(view, job, option[1])
            if score >= 0.0:  # (a negative score pays whatever the wait)
                waited = wait() if waited is None else waited
                if score >= waited:
                    continue
            if least is None or score < least:
                chosen, least = option, score
        return None if chosen is None else chosen[1]

    def _declines(self, view, job, wait: Callable[[], float], behind: float,
                  ceiling: Callable[[], float] | None = None) -> bool:
        """Whether every GPU the job may join scores (`_best_gpu`'s score: added time - behind x saved time) at
        least its wait and at least 0, so that the search would decline the offer; False where that is not proven.

        Next to one resident of solo remaining time t the score is, in exact arithmetic, c min(t_new / n_new,
        t / n_old) with c = 1 - (1 + behind)(n_new + n_old - 1) (`saved_time`, `_cheapest_lone`): for c > 0 it
        never falls with t. So the device's groups are read by their first finish (coloc.sim.firsts: a group's
        least t is its first key - now, less the order's rounding), each one the job may join tested on that
        least t, until the bound of all groups (LoneRules.least_rates) on the least t so far reaches the bar;
        groups holding GPUs outside their order are tested on their residents (lone_span). Every value is
        lowered by far more than the rounding of the computed scores (a few units in the last place of t_new /
        n_new and t / n_old, t up to the greatest key ever ordered). The bar is ceiling() where given (a time the
        wait does not exceed, cheaper to know: RoundWaits.at_most), lowered to the wait where a value is below
        it; both are asked only where a group may be joined and c > 0 for every group. The groups with unordered
        GPUs are brought up to date (by_finish) as the search does, so an offer leaves the same state behind,
        searched or not."""
        now, residents, rel, grow = view.now, view.cluster.residents, REL, 1.0 + behind
        bar, exact = None, ceiling is None

        def lowered(value: float) -> bool:
            """Whether `value`, below the bar, reaches it once the bar is lowered to the wait."""
            nonlocal bar, exact
            if exact:
                return False
            bar, exact = max(wait(), 0.0), True
            return value >= bar

        for device in view.cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            joinable, lone = self._kept_joinable(view, device, job.workload)
            if not joinable:
                continue
            if lone is None:
                return False
            new_rate, old_rate = lone.least_rates(behind)
            if old_rate <= 0.0:
                return False  # (a set that gains enough has a negative score: it pays whatever the wait)
            if bar is None:
                bar = max((wait if exact else ceiling)(), 0.0)
            t_new = job.remaining / view.speed(device, job.workload)
            index = view.cluster.firsts[device]
            span = 2.0 * (abs(index.latest) + abs(now)) + 1.0  # above every ordered GPU's |t|
            margin = rel * (1.0 + grow * (t_new * lone.most_new + t_new + span * (1.0 + lone.most_old)))
            value = new_rate * t_new - margin  # at most every group's score where t / n_old > t_new / n_new
            if value < bar and not lowered(value):
                return False
            for number in [n for n in index.pending if n in lone.by_number] if index.pending else ():
                gain, per_new, per_old, _, _, _, _ = lone.by_number[number]
                low, high = lone_span(now, index.groups[number], residents)  # (by_finish: pending may change)
                a, b = t_new * per_new, low * per_old
                value = (1.0 - grow * gain) * (a if a < b else b) - rel * (
                    1.0 + grow * (a + t_new + (abs(low) + abs(high)) * (1.0 + per_old)))
                if value < bar and not lowered(value):
                    return False
            for key, number in index.entries:
                low = key - now - rel * (abs(key) + 1.0)  # at most the t of this group's GPUs and all further on
                if old_rate * low - margin >= bar:
                    break  # every further group, joinable or not, scores at least the bar
                rule = lone.by_number.get(number)
                if rule is not None:
                    gain, per_new, per_old, _, _, _, _ = rule
                    a, b = t_new * per_new, low * per_old
                    value = (1.0 - grow * gain) * (a if a < b else b) - margin
                    if value < bar and not lowered(value):
                        return False
        return True

    def _least(self, view, workload: str, candidates: list, beat):
        """Least (added time, gpu) over candidate groups, (floor, device, t_new, sig, group, (n_new, n_old) or
        None), if below `beat` (None: anything), else None; visited least floor first, up to the first floor
        above the least so far."""
        candidates.sort(key=itemgetter(0))
        least = beat
        for floor, device, t_new, sig, gpus, lone in candidates:
            if least is not None and floor > least[0]:
                break  # this group and the rest add more time than the least
            if lone is None:
                option = self._cheapest(view, device, workload, t_new, sig, gpus, least)
            else:
                option = self._cheapest_lone(view, t_new, lone, gpus, least)
            least = option or least
        return None if least is beat else least

    def _joinable(self, view, device: str, workload: str) -> list[tuple]:
        """[(signature, GPUs, _joins's rule)] of the open groups of `device` that `workload` may join (rule not None),
        in the cluster's order of its open groups (see _kept_joinable)."""
        return self._kept_joinable(view, device, workload)[0]

    def _kept_joinable(self, view, device: str, workload: str) -> tuple[list, LoneRules | None]:
        """(_joinable's list, its LoneRules, or None if a group in it holds GPUs with several jobs), kept while the
        same groups are open (cluster.open_changes counts a group made open or empty) and the same rules hold (a
        policy that forgets its rules drops their dict)."""
        key, opened = (device, workload), view.cluster.open_changes
        rules = self._rules_of(device, workload)
        kept = self._joinable_at.get(key)
        if kept is not None and kept[0] == opened and kept[1] is rules:
            return kept[2]
        joinable = []
        for sig, gpus in view.cluster.shareable_groups(device):
            rule = rules.get(sig, UNKNOWN)
            if rule is UNKNOWN:
                rule = rules[sig] = self._joins(view, device, workload, sig)
            if rule is not None:
                joinable.append((sig, gpus, rule))
        lone = None if any(rule[1] is None for _, _, rule in joinable) else LoneRules(joinable)
        self._joinable_at[key] = (opened, rules, (joinable, lone))
        return joinable, lone

    def _rules_of(self, device: str, workload: str) -> dict:
        """{signature: _joins(view, device, workload, signature)} as far as asked."""
        rules = self._rules.get((device, workload))
        if rules is None:
            rules = self._rules[(device, workload)] = {}
        return rules

    def _joins(self, view, device: str, workload: str, sig) -> tuple | None:
        """How `workload` may join GPUs holding `sig`: None if not (the cap, memory), else (whether the set is
        admissible, (n_new, n_old) where each GPU holds one single-GPU job, else None, then the floor's
        numbers: (2 - n_new - n_old) / n_old and / n_new, REL (1 + 1 / n_new) and REL (1 + 1 / n_old), then
        LoneRules's numbers where each GPU holds one single-GPU job, else None: gain = n_new + n_old - 1, 1 / n_new,
        1 / n_old, and each of the last two times 1 - gain and times gain). A set that is not admissible (gaining
        throughput with confidence) may be joined only under the wait rule."""
        members = sig + (workload,)
        if len(sig) >= self._cap or not view.can_share(device, members):
            return None
        if len(sig) > 1 or view.spec.share_multi_gpu:
            return self.admissible(device, members), None, 0.0, 0.0, 0.0, 0.0, None
        n_new, n_old = self._norm(device, workload, sig[0]), self._norm(device, sig[0], workload)
        k, gain, per_new, per_old = 2.0 - n_new - n_old, n_new + n_old - 1.0, 1.0 / n_new, 1.0 / n_old
        return (self.admissible(device, members), (n_new, n_old), k / n_old, k / n_new,
                REL * (1.0 + 1.0 / n_new), REL * (1.0 + 1.0 / n_old),
                (gain, per_new, per_old, per_new * (1.0 - gain), per_new * gain, per_old * (1.0 - gain),
                 per_old * gain))

    def _cheapest(self, view, device: str, workload: str, t_new: float, sig, gpus, beat):
        """Least (added completion time, gpu) of one group if below `beat` (None: anything), else None."""
        return below(min(((cost, gpu) for gpu, cost in self._added_times(view, device, workload, t_new, sig, gpus)),
                         default=None), beat)

    def _cheapest_lone(self, view, t_new: float, lone: tuple[float, float], group, beat):
        """_cheapest over a group of GPUs each holding one single-GPU job; lone: (n_new, n_old).

        Packed next to a resident of solo remaining time t, the new job adds t (2 - n_new - n_old) / n_old while
        the resident ends first, and t_new (2 - n_new - n_old) / n_new once t is past both ending together: in
        exact arithmetic a function of t that never falls (norms are at most 1). So the group's order by t
        (GpuGroup.by_finish) is scanned from its least t, each GPU costed by the scalar expression, until the
        cost just below the next t, less a rounding allowance, is above the least so far: ties are kept. When
        the added time hardly grows with t (GPUs that differ only by rounding), the order is costed as arrays.
        """
        n_new, n_old = lone
        now, residents = view.now, view.cluster.residents
        order = group.by_finish(now)

        def added(t_old: float) -> float:
            f_new, f_old = pair_finish_times(t_new, t_old, n_new, n_old)
            return f_new + f_old - t_new - t_old

        least = None
        for gpu in sorted(group.unordered()):  # placed in this round: not in the kept order, costed one by one
            resident = residents[gpu][0]
            option = (added(solo_left(resident, now)), gpu)
            least = option if least is None or option < least else least
        if not order:
            return below(least, beat)
        if (2.0 - n_new - n_old) / n_old <= REL and len(order) >= VECTOR_MIN:
            option = self._cheapest_ordered(view, t_new, n_new, n_old, group, len(order))
            return below(option if least is None or option < least else least, beat)
        slack = allowance(now, t_new, n_new, n_old, order)
        for i, (key, gpu) in enumerate(order):
            t = group.solo_time(i, now)
            option = (added(t), gpu)
            least = option if least is None or option < least else least
            limit = least[0] if beat is None or least[0] < beat[0] else beat[0]
            if added(t - REL * (abs(key) + 1.0)) - slack > limit:  # the GPUs further on have t beyond that
                break
        return below(least, beat)

    @staticmethod
    def _cheapest_ordered(view, t_new: float, n_new: float, n_old: float, group, ordered: int):
        """Least (added time, gpu) over the `ordered` GPUs of a group's order, each holding one single-GPU job,
        as arrays: the residents' remaining times from the progress the group keeps, pair_finish_times
        element-wise."""
        now = view.now
        t_old = group.solo_times(0, ordered, now)
        a, b = t_new / n_new, t_old / n_old
        first = a <= b  # the new job ends first (stages.pair_finish_times)
        f_new = np.where(first, a, b + (t_new - n_new * b))
        f_old = np.where(first, a + (t_old - n_old * a), b)
        cost = f_new + f_old - t_new - t_old
        least = cost.min()
        return float(least), int(group.gpus_at(0, ordered)[cost == least].min())

    def _added_times(self, view, device: str, workload: str, t_new: float, sig, gpus):
        """(gpu, completion time packing adds) per GPU of one group; closed form for one resident."""
        if len(sig) > 1:
            return [(gpu, self.added_time(view, device, workload, t_new, gpu)) for gpu in gpus]
        n_new, n_old = self._norm(device, workload, sig[0]), self._norm(device, sig[0], workload)
        residents, now = view.cluster.residents, view.now
        out = []
        for gpu in gpus:
            old = residents[gpu][0]
            t_old = solo_left(old, now)
            f_new, f_old = pair_finish_times(t_new, t_old, n_new, n_old)
            out.append((gpu, f_new + f_old - t_new - t_old))
        return out

    def saved_time(self, view, job, gpu: int) -> float:
        """GPU time packing `job` on `gpu` saves, predicted: its solo time (the GPU it would take after waiting)
        plus how long the GPU stays busy without it, less how long the GPU stays busy with it. Negative for a
        set that loses throughput; for one resident (n_new + n_old - 1) min(t_new / n_new, t_old / n_old)."""
        device, here, now = view.cluster.gpu_device[gpu], view.cluster.residents[gpu], view.now
        t_new = job.remaining / view.speed(device, job.workload)
        if len(here) == 1:
            old = here[0]
            t_old = solo_left(old, now)
            f_new, f_old = pair_finish_times(t_new, t_old, self._norm(device, job.workload, old.workload),
                                             self._norm(device, old.workload, job.workload))
            return t_new + t_old - (f_new if f_new > f_old else f_old)
        names = [job.workload] + [j.workload for j in here]
        left = [t_new] + [j.remaining_at(now) / j.speed for j in here]

        def pair_norm(i: int, k: int) -> float:
            return self._norm(device, names[i], names[k])

        packed, _ = run_stages(left, pair_norm)
        alone, _ = run_stages(left[1:], lambda i, k: pair_norm(i + 1, k + 1))
        return t_new + max(alone) - max(packed)

    def added_time(self, view, device: str, workload: str, t_new: float, gpu: int) -> float:
        """Predicted sum of finish times packed on `gpu` minus (new job alone + residents undisturbed)."""
        here = view.cluster.residents[gpu]
        names = [workload] + [j.workload for j in here]
        left = [t_new] + [j.remaining_at(view.now) / j.speed for j in here]

        def pair_norm(i: int, k: int) -> float:
            return self._norm(device, names[i], names[k])

        packed, _ = run_stages(left, pair_norm)
        alone, _ = run_stages(left[1:], lambda i, k: pair_norm(i + 1, k + 1))
        return sum(packed) - t_new - sum(alone)


def solo_left(job, now: float) -> float:
    """A running job's solo remaining time at `now` (Job.remaining_at(now) / speed)."""
    return (job.remaining - job.rate * (now - job.last_update)) / job.speed


def lone_floor(now: float, t_new: float, rule: tuple, group, residents) -> float:
    """An added time no GPU of a group of one-job GPUs goes below (rule: JctPack._joins's). Next to one resident
    of solo remaining time t the new job adds, in exact arithmetic, (2 - n_new - n_old) min(t / n_old, t_new /
    n_new) (see JctPack._cheapest_lone): the floor is its value at the least t of the group (that of the
    order's first, less the order's rounding; GPUs outside the order by their residents), less twice the
    rounding allowance (once for this value, once for the GPUs' added times). JctPack._best_gpu has it inline
    for a group whose GPUs are all in the order."""
    _, _, up_old, up_new, e_new, e_old, _ = rule
    order = group.by_finish(now)
    times = [solo_left(residents[gpu][0], now) for gpu in group.unordered()]
    low, most = min(times, default=math.inf), max(map(abs, times), default=0.0)
    if order:
        first, last = order[0][0], order[-1][0]
        low = min(low, first - now - REL * (abs(first) + 1.0))
        most = max(most, abs(first - now) + abs(last - now))
    return min(up_old * low, up_new * t_new) - 2.0 * (REL + t_new * e_new + (most + 1.0) * e_old)


class LoneRules:
    """What coloc's test of an offer (JctPack._declines) reads of the rules of the open groups of one-job GPUs a job
    type may join on a device: by group number (GpuGroup.number), the last numbers of JctPack._joins's rule
    (gain = n_new + n_old - 1, 1 / n_new, 1 / n_old, ...), and bounds over them all: the greatest 1 / n_new
    (`most_new`) and 1 / n_old (`most_old`), and least_rates's."""

    __slots__ = ("by_number", "most_new", "most_old", "_new", "_old")

    def __init__(self, joinable: list[tuple]):
        by_number, most_new, most_old = {}, 0.0, 0.0
        new_low, new_high, old_low, old_high = math.inf, 0.0, math.inf, 0.0  # see least_rates
        for _, gpus, rule in joinable:  # (one pass, no calls: the lists are rebuilt whenever a group opens or empties)
            numbers = rule[6]
            by_number[gpus.number] = numbers
            _, per_new, per_old, new_kept, new_gained, old_kept, old_gained = numbers
            most_new = per_new if per_new > most_new else most_new
            most_old = per_old if per_old > most_old else most_old
            new_low = new_kept if new_kept < new_low else new_low
            new_high = new_gained if new_gained > new_high else new_high
            old_low = old_kept if old_kept < old_low else old_low
            old_high = old_gained if old_gained > old_high else old_high
        self.by_number, self.most_new, self.most_old = by_number, most_new, most_old
        self._new, self._old = (new_low, new_high), (old_low, old_high)

    def least_rates(self, behind: float) -> tuple[float, float]:
        """At most every group's c / n_new and c / n_old, c = 1 - (1 + behind) gain: per (1 - gain) - behind x
        per x gain is at least the least of the first less behind times the greatest of the second."""
        return self._new[0] - behind * self._new[1], self._old[0] - behind * self._old[1]


def lone_span(now: float, group, residents) -> tuple[float, float]:
    """(at most the least, at least the greatest) solo remaining time at `now` of a group of one-job GPUs, as the
    search computes them: the order's first and last, widened by the order's rounding, and the GPUs outside the
    order by their residents. The group's order is brought up to date first (GpuGroup.by_finish)."""
    order = group.by_finish(now)
    low, high = math.inf, -math.inf
    if order:
        first, last = order[0][0], order[-1][0]
        low, high = first - now - REL * (abs(first) + 1.0), last - now + REL * (abs(last) + 1.0)
    for gpu in group.unordered():
        t = solo_left(residents[gpu][0], now)
        low, high = (t if t < low else low), (t if t > high else high)
    return low, high


def below(option, beat):
    """`option` if it is below `beat` (None: anything), else None."""
    return option if option is not None and (beat is None or option < beat) else None


def allowance(now: float, t_new: float, n_new: float, n_old: float, order) -> float:
    """More than the rounding error of the added time (computed as in pair_finish_times) at any GPU of the
    order, and of the floor's value (JctPack._best_gpu, inline): a few units in the last place of the largest
    terms, t_new / n_new and t / n_old."""
    first, last = order[0][0], order[-1][0]
    return REL * (1.0 + t_new * (1.0 + 1.0 / n_new) + (abs(first - now) + abs(last - now) + 1.0) * (1.0 + 1.0 / n_old))


class RoundWaits:
    """The wait rule's times in one round: the running jobs' predicted ends as at the round's first offer.
    They are read when a decision first asks for a wait, or before a placement that later offers follow
    (`read`), and computed only when asked (PredictedEnds.least, from a few candidates). A job with k jobs
    waiting before it in this round waits until the (k+1)-th of them to end, or the last. At most `most` jobs
    wait before an offer in the round."""

    def __init__(self, ends: PredictedEnds, view, most: int):
        self._ends, self._view, self._now = ends, view, view.now
        self._read, self._most = False, most
        self.known = bool(view.running)

    def read(self) -> None:
        if not self._read:
            self._ends.refresh(self._view)
            self._read = True

    def at_most(self, waiting: int) -> float:
        """A time the wait of an offer with `waiting` jobs waiting before it does not exceed, read off the cluster's
        one-job GPUs, not the ends: the greatest solo remaining time of the first finishers of waiting + 1 groups
        of one device type (coloc.sim.firsts), the least over device types; inf where none has that many groups.

        Each is a running job's predicted end as the ends compute it (remaining work at now / speed / factor, the
        factor of a job alone on its GPU being 1), and an ordered lone job has run alone since before the round
        with its progress unchanged, so it is among the ends as read at the round's first offer: the (waiting +
        1)-th least end is at most the greatest of any waiting + 1 of them. (Where jobs on several GPUs share,
        a lone one's speed follows its other GPUs: no bound, inf.)"""
        view = self._view
        if view.spec.share_multi_gpu:
            return math.inf
        most, now = math.inf, self._now
        for index in view.cluster.firsts.values():
            entries = index.entries
            if len(entries) > waiting:
                if waiting:
                    value = max(index.groups[number].solo_time(0, now) for _, number in entries[:waiting + 1])
                else:  # (the usual case, without a generator)
                    value = index.groups[entries[0][1]].solo_time(0, now)
                most = value if value < most else most
        return most

    def wait(self, waiting: int) -> float:
        if waiting > self._most:
            raise ValueError(f"RoundWaits: {waiting} jobs waiting before an offer; at most {self._most} were declared")
        self.read()
        return self._ends.least(self._now, min(waiting, len(self._ends) - 1))


@register("coloc")
@register("coloc-fifo", order="fifo")  # the same rule in FIFO order (ablation: how much comes from reordering)
class Coloc(JctPack):
    """Risk-averse, JCT-aware packing, shortest remaining time first."""
