"""ISACPP as released: the Volcano plugin's node score, then Volcano's GPU-sharing predicate picks the GPU.

In the released scheduler (self-cream/ISACPP, scheduler/ISACPP/pisDL.go, `nodeOrderFn`) the score server
returns ISACPP's interference for every GPU of a node, and the plugin scores the node by its worst GPU:
min over GPUs of 1,000,000 - 1,000 x interference, so the node whose most interfering GPU interferes
least wins. The GPU is then chosen by Volcano's GPU-sharing predicate (volcano-sh/volcano,
pkg/scheduler/plugins/predicates/gpu.go, `predicateGPUbyMemory`): the lowest-index GPU of the node whose
idle memory covers the job's request. So the score never picks the GPU: on a node whose GPU 0 runs a job
and whose GPU 1 is idle, a new job shares GPU 0 while it fits.

Here: each GPU's interference is isacpp's score (coloc.policies.isacpp; 0 for an idle GPU); the worst is
taken over the node's GPUs whose set with the new job can be predicted (the world's fit rule allows it and
its residents may share; the reference scores every GPU, one whose set cannot run included); a node is a
candidate when one of its GPUs takes the job (below the cluster's cap, declared memory fitting the device,
the world's fit rule), and the job goes to the lowest-index such GPU of the candidate node of least worst
score. Volcano adds the plugin's score to its default node order's, which scores every node alike (see
coloc.policies.volcano: leastrequested and binpack cancel, balancedresource is level under its assumption), and
draws at random among equal totals: nodes of equal worst score are drawn among as `volcano` draws
(coloc.policies.volcano.draw, keyed by the job's id). Queue order is FIFO and a job
that fits nowhere is passed over, as Volcano does; a job of several GPUs takes whole idle GPUs on as few
nodes as possible. Every GPU of every node is scored for each job: a cost that grows with the cluster
(the released plugin asks its score server once per node).
"""
from __future__ import annotations

from coloc.policies.base import first_come_with_skipping, register, whole_idle_gpus
from coloc.policies.isacpp import Isacpp
from coloc.policies.volcano import draw


@register("isacpp-released")
class IsacppReleased(Isacpp):

    def reset(self, view) -> None:
        super().reset(view)
        cluster = view.cluster
        self._node_gpus: list[list[int]] = [[] for _ in cluster.node_device]
        for gpu, node in enumerate(cluster.gpu_node):
            self._node_gpus[node].append(gpu)

    def schedule(self, view) -> None:
        first_come_with_skipping(view, self.choose)

    def choose(self, view, job) -> tuple[int, ...] | None:
        """The GPUs the released scheduler gives `job`; None if no node takes it."""
        cluster = view.cluster
        if job.num_gpus > 1 or not job.shareable:
            return whole_idle_gpus(view, job)
        best, tied = None, []  # least worst score, [(node, gpu)] of the candidate nodes that have it
        for node, device in enumerate(cluster.node_device):
            if not view.has_solo(device, job.workload):
                continue
            worst, target = 0.0, None
            for gpu in self._node_gpus[node]:
                here = cluster.residents[gpu]
                sig = tuple(sorted(j.workload for j in here))
                if here and not (all(j.shareable for j in here) and view.can_share(device, sig + (job.workload,))):
                    continue  # not scored: the set cannot run (nor be predicted)
                worst = max(worst, self.gpu_score(view, job, device, gpu))
                if target is None and len(here) < self._cap and (not here or self.fits(view, device, sig, job.workload)):
                    target = gpu
            if target is not None and (best is None or worst <= best):
                if best is None or worst < best:
                    best, tied = worst, []
                tied.append((node, target))
        return (tied[draw(job.job_id, 0) % len(tied)][1],) if tied else None
