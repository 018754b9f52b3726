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

The least-cost GPUs are searched, not costed one by one, and an offer that cannot pay against its wait is
declined before any search: coloc.policies.coloc_search (PackingSearch, this class's base), with the same
choices, ties included, as the plain loops.

ISACPP packs whenever no GPU is idle, whatever the pair costs; Horus packs by
utilization even when GPUs are idle; Gandiva learns a bad pair only after
suffering it (coloc-online, coloc.policies.coloc_online, learns from the pairs it runs). `oracle`
(coloc.policies.oracle) is the same rule fed the measured pairs (no spread): an UPPER BOUND, not a predictor.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from coloc.policies.base import fill_idle, register
from coloc.policies.coloc_search import PackingSearch, RoundWaits, solo_left
from coloc.policies.ends import PredictedEnds
from coloc.policies.stages import pair_finish_times, run_stages
from coloc.sim.predictions import Predictions
from coloc.sim.queue import fifo_key


class JctPack(PackingSearch):
    kind = "predictive"
    needs = ("norm",)
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
        self._ends = PredictedEnds(view, lambda job: self._predicted_factor(view, job)) if self.wait_rule else None

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

    def _best_gpu(self, view, job, wait: Callable[[], float] | None, behind: float = 0.0,
                  ceiling: Callable[[], float] | None = None) -> int | None:
        """The admissible GPU adding least completion time; None if the job should wait.

        The least-cost GPU of the sets that gain throughput, and of those that do not if below it (searched only
        under the wait rule); wait(), the job's wait under the wait rule (None: no rule), is asked only if a score
        is not negative, and the job joins the least-scoring GPU that scores below the wait. Under the wait rule
        an offer whose every GPU scores at least its wait is declined before any search (`_declines`; ceiling(),
        if given, is a time the wait does not exceed).
        """
        if wait is not None and self.skip_unpaying and self._declines(view, job, wait, behind, ceiling):
            return None
        best, other = self._least_options(view, job, wait is not None)
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
        packed, alone = self._finish_times(view, device, job.workload, t_new, here)
        return t_new + max(alone) - max(packed)

    def added_time(self, view, device: str, workload: str, t_new: float, gpu: int) -> float:
        """Predicted sum of finish times packed on `gpu` minus (new job alone + residents undisturbed)."""
        packed, alone = self._finish_times(view, device, workload, t_new, view.cluster.residents[gpu])
        return sum(packed) - t_new - sum(alone)

    def _finish_times(self, view, device: str, workload: str, t_new: float, here) -> tuple[list, list]:
        """Predicted finish times (run_stages) of a new job of solo time t_new packed with the jobs `here`, new
        job first, and of the jobs `here` without it."""
        names = [workload] + [j.workload for j in here]
        left = [t_new] + [j.remaining_at(view.now) / j.speed for j in here]

        def pair_norm(i: int, k: int) -> float:
            return self._norm(device, names[i], names[k])

        packed, _ = run_stages(left, pair_norm)
        alone, _ = run_stages(left[1:], lambda i, k: pair_norm(i + 1, k + 1))
        return packed, alone

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


@register("coloc")
@register("coloc-fifo", order="fifo")  # the same rule in FIFO order (ablation: how much comes from reordering)
class Coloc(JctPack):
    """Risk-averse, JCT-aware packing, shortest remaining time first."""
