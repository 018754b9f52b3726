"""Volcano with GPU memory sharing, the baseline ISACPP compares itself with, blind to interference: `volcano` places
a job as Volcano's default scheduler does (a node by its node order, then a GPU of that node by the GPU-share
predicate); `volcano-firstfit` takes the lowest-index GPU of the whole cluster whose free memory takes the job.

What Volcano does, read in volcano-sh/volcano (the code decides: coloc's earlier `volcano` chose the GPU over the
whole cluster, where Volcano first chooses a node; and the default node order does not prefer the node with fewest
jobs, as a reading of leastrequested alone would, since binpack cancels it):

* installer/helm/chart/volcano/config/volcano-scheduler.conf (the default configuration): actions enqueue, allocate,
  backfill; the plugins priority, gang, conformance, then overcommit, drf, predicates, proportion, nodeorder and
  binpack. GPU sharing is switched on by the predicates plugin's argument `predicate.GPUSharingEnable: true`
  (docs/user-guide/how_to_use_gpu_sharing.md), with the same plugins.
* pkg/scheduler/util/scheduler_helper.go: allocate keeps the nodes that pass every predicate (`PredicateNodes`),
  scores each by the sum of the node-order plugins (`PrioritizeNodes`) and takes the highest score, a node drawn at
  random among equal scores (`SelectBestNode`: rand.Intn over the tied nodes).
* pkg/scheduler/plugins/nodeorder/nodeorder.go: leastrequested (weight 1), balancedresource (weight 1), nodeaffinity,
  podaffinity, tainttoleration, imagelocality and podtopologyspread; mostrequested has weight 0. The resource scores
  read the pod's CPU and memory requests (the Kubernetes NodeResources scores: leastrequested, 100 x the node's free
  share after the pod, each resource rounded down to a whole point, averaged over CPU and memory; balancedresource,
  100 x (1 - how far apart the node's CPU and memory fractions are; newer releases add nvidia.com/gpu, whole GPUs,
  which a GPU-sharing pod does not ask for)). The pod's GPU-memory request (volcano.sh/gpu-memory) counts in none of
  them.
* pkg/scheduler/plugins/binpack/binpack.go: weight 1, CPU 1, memory 1, no extended resource unless configured
  (`binpack.resources`): 100 x the node's used share after the pod, averaged over CPU and memory.
  So leastrequested and binpack add up to 100 on every node (up to leastrequested's rounding down, below one point),
  whatever the requests and the node's size: at their default weights they cancel.
* pkg/scheduler/plugins/predicates/gpu.go (`checkNodeGPUSharingPredicate`, `predicateGPUbyMemory`) and
  pkg/scheduler/api/node_info.go (`GetDevicesIdleGPUMemory`: a card's memory less the GPU memory of the pods on it),
  the releases ISACPP's plugin was built on (it reads `NodeInfo.GPUDevices[i].PodMap`; later releases moved the same
  rule to pkg/scheduler/api/devices/nvidia/gpushare/):
  a node passes when one of its GPUs has idle memory covering the request; on the node chosen, the pod gets the
  lowest-index such GPU (the predicates plugin's allocate handler patches the pod with that index). No limit on
  the number of pods per GPU: memory alone.

coloc's model, with what it assumes. Affinities, taints and topology-spread constraints are absent, and every image
is on every node, so those plugins score every node alike. Every pod asks the same share of its node's CPU as of its
memory, so balancedresource scores every node alike (a pod asking unequal shares would make it prefer the node
with fewest pods). Then no node is preferred, and the node is Volcano's random pick among the nodes that pass:
here drawn uniformly among the nodes with a GPU that takes the job, by a pseudo-random stream keyed by the job's id
(`draw`: the same trace gives the same picks). On that node the job takes the lowest-index GPU that takes it.
A GPU takes a job when its device runs the job type (`view.has_solo`), the declared memory of its jobs and the new
one fits the device (`memory_fits`: `view.memory`, measured solo where the data has it, else estimated from the
model graph; true where unknown), the world's rule lets the set run (`view.can_share`: every pair measured as
fitting), and it holds fewer jobs than the cluster's cap: no cap of the policy's own (the scenario's
`max_jobs_per_gpu`, null for none, caps every policy). The queue is first come, first served and a job that fits nowhere is passed over (the next
one is tried); a job of several GPUs, or one that may not share, takes whole idle GPUs (Volcano's gpu-number
predicate) on as few nodes as possible.

The search, without reading every GPU: the groups a job type may join (the cluster's shareable groups by device
type and resident set, every group ever made whose set with the job fits) are kept per job type and renewed when
the cluster makes a new group, and read among the cluster's open (non-empty) groups; the idle GPUs come from the
cluster's nodes-by-idle-count index. A job type that no GPU took is passed over at once until a job comes or goes
(`Cluster.version`). `volcano-firstfit` takes the least of the lowest idle GPU and each fitting group's lowest
GPU. `volcano` counts the GPUs that take the
job (idle ones plus the fitting groups' sizes); with few (at most SCAN_BELOW) it lists their nodes and draws one;
with more, it draws nodes of the job's device types until one has a GPU that takes the job (reading that node's
GPUs): both draws are uniform over the nodes that take the job, and tests/reference_sim/volcano.py makes them by
scanning every GPU.
"""
from __future__ import annotations

from coloc.policies.base import Policy, first_come_with_skipping, register, whole_idle_gpus

SCAN_BELOW = 64  # at most this many GPUs take the job: list their nodes (else draw nodes until one takes it)
MASK = (1 << 64) - 1


def draw(job_id: int, i: int) -> int:
    """The i-th number of job `job_id`'s pseudo-random stream (splitmix64 of the two), in [0, 2^64)."""
    z = (int(job_id) * 0x9E3779B97F4A7C15 + (i + 1) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class _MemoryShare(Policy):
    """What both forms share: which GPUs take a job (memory, the world's rule, the cluster's cap), found from the
    cluster's indexes."""

    kind = "baseline"

    def reset(self, view) -> None:
        super().reset(view)
        cluster = view.cluster
        self._fit: dict[tuple[str, tuple[str, ...]], bool] = {}
        self._groups: dict[str, tuple[int, set]] = {}  # workload -> (groups made, {group that fits})
        self._runs_on: dict[str, list[str]] = {}  # workload -> the device types that run it
        self._failed: dict[str, int] = {}  # workload -> cluster.version when no GPU took it
        self._node_gpus: list[list[int]] = [[] for _ in cluster.node_device]
        for gpu, node in enumerate(cluster.gpu_node):
            self._node_gpus[node].append(gpu)
        self._nodes_of: dict[tuple[str, ...], list[int]] = {}  # device types -> their nodes, in order

    def schedule(self, view) -> None:
        version = view.cluster.version
        first_come_with_skipping(view, self._choose, {w for w, at in self._failed.items() if at == version})

    def _choose(self, view, job) -> tuple[int, ...] | None:
        if job.num_gpus > 1 or not job.shareable:
            return whole_idle_gpus(view, job)
        version = view.cluster.version
        if self._failed.get(job.workload) == version:
            return None  # no GPU took this job type, and no job has come or gone since
        gpu = self._gpu(view, job)
        if gpu is None:
            self._failed[job.workload] = version
            return None
        return (gpu,)

    def _gpu(self, view, job) -> int | None:
        raise NotImplementedError

    def _devices(self, view, workload: str) -> list[str]:
        devices = self._runs_on.get(workload)
        if devices is None:
            devices = self._runs_on[workload] = [d for d in view.cluster.devices if view.has_solo(d, workload)]
        return devices

    def _fits(self, view, device: str, sig: tuple[str, ...], workload: str) -> bool:
        """Whether a `workload` job fits next to the jobs `sig` on a GPU of `device` (memory, then the world's rule)."""
        key = (device, sig + (workload,))
        fit = self._fit.get(key)
        if fit is None:
            fit = self._fit[key] = memory_fits(view, device, sig, workload) and (
                not sig or view.can_share(device, sig + (workload,)))
        return fit

    def _open_groups(self, view, workload: str) -> list:
        """The non-empty shareable groups (GpuGroup) a `workload` job may join: the cluster's open groups of the
        device types that run it, those among the groups ever made that fit (kept until the cluster makes a new
        group: groups are never deleted)."""
        cluster = view.cluster
        made = cluster.groups_made()
        devices = self._devices(view, workload)
        cached = self._groups.get(workload)
        if cached is None or cached[0] != made:
            cached = self._groups[workload] = (made, {
                group for device in devices for sig, group in cluster.shareable[device].items()
                if self._fits(view, device, sig, workload)})
        fitting = cached[1]
        return [group for device in devices for group in cluster.open_groups(device).values() if group in fitting]

    def _takes(self, view, gpu: int, workload: str) -> bool:
        """Whether `gpu` takes a `workload` job (its device runs the job type: the caller's check)."""
        here = view.cluster.residents[gpu]
        device = view.cluster.gpu_device[gpu]
        if not here:
            return self._fits(view, device, (), workload)
        if len(here) >= view.cluster.cap or not all(j.shareable for j in here):
            return False
        return self._fits(view, device, tuple(sorted(j.workload for j in here)), workload)

    def _first_on(self, view, node: int, workload: str) -> int | None:
        """The lowest-index GPU of `node` that takes a `workload` job (the GPU-share predicate); None."""
        for gpu in self._node_gpus[node]:
            if self._takes(view, gpu, workload):
                return gpu
        return None


@register("volcano-firstfit")
class VolcanoFirstFit(_MemoryShare):
    """The lowest-index GPU of the whole cluster that takes the job."""

    def _gpu(self, view, job) -> int | None:
        cluster, workload = view.cluster, job.workload
        best = None
        for device in self._devices(view, workload):
            node = cluster.lowest_free_node(device)
            if node is not None and self._fits(view, device, (), workload):
                gpu = min(cluster.node_free[node])
                best = gpu if best is None else min(best, gpu)
        for group in self._open_groups(view, workload):
            if best is None or group.first() < best:
                best = group.first()
        return best


@register("volcano")
class Volcano(_MemoryShare):
    """A node drawn uniformly among those with a GPU that takes the job (Volcano's node order scores them alike),
    then that node's lowest-index GPU that takes it."""

    def _gpu(self, view, job) -> int | None:
        cluster, workload = view.cluster, job.workload
        devices = self._devices(view, workload)
        idle = sum(cluster.free_count[d] for d in devices if self._fits(view, d, (), workload))
        groups = self._open_groups(view, workload)
        taking = idle + sum(map(len, groups))
        if taking == 0:
            return None
        if taking <= SCAN_BELOW:
            nodes = {cluster.gpu_node[gpu] for group in groups for gpu in group}
            for device in devices:
                if cluster.free_count[device] and self._fits(view, device, (), workload):
                    nodes.update(cluster.idle_nodes(device))
            ordered = sorted(nodes)
            return self._first_on(view, ordered[draw(job.job_id, 0) % len(ordered)], workload)
        key = tuple(devices)
        eligible = self._nodes_of.get(key)
        if eligible is None:
            eligible = self._nodes_of[key] = [n for n, d in enumerate(cluster.node_device) if d in devices]
        i = 1
        while True:
            gpu = self._first_on(view, eligible[draw(job.job_id, i) % len(eligible)], workload)
            if gpu is not None:
                return gpu
            i += 1


def memory_fits(view, device: str, sig: tuple[str, ...], workload: str, headroom: float = 0.0) -> bool:
    """Whether the declared memory of the jobs `sig` and a new `workload` job fits one GPU of `device` with more
    than `headroom` bytes left free (strictly: headroom 0 asks only that the sum not exceed the memory). True where
    a job's or the device's memory is unknown (the caller's other rules decide)."""
    capacity = view.device_memory(device)
    needs = [view.memory(device, w) for w in (*sig, workload)]
    if capacity is None or any(n is None for n in needs):
        return True
    left = capacity - sum(needs)
    return left > headroom if headroom > 0 else left >= 0
