"""coloc's own policy: JCT-aware, risk-averse packing (and its oracle upper bound).

Idle GPUs go first. When none is idle, a queued single-GPU job j is packed
next to the jobs on a GPU only if that lowers the predicted sum of completion
times of everyone involved, compared with waiting:

  wait:  j starts when the k-th running job is predicted to end (k = its place
         among the jobs of this round that could not start), the GPU's jobs
         run on undisturbed;
  pack:  all of them run in stages with pessimistic normalized throughputs
         (prediction - risk x predicted spread).

ISACPP packs whenever no GPU is idle, whatever the cost to the job already
running; Horus packs even when GPUs are idle. This rule packs only pairs whose
predicted combined progress beats waiting, and the spread term keeps it off
pairs the predictor is unsure of. The queue is ordered shortest remaining
time first (`order='sjf'`, the same knowledge of durations that ISACPP's
remaining times use); `order='fifo'` gives the ablation without reordering.
Each round offers the first `lookahead` queued single-GPU jobs for packing.
`oracle` is the same rule fed the measured pairs: an UPPER BOUND, not a predictor.
"""
from __future__ import annotations

import bisect

from coloc.policies.base import Policy, fill_idle, register
from coloc.policies.stages import pair_finish_times, run_stages
from coloc.sim.predictions import Predictions
from coloc.sim.queue import fifo_key


class JctPack(Policy):
    kind = "predictive"
    needs = ("norm",)

    def __init__(self, order: str = "sjf", risk: float = 1.0, margin_s: float = 0.0,
                 lookahead: int = 128, max_jobs_per_gpu: int | None = None):
        if order not in ("sjf", "fifo"):
            raise ValueError(f"policy coloc: order={order!r}; expected 'sjf' or 'fifo'")
        self.order = order
        self.risk = risk
        self.margin_s = margin_s
        self.lookahead = lookahead
        self.max_jobs_per_gpu = max_jobs_per_gpu

    def queue_key(self, job) -> tuple:
        return (job.remaining, *fifo_key(job)) if self.order == "sjf" else fifo_key(job)

    def reset(self, sim) -> None:
        super().reset(sim)
        self._preds = self._predictions(sim)
        self._cache: dict[tuple[str, str, str], float] = {}
        cap = sim.cluster.cap
        self._cap = min(cap, self.max_jobs_per_gpu) if self.max_jobs_per_gpu else cap

    def _predictions(self, sim) -> Predictions:
        return sim.predictions

    def schedule(self, sim) -> None:
        fill_idle(sim)
        cluster = sim.cluster
        if cluster.max_free() > 0 or not cluster.any_shareable():
            return
        ends = self._predicted_ends(sim)
        waiting = 0
        for job in sim.queue.first_singles(self.lookahead):
            if not cluster.any_shareable():
                return
            wait = ends[min(waiting, len(ends) - 1)]
            gpu = self._best_pack(sim, job, wait)
            if gpu is None:
                waiting += 1
            else:
                sim.place(job, (gpu,))

    def _norm(self, device: str, a: str, b: str) -> float:
        """Pessimistic predicted normalized throughput: prediction - risk x spread."""
        key = (device, a, b)
        value = self._cache.get(key)
        if value is None:
            value = self._preds.norm(device, a, b) - self.risk * self._preds.std(device, a, b)
            value = self._cache[key] = max(value, 0.01)
        return value

    def _solo_left(self, sim, job) -> float:
        """Solo time left for a running job (its remaining work at its device's solo speed)."""
        return job.remaining_at(sim.now) / job.speed

    def _predicted_ends(self, sim) -> list[float]:
        """Sorted predicted times until each running job ends (co-located ones at predicted speed)."""
        ends = []
        for job in sim.running.values():
            others = [j for g in job.gpus for j in sim.cluster.residents[g] if j is not job]
            factor = 1.0
            for other in others:
                factor *= self._norm(job.device, job.workload, other.workload)
            bisect.insort(ends, self._solo_left(sim, job) / factor)
        return ends

    def _best_pack(self, sim, job, wait: float) -> int | None:
        best = None
        for device in sim.cluster.devices:
            if not sim.truth.has_solo(device, job.workload):
                continue
            t_new = job.remaining / sim.truth.speed(device, job.workload)
            for sig, gpus in sim.cluster.shareable_groups(device):
                if len(sig) >= self._cap or not sim.can_share(device, sig + (job.workload,)):
                    continue
                for gpu, gain in self._gains(sim, device, job.workload, t_new, sig, gpus, wait):
                    if gain > self.margin_s and (best is None or (-gain, gpu) < best):
                        best = (-gain, gpu)
        return None if best is None else best[1]

    def _gains(self, sim, device: str, workload: str, t_new: float, sig, gpus, wait: float):
        """(gpu, predicted gain) for each GPU of one group; closed form for a single resident."""
        if len(sig) > 1:
            return [(gpu, self.pack_gain(sim, device, workload, t_new, gpu, wait)) for gpu in gpus]
        n_new, n_old = self._norm(device, workload, sig[0]), self._norm(device, sig[0], workload)
        residents, now = sim.cluster.residents, sim.now
        out = []
        for gpu in gpus:
            old = residents[gpu][0]
            t_old = (old.remaining - old.rate * (now - old.last_update)) / old.speed
            f_new, f_old = pair_finish_times(t_new, t_old, n_new, n_old)
            out.append((gpu, wait + t_new + t_old - f_new - f_old))
        return out

    def pack_gain(self, sim, device: str, workload: str, t_new: float, gpu: int, wait: float) -> float:
        """Predicted sum of completion times if the job waits minus if it is packed on `gpu`."""
        here = sim.cluster.residents[gpu]
        names = [workload] + [j.workload for j in here]
        left = [t_new] + [self._solo_left(sim, j) for j in here]

        def pair_norm(i: int, k: int) -> float:
            return self._norm(device, names[i], names[k])

        packed, _ = run_stages(left, pair_norm)
        alone, _ = run_stages(left[1:], lambda i, k: pair_norm(i + 1, k + 1))
        return (wait + t_new + sum(alone)) - sum(packed)


@register("coloc")
class Coloc(JctPack):
    """JCT-aware, risk-averse packing, shortest remaining time first."""


@register("coloc-fifo")
class ColocFifo(JctPack):
    """The same packing rule in FIFO order (ablation: how much comes from reordering)."""

    def __init__(self, order: str = "fifo", **params):
        super().__init__(order=order, **params)


@register("oracle")
class Oracle(JctPack):
    """ORACLE upper bound: coloc's rule on the measured pairs (no prediction error, no spread)."""

    kind = "oracle"
    needs = ()

    def _predictions(self, sim) -> Predictions:
        return Predictions.from_truth(sim.truth)
