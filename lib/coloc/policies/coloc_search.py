"""coloc's exact search: the GPU its rule (coloc.policies.coloc) would pick, found without costing every GPU.

At cluster scale no decision costs every GPU. Next to one resident of solo remaining time t the new
job adds (2 - n_new - n_old) min(t / n_old, t_new / n_new) in exact arithmetic, which never falls with
t (norms are at most 1): a group of one-job GPUs, ordered by t (GpuGroup.by_finish), is scanned from
its least t until no GPU further on can cost less, and its value at the least t bounds the whole group
(`lone_floor`), so groups are visited least bound first and the search stops at the first bound above the
best found (the bounds allow for rounding; GPUs that tie up to rounding are costed as arrays); the groups a
job type may join are kept while the same groups are open. An offer that cannot pay against its wait is
declined before any search (`PackingSearch._declines`): its score next to one resident never falls with t
either, so the device's groups, read by their first finish (coloc.sim.firsts) until a bound over all of them
reaches the wait, prove it (at 100,000 jobs on 10,000 V100s: 5 offers in 6, each reading about 2 groups),
tested first against a time the wait does not exceed, read off the first finishers of the one-job GPUs
(RoundWaits.at_most). The wait rule's predicted ends are kept across rounds (coloc.policies.ends), read only
where that test or a candidate's score (not negative) needs the wait, and the k-th least is found among a
few candidates, not all running jobs. Costs are the scalar expressions' floating-point operations, so the
choices, ties included, are those of the plain loops (tests/reference_sim/coloc.py).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from coloc.policies.base import Policy
from coloc.policies.ends import PredictedEnds
from coloc.policies.lone import REL
from coloc.policies.stages import pair_finish_times

UNKNOWN = object()
VECTOR_MIN = 16  # an order whose added times hardly grow with t is costed as arrays from this many GPUs


@dataclass(frozen=True, slots=True)  # (slots: the search reads these fields in its inner loops)
class LoneBounds:
    """What the test of an offer (`PackingSearch._declines`) reads of a set of one single-GPU job and the new job."""
    gain: float        # n_new + n_old - 1: the GPU time saved per second the two run together
    per_new: float     # 1 / n_new
    per_old: float     # 1 / n_old
    new_kept: float    # per_new x (1 - gain)
    new_gained: float  # per_new x gain
    old_kept: float    # per_old x (1 - gain)
    old_gained: float  # per_old x gain


@dataclass(frozen=True, slots=True)
class JoinRule:
    """How a job type may join the GPUs of one group (`PackingSearch._joins`); the numbers after `lone` are 0 and
    `bounds` None unless each GPU holds one single-GPU job."""
    gains_throughput: bool                # the rule's `admissible`: joined without the wait rule too
    lone: tuple[float, float] | None      # (n_new, n_old) where each GPU holds one single-GPU job, else None
    up_old: float                         # (2 - n_new - n_old) / n_old: the added time per second of t (lone_floor)
    up_new: float                         # (2 - n_new - n_old) / n_new: the same per second of t_new
    e_new: float                          # REL (1 + 1 / n_new): the floor's rounding per second of t_new
    e_old: float                          # REL (1 + 1 / n_old): the same per second of t
    bounds: LoneBounds | None


class PackingSearch(Policy):
    """The least-cost GPUs of coloc's rule, searched exactly, and the test that declines an offer unsearched.

    The rule (a subclass: coloc.policies.coloc.JctPack) gives the costs: `_norm` (pessimistic norms), `admissible`,
    `added_time` (sets of several jobs); this class keeps, per run, the rules of the groups a job type may join."""

    skip_unpaying = True  # decline, unsearched, an offer that provably cannot pay against its wait (_declines)

    def reset(self, view) -> None:
        super().reset(view)
        self._rules: dict[tuple[str, str], dict] = {}
        self._joinable_at: dict[tuple[str, str], tuple[int, dict, tuple]] = {}  # (open_changes, rules, kept)
        self._cap = view.cluster.cap  # (the view's cluster is capped at max_jobs_per_gpu already)

    def _least_options(self, view, job, losing: bool):
        """(least (added time, gpu) over the GPUs whose set gains throughput, least over those whose set does not
        if below it), each None if there is none; the second searched only if `losing`. The groups are visited
        least floor first (lone_floor; -inf where GPUs hold several jobs), up to the first floor above the best."""
        gaining, others, now, residents = [], [], view.now, view.cluster.residents
        for device in view.cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            t_new = job.remaining / view.speed(device, job.workload)
            for sig, gpus, rule in self._joinable(view, device, job.workload):
                gains_throughput = rule.gains_throughput
                if not gains_throughput and not losing:
                    continue
                floor = -math.inf if rule.lone is None else lone_floor(now, t_new, rule, gpus, residents)
                (gaining if gains_throughput else others).append((floor, device, t_new, sig, gpus, rule.lone))
        best = self._least(view, job.workload, gaining, None)
        return best, self._least(view, job.workload, others, best)

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
                bounds = lone.by_number[number]
                low, high = lone_span(now, index.groups[number], residents)  # (by_finish: pending may change)
                a, b = t_new * bounds.per_new, low * bounds.per_old
                value = (1.0 - grow * bounds.gain) * (a if a < b else b) - rel * (
                    1.0 + grow * (a + t_new + (abs(low) + abs(high)) * (1.0 + bounds.per_old)))
                if value < bar and not lowered(value):
                    return False
            for key, number in index.entries:
                low = key - now - rel * (abs(key) + 1.0)  # at most the t of this group's GPUs and all further on
                if old_rate * low - margin >= bar:
                    break  # every further group, joinable or not, scores at least the bar
                bounds = lone.by_number.get(number)
                if bounds is not None:
                    a, b = t_new * bounds.per_new, low * bounds.per_old
                    value = (1.0 - grow * bounds.gain) * (a if a < b else b) - margin
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
        """[(signature, GPUs, JoinRule)] of the open groups of `device` that `workload` may join, in the cluster's
        order of its open groups (see _kept_joinable)."""
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
        lone = None if any(rule.lone is None for _, _, rule in joinable) else LoneRules(joinable)
        self._joinable_at[key] = (opened, rules, (joinable, lone))
        return joinable, lone

    def _rules_of(self, device: str, workload: str) -> dict:
        """{signature: _joins(view, device, workload, signature)} as far as asked."""
        rules = self._rules.get((device, workload))
        if rules is None:
            rules = self._rules[(device, workload)] = {}
        return rules

    def _joins(self, view, device: str, workload: str, sig) -> JoinRule | None:
        """How `workload` may join GPUs holding `sig`: None if not (the cap, memory). A set that is not admissible
        (gaining throughput with confidence) may be joined only under the wait rule."""
        members = sig + (workload,)
        if len(sig) >= self._cap or not view.can_share(device, members):
            return None
        if len(sig) > 1 or view.spec.share_multi_gpu:
            return JoinRule(self.admissible(device, members), None, 0.0, 0.0, 0.0, 0.0, None)
        n_new, n_old = self._norm(device, workload, sig[0]), self._norm(device, sig[0], workload)
        k, gain, per_new, per_old = 2.0 - n_new - n_old, n_new + n_old - 1.0, 1.0 / n_new, 1.0 / n_old
        return JoinRule(self.admissible(device, members), (n_new, n_old), k / n_old, k / n_new,
                        REL * (1.0 + 1.0 / n_new), REL * (1.0 + 1.0 / n_old),
                        LoneBounds(gain, per_new, per_old, per_new * (1.0 - gain), per_new * gain,
                                   per_old * (1.0 - gain), per_old * gain))

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
        least = None
        for gpu in sorted(group.unordered()):  # placed in this round: not in the kept order, costed one by one
            option = (pair_added(t_new, solo_left(residents[gpu][0], now), n_new, n_old), gpu)
            least = option if least is None or option < least else least
        if not order:
            return below(least, beat)
        if (2.0 - n_new - n_old) / n_old <= REL and len(order) >= VECTOR_MIN:
            option = self._cheapest_ordered(view, t_new, n_new, n_old, group, len(order))
            return below(option if least is None or option < least else least, beat)
        slack = allowance(now, t_new, n_new, n_old, order)
        for i, (key, gpu) in enumerate(order):
            t = group.solo_time(i, now)
            option = (pair_added(t_new, t, n_new, n_old), gpu)
            least = option if least is None or option < least else least
            limit = least[0] if beat is None or least[0] < beat[0] else beat[0]
            if pair_added(t_new, t - REL * (abs(key) + 1.0), n_new, n_old) - slack > limit:
                break  # the GPUs further on have t beyond that
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
        return [(gpu, pair_added(t_new, solo_left(residents[gpu][0], now), n_new, n_old)) for gpu in gpus]


def pair_added(t_new: float, t_old: float, n_new: float, n_old: float) -> float:
    """Completion time a new job of solo time t_new adds packed next to one resident of solo remaining time t_old:
    both finish times packed (pair_finish_times) less each alone."""
    f_new, f_old = pair_finish_times(t_new, t_old, n_new, n_old)
    return f_new + f_old - t_new - t_old


def solo_left(job, now: float) -> float:
    """A running job's solo remaining time at `now` (Job.remaining_at(now) / speed)."""
    return (job.remaining - job.rate * (now - job.last_update)) / job.speed


def lone_floor(now: float, t_new: float, rule: JoinRule, group, residents) -> float:
    """An added time no GPU of a group of one-job GPUs goes below. Next to one resident of solo remaining time t
    the new job adds, in exact arithmetic, (2 - n_new - n_old) min(t / n_old, t_new / n_new) (see
    PackingSearch._cheapest_lone): the floor is its value at the least t of the group (that of the order's first,
    less the order's rounding; GPUs outside the order by their residents), less twice the rounding allowance (once
    for this value, once for the GPUs' added times). It is computed for every group of every decision: a group whose
    GPUs are all in the order (the usual case) visits no resident."""
    order = group.by_finish(now)
    unordered = group.unordered()
    if unordered:
        times = [solo_left(residents[gpu][0], now) for gpu in unordered]
        low, most = min(times), max(map(abs, times))
        if order:
            first, last = order[0][0], order[-1][0]
            low = min(low, first - now - REL * (abs(first) + 1.0))
            most = max(most, abs(first - now) + abs(last - now))
    else:
        first, last = order[0][0], order[-1][0]
        low, most = first - now - REL * (abs(first) + 1.0), abs(first - now) + abs(last - now)
    low, high = rule.up_old * low, rule.up_new * t_new
    return (low if low < high else high) - 2.0 * (REL + t_new * rule.e_new + (most + 1.0) * rule.e_old)


class LoneRules:
    """What coloc's test of an offer (PackingSearch._declines) reads of the rules of the open groups of one-job GPUs
    a job type may join on a device: by group number (GpuGroup.number), the rules' LoneBounds, and bounds over them
    all: the greatest 1 / n_new (`most_new`) and 1 / n_old (`most_old`), and least_rates's."""

    __slots__ = ("by_number", "most_new", "most_old", "_new", "_old")

    def __init__(self, joinable: list[tuple]):
        by_number, most_new, most_old = {}, 0.0, 0.0
        new_low, new_high, old_low, old_high = math.inf, 0.0, math.inf, 0.0  # see least_rates
        for _, gpus, rule in joinable:  # (one pass, no calls: the lists are rebuilt whenever a group opens or empties)
            bounds = by_number[gpus.number] = rule.bounds
            most_new = bounds.per_new if bounds.per_new > most_new else most_new
            most_old = bounds.per_old if bounds.per_old > most_old else most_old
            new_low = bounds.new_kept if bounds.new_kept < new_low else new_low
            new_high = bounds.new_gained if bounds.new_gained > new_high else new_high
            old_low = bounds.old_kept if bounds.old_kept < old_low else old_low
            old_high = bounds.old_gained if bounds.old_gained > old_high else old_high
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
    order, and of the floor's value (lone_floor): a few units in the last place of the largest terms, t_new /
    n_new and t / n_old."""
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
