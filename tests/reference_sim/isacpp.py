"""ISACPP, plainly: every GPU that may take the job is scored, and the job goes to the least (score, GPU).

The decision rule of coloc.policies.isacpp (stated there and in coloc.policies.stages), without its fast
search: jobs go to idle GPUs first (an idle GPU scores 0, a shared one more); with none idle, each
single-GPU job in FIFO order is offered every GPU of every device type it runs on that holds fewer jobs
than the cap and whose set would fit (declared GPU memory, then the world's fit rule), and the job goes to
the GPU of least score, ties to the lowest GPU. A GPU with one resident is scored by the closed form
(stages.pair_score), one with more by the staged score (stages.isacpp_score), as the fast path does, so
the two agree to the last bit.
"""
from __future__ import annotations

from reference_sim.base import Policy, fill_idle, pack_singles, register
from reference_sim.stages import isacpp_score, pair_score, resource_contention, throughput_contention
from reference_sim.volcano import memory_fits


@register("isacpp")
class Isacpp(Policy):
    kind = "predictive"
    needs = ("norm",)

    def __init__(self, max_jobs_per_gpu: int | None = None):
        self.max_jobs_per_gpu = max_jobs_per_gpu

    def reset(self, view) -> None:
        super().reset(view)
        self._preds = view.predictions
        self._per_resource = view.predictions.has_resources()
        cap = view.cluster.cap
        self._cap = min(cap, self.max_jobs_per_gpu) if self.max_jobs_per_gpu else cap

    def schedule(self, view) -> None:
        fill_idle(view)
        pack_singles(view, lambda job: self._best_shared(view, job))

    def _best_shared(self, view, job) -> int | None:
        best = None
        cluster = view.cluster
        for gpu in range(cluster.num_gpus):
            device, here = cluster.gpu_device[gpu], cluster.residents[gpu]
            if not here or len(here) >= self._cap or not all(j.shareable for j in here):
                continue
            if not view.has_solo(device, job.workload):
                continue
            sig = tuple(sorted(j.workload for j in here))
            if not (memory_fits(view, device, sig, job.workload) and view.can_share(device, sig + (job.workload,))):
                continue
            option = (self.gpu_score(view, job, device, gpu), gpu)
            if best is None or option < best:
                best = option
        return None if best is None else best[1]

    def _contention(self, device: str, workload: str, others, factor: float) -> float:
        if self._per_resource:
            return resource_contention([self._preds.resource_ratios(device, workload, o) for o in others])
        return throughput_contention(factor)

    def gpu_score(self, view, job, device: str, gpu: int) -> float:
        residents = view.cluster.residents[gpu]
        t_new = job.remaining / view.speed(device, job.workload)
        norm = self._preds.norm
        if len(residents) == 1:
            old = residents[0]
            n_new, n_old = norm(device, job.workload, old.workload), norm(device, old.workload, job.workload)
            c_new = self._contention(device, job.workload, (old.workload,), n_new)
            c_old = self._contention(device, old.workload, (job.workload,), n_old)
            return pair_score(t_new, old.remaining_at(view.now) / old.speed, n_new, n_old, c_new, c_old)
        names = [job.workload] + [m.workload for m in residents]
        remaining = [t_new] + [m.remaining_at(view.now) / m.speed for m in residents]
        return isacpp_score(remaining, lambda i, k: norm(device, names[i], names[k]),
                            lambda i, active, factors: self._contention(
                                device, names[i], [names[k] for k in active if k != i], factors[i]))
