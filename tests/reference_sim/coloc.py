"""coloc's own policy: risk-averse, JCT-aware packing (its oracle upper bound is in `oracle`).

1. Shortest remaining time first (`order='sjf'`): the same knowledge of
   durations that ISACPP's remaining times assume; `order='fifo'` is the
   ablation without reordering.
2. Idle GPUs first. With none idle, a single-GPU job may join a GPU if the
   set's pessimistic combined normalized throughput, sum over its jobs of
   (prediction - risk x predicted spread), is at least `min_combined` (the
   pair gains throughput, with confidence: the spread keeps the policy off
   pairs the predictor is unsure of), or, failing that, if packing still
   lowers the predicted sum of completion times of the jobs involved compared
   with waiting (`wait_rule`): the job would otherwise start when the k-th
   running job is predicted to end, k = its place among this round's waiting
   jobs. So a throughput-losing pair is formed only when the wait is long.
3. Among allowed GPUs it takes the one that adds the least completion time to
   the jobs involved: (new job's and residents' predicted finish times when
   packed) - (new job alone + residents undisturbed), the JCT of both jobs.

ISACPP packs whenever no GPU is idle, whatever the pair costs; Horus packs by
utilization even when GPUs are idle; Gandiva learns a bad pair only after
suffering it. `oracle` (coloc.policies.oracle) is the same rule fed the
measured pairs (no spread): an UPPER BOUND, not a predictor.
"""
from __future__ import annotations

from reference_sim.base import Policy, fill_idle, register
from reference_sim.predictions import Predictions
from reference_sim.queue import fifo_key
from reference_sim.stages import pair_finish_times, run_stages


class JctPack(Policy):
    kind = "predictive"
    needs = ("norm",)

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
        cap = view.cluster.cap
        self._cap = min(cap, self.max_jobs_per_gpu) if self.max_jobs_per_gpu else cap

    def _predictions(self, view) -> Predictions:
        return view.predictions

    def schedule(self, view) -> None:
        fill_idle(view)
        cluster = view.cluster
        if cluster.max_free() > 0 or not cluster.any_shareable():
            return
        ends, waiting = None, 0
        for job in view.queue.first_singles(self.lookahead or len(view.queue)):
            if not cluster.any_shareable():
                return
            if self.wait_rule and ends is None:
                ends = self._predicted_ends(view)
            wait = ends[min(waiting, len(ends) - 1)] if ends else None
            behind = (len(view.queue) - 1) / view.cluster.num_gpus
            gpu = self._best_gpu(view, job, wait, behind)
            if gpu is None:
                waiting += 1
            else:
                view.place(job, (gpu,))

    def _predicted_ends(self, view) -> list[float]:
        """Sorted predicted times until each running job ends (co-located ones at predicted speed)."""
        ends = []
        for job in view.running.values():
            factor = 1.0  # a gang job runs at its slowest GPU
            for gpu in job.gpus:
                here = 1.0
                for other in view.cluster.residents[gpu]:
                    if other is not job:
                        here *= self._norm(job.device, job.workload, other.workload)
                factor = min(factor, here)
            ends.append(job.remaining_at(view.now) / job.speed / factor)
        return sorted(ends)

    def _norm(self, device: str, a: str, b: str) -> float:
        """Pessimistic predicted normalized throughput of a next to b: prediction - risk x spread."""
        key = (device, a, b)
        value = self._cache.get(key)
        if value is None:
            value = self._preds.norm(device, a, b) - self.risk * self._preds.std(device, a, b)
            value = self._cache[key] = min(max(value, 0.01), 1.0)
        return value

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

    def _best_gpu(self, view, job, wait: float | None, behind: float) -> int | None:
        """The GPU whose packing pays most against the job waiting; None if the job should wait.

        Candidates: the least-cost GPU among sets that gain throughput, and the least-cost among those that do
        not if below it. A candidate pays if cost - behind x saved GPU time < wait; the least such is taken."""
        best, other = None, None
        for device in view.cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            t_new = job.remaining / view.speed(device, job.workload)
            for sig, gpus in view.cluster.shareable_groups(device):
                members = sig + (job.workload,)
                if len(sig) >= self._cap or not view.can_share(device, members):
                    continue
                gains_throughput = self.admissible(device, members)
                if not gains_throughput and wait is None:
                    continue
                for gpu, cost in self._added_times(view, device, job.workload, t_new, sig, gpus):
                    if gains_throughput and (best is None or (cost, gpu) < best):
                        best = (cost, gpu)
                    if not gains_throughput and (other is None or (cost, gpu) < other):
                        other = (cost, gpu)
        if other is not None and best is not None and not other < best:
            other = None
        if wait is None:
            return None if best is None else best[1]
        chosen = None
        for option in (other, best):
            if option is None:
                continue
            score = option[0] - behind * self._saved(view, job, option[1])
            if score < 0.0 or score < wait:
                if chosen is None or score < chosen[0]:
                    chosen = (score, option[1])
        return None if chosen is None else chosen[1]

    def _saved(self, view, job, gpu: int) -> float:
        """Predicted GPU time saved by packing: t_new + busy time without the job - busy time with it."""
        device, here, now = view.cluster.gpu_device[gpu], view.cluster.residents[gpu], view.now
        t_new = job.remaining / view.speed(device, job.workload)
        if len(here) == 1:
            old = here[0]
            t_old = (old.remaining - old.rate * (now - old.last_update)) / old.speed
            f_new, f_old = pair_finish_times(t_new, t_old, self._norm(device, job.workload, old.workload),
                                             self._norm(device, old.workload, job.workload))
            return t_new + t_old - (f_new if f_new > f_old else f_old)
        names = [job.workload] + [j.workload for j in here]
        left = [t_new] + [j.remaining_at(now) / j.speed for j in here]
        packed, _ = run_stages(left, lambda i, k: self._norm(device, names[i], names[k]))
        alone, _ = run_stages(left[1:], lambda i, k: self._norm(device, names[i + 1], names[k + 1]))
        return t_new + max(alone) - max(packed)

    def _added_times(self, view, device: str, workload: str, t_new: float, sig, gpus):
        """(gpu, completion time packing adds) per GPU of one group; closed form for one resident."""
        if len(sig) > 1:
            return [(gpu, self.added_time(view, device, workload, t_new, gpu)) for gpu in gpus]
        n_new, n_old = self._norm(device, workload, sig[0]), self._norm(device, sig[0], workload)
        residents, now = view.cluster.residents, view.now
        out = []
        for gpu in gpus:
            old = residents[gpu][0]
            t_old = (old.remaining - old.rate * (now - old.last_update)) / old.speed
            f_new, f_old = pair_finish_times(t_new, t_old, n_new, n_old)
            out.append((gpu, f_new + f_old - t_new - t_old))
        return out

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


@register("coloc")
class Coloc(JctPack):
    """Risk-averse, JCT-aware packing, shortest remaining time first."""


@register("coloc-fifo")
class ColocFifo(JctPack):
    """The same packing rule in FIFO order (ablation: how much comes from reordering)."""

    def __init__(self, order: str = "fifo", **params):
        super().__init__(order=order, **params)
