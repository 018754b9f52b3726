"""Lucid (Hu et al., ASPLOS 2023): packing by a per-job-type label, as its authors' simulator decides it.

Lucid's scheduler (S-Lab-System-Group/Lucid, `simulation/policy/lucid.py` and the placers of
`simulation/policy/placer/`) packs two jobs on the same GPUs with a rule that reads no co-location measurement:
each job type carries a packing label from its solo profile (0 light, 1 medium, 2 heavy; the `label` column of
Lucid's `single_data.csv`, coloc's solo `lucid_label`, read through `view.packing_label`). Every round:

* **Queue**: by priority, a job's estimated duration x its GPU count, least first (ties: arrival order).
* For each queued job in that order, a job of at most one node's GPUs first looks for a **partner**: the
  earliest-placed running job that is alone on its GPUs, has the same GPU count, whose label plus the new job's is
  at most 2 (0 packs with anything, 1 with 0 or 1, 2 with 0 only), whose solo memory plus the new job's is below
  one GPU's memory (Lucid: 24,576 MiB, the RTX 3090's), and whose priority is at least half the new job's
  (time-aware: a job does not join one much shorter than itself). The job then takes exactly the partner's GPUs;
  the two are a pair until one ends, and the one left is alone again (a partner for a later job).
* With no partner, **consolidated placement** on idle GPUs: a job of at most one node goes to the node with the
  fewest idle GPUs that still takes it (ties: the lowest node), on its lowest idle GPUs; a wider job takes fully
  idle nodes, most idle first, and a job of a whole number of nodes needs that many fully idle nodes, the rest of
  a wider job goes to the next node in that order if it has room. A job that fits nowhere is passed over.

Packing is tried before idle GPUs, as the reference does: a job with a partner joins it even when GPUs are idle.
At most two jobs share a GPU (`max_jobs_per_gpu`).

What it knows (honesty): the queue, the cluster, the label and memory of each job type (solo profiling) and the
jobs' durations (as coloc's sjf, coloc and isacpp do); never how fast a pair runs. The simulator alone sets
the pair's speeds from the measured pairs. The label is Lucid's published class, not re-derived: it follows solo GPU
utilization closely (mean 21 / 48 / 83 % for labels 0 / 1 / 2), and on the 56 job types Lucid measured in pairs it
agrees with its analyzer's check rule (mean measured co-located speed below 0.85: 2, below 0.95: 1, else 0) for
43 of them: a solo-profile class that, as in Lucid itself, carries part of what the pairs measured.

Differences from the reference, each because coloc's simulator cannot express it or holds the rule elsewhere:

* **Duration estimate.** Lucid's priority comes from its throughput-and-duration estimator (gradient-boosted
  models trained on the cluster's history, shipped as precomputed estimates); here the job's exclusive duration
  on the reference device: a perfect estimate, so the time-aware rule and the queue order are at their best.
* **Prescient adaptive sharing** (packing off while the predicted cluster load is at most 2 jobs, a time-series
  model of the Venus cluster only) and the profiling cluster (new jobs first run up to 500 s on a few profiling
  nodes) and the Venus cluster's node scaling are not reproduced: packing is always on, as the reference has it
  on every cluster but Venus, and jobs enter the cluster with their solo profile known.
* **Ticks.** The reference decides once per simulated second; coloc decides at each arrival and completion.
* **Fit.** Besides the memory rule, a pair must fit by the world's rule (`view.can_share`): Lucid's simulator
  runs unmeasured pairs (NeuMF, BERT, ResNet-50, Transformer with the others) at full speed, coloc's world does not
  let unmeasured pairs share, so those are never packed here. A job type whose memory is unknown is left to that
  rule alone.
* **Several GPUs.** The reference packs jobs of up to 8 GPUs (its node size); here jobs of up to one node that
  may share at all (`Job.shareable`: single-GPU jobs, or every job when the cluster shares multi-GPU jobs).
  Consolidated placement needs 8-GPU nodes in the reference; here any node size, and on a cluster of several
  device types the first type (cluster order) that runs the job and has room, as coloc's other baselines do.

Not reproduced, reference quirks: the analyzer script (`simulation/analyzer/analyzer.py`) that compares the
label with an automatic one leaves the automatic label and the mean co-located speed it was made from among the
classifier's inputs; the simulator does not use that script (it reads the published label), nor does coloc.

Job types without a label (Gavel's): Lucid's analyzer makes the label from a job's solo GPU utilization, GPU
memory utilization, memory and mixed precision, which Gavel did not measure, and its automatic label is the mean
measured co-located speed, which no scheduler may read. So the policy refuses such a job type, naming it.
"""
from __future__ import annotations

from coloc.policies.base import Policy, register
from coloc.sim.job import Job
from coloc.sim.queue import fifo_key

MAX_LABEL_SUM = 2  # a pair may share when its two labels sum to at most this
SHORTER_BY = 2.0   # time-aware: a job joins a partner whose priority is at least its own / SHORTER_BY


def priority(job: Job) -> float:
    """Lucid's priority: the job's estimated duration (here its exclusive duration) x its GPU count; least first."""
    return job.duration * job.num_gpus


def labels_may_pack(label: int, other: int) -> bool:
    """Whether two jobs of these packing labels may share GPUs (their sum at most 2)."""
    return label + other <= MAX_LABEL_SUM


@register("lucid")
class Lucid(Policy):
    kind = "baseline"
    max_jobs_per_gpu = 2  # Lucid packs pairs

    def queue_key(self, job: Job) -> tuple:
        return (priority(job), *fifo_key(job))

    @classmethod
    def data_problem(cls, truth, devices, workloads) -> str | None:
        """The job types that run on one of `devices` without a packing label there (Lucid's job types have one)."""
        labels = truth.packing_labels()
        missing = sorted({(d, w) for d in devices for w in workloads if truth.has_solo(d, w) and (d, w) not in labels})
        if not missing:
            return None
        return (f"no packing label (the solo table's lucid_label) for {len(missing)} job type(s) on the cluster's "
                f"devices, e.g. {missing[0][1]!r} on {missing[0][0]!r}: Lucid's job types only")

    def reset(self, view) -> None:
        super().reset(view)
        self._pairable: dict[tuple[str, str, str], bool] = {}
        self._labelled: set[str] = set()  # job types whose labels were found
        self._node_size = view.spec.gpus_per_node

    def schedule(self, view) -> None:
        cluster = view.cluster
        alone = self._alone_by_gpu_count(view)
        if cluster.max_free() == 0 and not any(alone.values()):
            return  # no idle GPU and no partner: nothing can start (most rounds at load)
        failed: set[tuple[str, int]] = set()  # (workload, GPUs) with no partner and no room in this round
        for job in view.queue.ordered():
            self._check_labels(view, job)
            key = (job.workload, job.num_gpus)
            if key in failed:
                continue  # later jobs of a key have a priority no less: no partner either, and room only shrinks
            partner = self._partner(view, job, alone.get(job.num_gpus, ()))
            if partner is not None:
                view.place(job, partner.gpus)
                alone[job.num_gpus].remove(partner)
            else:
                gpus = self._consolidated(view, job)
                if gpus is None:
                    failed.add(key)
                    continue
                view.place(job, gpus)
                alone.setdefault(job.num_gpus, []).append(job)
                failed = {k for k in failed if k[1] != job.num_gpus}  # a new partner for jobs of its GPU count
            if cluster.max_free() == 0 and not any(alone.values()):
                return

    def _alone_by_gpu_count(self, view) -> dict[int, list[Job]]:
        """{GPU count: running jobs alone on their GPUs that may share, earliest placed first} (empty when a GPU
        may hold one job only)."""
        out: dict[int, list[Job]] = {}
        if view.cluster.cap < 2:
            return out
        residents = view.cluster.residents
        for job in view.running.values():  # (in placement order)
            if job.shareable and all(len(residents[gpu]) == 1 for gpu in job.gpus):
                out.setdefault(job.num_gpus, []).append(job)
        return out

    def _partner(self, view, job: Job, candidates) -> Job | None:
        """The first of `candidates` (same GPU count, alone, earliest placed first) `job` may join; None."""
        if not job.shareable or job.num_gpus > self._node_size:
            return None
        least = priority(job) / SHORTER_BY
        for other in candidates:
            if priority(other) >= least and self._may_pair(view, other.device, job.workload, other.workload):
                return other
        return None

    def _may_pair(self, view, device: str, workload: str, other: str) -> bool:
        """Labels, memory (the sum below one GPU's) and the world's fit rule, for a `workload` job joining `other`."""
        key = (device, workload, other)
        value = self._pairable.get(key)
        if value is None:
            value = self._pairable[key] = (
                view.has_solo(device, workload)
                and labels_may_pack(self._label(view, device, workload), self._label(view, device, other))
                and memory_below(view, device, workload, other) and view.can_share(device, (workload, other)))
        return value

    def _consolidated(self, view, job: Job) -> tuple[int, ...] | None:
        """Idle GPUs for `job` by Lucid's consolidated placement on the first device type that runs it and has
        room; None."""
        cluster = view.cluster
        for device in cluster.devices:
            if cluster.free_count[device] >= job.num_gpus and view.has_solo(device, job.workload):
                gpus = (cluster.pick_free(device, job.num_gpus) if job.num_gpus <= self._node_size
                        else whole_nodes_first(cluster, device, job.num_gpus, self._node_size))
                if gpus is not None:
                    return gpus
        return None

    def _check_labels(self, view, job: Job) -> None:
        """Refuse, at its first sight, a job type without a label on a device type of the cluster that runs it."""
        if job.workload in self._labelled:
            return
        for device in view.cluster.devices:
            if view.has_solo(device, job.workload):
                self._label(view, device, job.workload)
        self._labelled.add(job.workload)

    @staticmethod
    def _label(view, device: str, workload: str) -> int:
        label = view.packing_label(device, workload)
        if label is None:
            raise ValueError(
                f"policy 'lucid': job type {workload!r} has no packing label on {device!r} (the solo table's "
                f"lucid_label, Lucid's analyzer's class 0/1/2); Lucid makes it from solo GPU utilization, memory "
                f"utilization and memory, which this data set does not give: run lucid on Lucid's job types")
        return label


def memory_below(view, device: str, workload: str, other: str) -> bool:
    """Lucid's memory rule: the two jobs' solo memory sums to less than one GPU's; True where either is unknown."""
    capacity = view.device_memory(device)
    mine, theirs = view.memory(device, workload), view.memory(device, other)
    if capacity is None or mine is None or theirs is None:
        return True
    return mine + theirs < capacity


def whole_nodes_first(cluster, device: str, n: int, node_size: int) -> tuple[int, ...] | None:
    """Lucid's placement of a job wider than a node: nodes of `device` by idle GPUs, most first (ties: the lowest),
    fully idle ones for each whole node of the job, then the rest on the next node if it has room; None."""
    nodes = sorted((node for node, device_of in enumerate(cluster.node_device) if device_of == device),
                   key=lambda node: (-len(cluster.node_free[node]), node))
    whole, rest = divmod(n, node_size)
    chosen: list[int] = []
    for node in nodes[:whole]:
        free = cluster.node_free[node]
        if len(free) < node_size:
            return None
        chosen += sorted(free)
    if rest:
        if len(nodes) <= whole or len(cluster.node_free[nodes[whole]]) < rest:
            return None
        chosen += sorted(cluster.node_free[nodes[whole]])[:rest]
    return tuple(sorted(chosen))
