"""ISACPP: multi-stage interference score on predicted co-located performance.

For a candidate GPU, the jobs already there plus the new job run in stages
(each ends when the first job finishes). In a stage a job's contention is the
sum over resources of co-located demand over solo demand; its interference is
the sum over its stages of (stage length / its solo remaining time) x
contention. The GPU's score is the new job's interference plus the mean
interference of the jobs already there; an idle GPU scores the new job alone.
The job goes to the GPU of least score, in FIFO order.

Adaptation to Gavel data (no per-resource co-location measurements):
resources are (1) time, contention 1 / predicted normalized throughput, and
(2) SM utilization, contention max(1, sum of the stage's predicted solo
utilizations) (demand over the GPU's capacity) when utilization predictions
are given. Remaining times use the jobs' known durations, as ISACPP assumes
known epoch counts. Predicted slowdowns are >= 1, so an idle GPU always
scores below a shared one: shared GPUs are scored only when none is idle.
Queue order is FIFO with backfilling (a job that does not fit is passed over).
"""
from __future__ import annotations

from reference_sim.base import Policy, fill_idle, pack_singles, register
from coloc.policies.stages import run_stages


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
        self._util = self.use_util and view.predictions.has_util()
        cap = view.cluster.cap
        self._cap = min(cap, self.max_jobs_per_gpu) if self.max_jobs_per_gpu else cap

    def schedule(self, view) -> None:
        fill_idle(view)
        pack_singles(view, lambda job: self._best_shared(view, job))

    def _best_shared(self, view, job) -> int | None:
        best_score, best_gpu = None, None
        for device in view.cluster.devices:
            if not view.has_solo(device, job.workload):
                continue
            t_new = job.remaining / view.speed(device, job.workload)
            for sig, gpus in view.cluster.shareable_groups(device):
                if len(sig) >= self._cap or not view.can_share(device, sig + (job.workload,)):
                    continue
                if len(sig) == 1:
                    scores = self._pair_scores(view, device, job.workload, t_new, sig[0], gpus)
                else:
                    scores = [(self.gpu_score(view, job, device, gpu), gpu) for gpu in gpus]
                for score, gpu in scores:
                    if best_score is None or (score, gpu) < (best_score, best_gpu):
                        best_score, best_gpu = score, gpu
        return best_gpu

    def _contention(self, device: str, factor: float, workloads) -> float:
        if not self._util:
            return 1.0 / factor
        return 1.0 / factor + max(1.0, sum(self._preds.util(device, w) for w in workloads))

    def _pair_scores(self, view, device: str, new: str, t_new: float, old: str, gpus):
        """gpu_score in closed form for GPUs holding one job of workload `old`."""
        n_new, n_old = self._preds.norm(device, new, old), self._preds.norm(device, old, new)
        c_new, c_old = self._contention(device, n_new, (new, old)), self._contention(device, n_old, (new, old))
        alone_new, alone_old = self._contention(device, 1.0, (new,)), self._contention(device, 1.0, (old,))
        out = []
        for gpu in gpus:
            resident = view.cluster.residents[gpu][0]
            t_old = resident.remaining_at(view.now) / resident.speed
            stage = min(t_new / n_new, t_old / n_old)
            i_new = stage / t_new * c_new + (t_new - n_new * stage) / t_new * alone_new
            i_old = stage / t_old * c_old + (t_old - n_old * stage) / t_old * alone_old
            out.append((i_new + i_old, gpu))
        return out

    def gpu_score(self, view, job, device: str, gpu: int) -> float:
        """New job's interference plus the mean of the residents' interference on `gpu`."""
        members = [job] + view.cluster.residents[gpu]
        remaining = [job.remaining / view.speed(device, job.workload)]
        remaining += [m.remaining_at(view.now) / m.speed for m in members[1:]]
        names = [m.workload for m in members]
        norm = self._preds.norm

        def pair_norm(i: int, k: int) -> float:
            return norm(device, names[i], names[k])

        _, stages = run_stages(remaining, pair_norm)
        interference = [0.0] * len(members)
        for length, active, factors in stages:
            for i in active:
                contention = self._contention(device, factors[i], [names[k] for k in active])
                interference[i] += length / remaining[i] * contention
        return interference[0] + sum(interference[1:]) / (len(members) - 1)
