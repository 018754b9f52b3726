"""Cluster layout (nodes of GPUs of one or more device types) and its occupancy.

The occupancy keeps three indexes so that policies never scan every GPU:
nodes by their number of idle GPUs (best-fit gang placement; each bucket a
sorted list, so the lowest node is its first), idle counts per device, and
GPUs that can take one more job grouped by the workloads already on them
(`shareable[device][signature]`, a GpuGroup: sorted GPU ids and, for GPUs with
one resident, an order by the time the resident would finish alone, with the
residents' progress beside it), the non-empty groups kept apart and counted
(`shareable_groups`, `any_shareable` do not walk every group ever made).
Each device's groups are also kept by their order's first finish (`firsts`, coloc.sim.firsts).
`lowest_free_node` and `idle_nodes` read the nodes-by-idle-count index. `open_changes` counts groups
becoming empty or non-empty, so a policy may keep what it derived from the open groups
for as long as the count is unchanged (isacpp keeps its candidate groups per job type so).
A cluster built with `sharing=False` (its policy declared `shares_gpus = False`) keeps
none of the sharing indexes and refuses a second job on a GPU.
"""
from __future__ import annotations

import bisect
import math
from array import array
from dataclasses import dataclass

import numpy as np

from coloc.sim.firsts import GroupsByFirst
from coloc.sim.job import Job


def _whole(value) -> bool:
    """Whether `value` is an int (numpy's too), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


class CapacityError(RuntimeError):
    """A placement that would break the cluster's capacity or sharing rules."""


@dataclass(frozen=True)
class ClusterSpec:
    """devices: ((device, number of GPUs), ...) in order of preference. max_jobs_per_gpu: the most jobs any policy
    may put on one GPU; None: no cap but memory (:attr:`cap`)."""

    devices: tuple[tuple[str, int], ...]
    gpus_per_node: int = 8
    max_jobs_per_gpu: int | None = 2
    share_multi_gpu: bool = False

    def __post_init__(self):
        if not self.devices:
            raise ValueError("ClusterSpec: no devices; expected e.g. (('v100', 64),)")
        for device, count in self.devices:
            if not _whole(count) or count < 1:
                raise ValueError(f"ClusterSpec: device {device!r} has {count!r} GPUs; expected an integer >= 1")
        if not _whole(self.gpus_per_node) or self.gpus_per_node < 1:
            raise ValueError(f"ClusterSpec: gpus_per_node {self.gpus_per_node!r}; expected an integer >= 1")
        if self.max_jobs_per_gpu is not None and (not _whole(self.max_jobs_per_gpu) or self.max_jobs_per_gpu < 1):
            raise ValueError(f"ClusterSpec: max_jobs_per_gpu {self.max_jobs_per_gpu!r}; expected an integer >= 1, "
                             f"or None for no cap but memory")

    @property
    def cap(self) -> float:
        """max_jobs_per_gpu as a bound to compare counts with: math.inf when there is none."""
        return math.inf if self.max_jobs_per_gpu is None else self.max_jobs_per_gpu

    @classmethod
    def parse(cls, text: str, **kwargs) -> "ClusterSpec":
        """'v100:64' or 'v100:32,p100:32' -> ClusterSpec."""
        devices = []
        for part in text.split(","):
            name, sep, count = part.strip().partition(":")
            if not sep or not count.strip().isdigit():
                raise ValueError(f"cluster {text!r}: part {part!r} is not 'device:count'")
            devices.append((name.strip(), int(count)))
        return cls(tuple(devices), **kwargs)

    @property
    def total_gpus(self) -> int:
        return sum(count for _, count in self.devices)

    def gpus_of(self, device: str) -> int:
        return sum(count for d, count in self.devices if d == device)


class GpuGroup:
    """GPUs of one device type holding the same workloads, each able to take one more job.

    Iterates in GPU order; `first()` is the lowest GPU. For GPUs with one resident,
    `by_finish(now)` orders them by the time the resident would finish running alone,
    now + its remaining time / its solo speed. A lone single-GPU job runs at its solo
    speed once the Simulator has set its rate, so that time stays fixed while the GPU
    stays in the group and the order, computed once per GPU, holds at any later time
    (in floating point to within a few units in the last place: users allow for it).
    A GPU enters the order at the first `by_finish` after its resident's rate is set;
    until then it is in `unordered()` (a job placed in the current round, or one whose co-runner left). The residents'
    progress state (remaining work, rate, last update, speed) is fixed while they are in the
    order, so it is kept beside it: `solo_time(i, now)` / `solo_times(lo, hi, now)` give the
    remaining solo times of the order's residents without visiting the jobs.
    """

    __slots__ = ("_gpus", "_residents", "_pending", "_keys", "_order", "_state", "_order_gpus", "_arrays", "_index",
                 "number")

    def __init__(self, residents: list[list[Job]], index: GroupsByFirst | None = None):
        self._gpus: list[int] = []
        self._residents = residents
        self._index = index  # the device's groups by first key, told of this group's changes (None: no index)
        self.number = index.register(self) if index is not None else -1
        self._pending: set[int] = set()
        self._keys: dict[int, float] = {}
        self._order: list[tuple[float, int]] = []
        # remaining, rate, last_update, speed, in _order's order, and its GPUs: typed arrays, which numpy reads in
        # place (arrays() costs no copy); one viewed cannot be resized, so the views are dropped before a change
        self._state: tuple[array, ...] = (array("d"), array("d"), array("d"), array("d"))
        self._order_gpus = array("q")
        self._arrays: tuple[np.ndarray, ...] | None = None  # numpy views of _state and _order_gpus

    def __len__(self) -> int:
        return len(self._gpus)

    def __bool__(self) -> bool:
        return bool(self._gpus)

    def __iter__(self):
        return iter(self._gpus)

    def __contains__(self, gpu: int) -> bool:
        i = bisect.bisect_left(self._gpus, gpu)
        return i < len(self._gpus) and self._gpus[i] == gpu

    def first(self) -> int:
        return self._gpus[0]

    def add(self, gpu: int) -> None:
        bisect.insort(self._gpus, gpu)
        self._pending.add(gpu)
        if self._index is not None:
            self._index.pending.add(self.number)

    def discard(self, gpu: int) -> bool:
        """Take `gpu` out of the group; False if it was not in it."""
        i = bisect.bisect_left(self._gpus, gpu)
        if i == len(self._gpus) or self._gpus[i] != gpu:
            return False
        del self._gpus[i]
        if gpu in self._pending:
            self._pending.discard(gpu)
            if not self._pending and self._index is not None:
                self._index.pending.discard(self.number)
            return True
        key = self._keys.pop(gpu)
        at = bisect.bisect_left(self._order, (key, gpu))
        del self._order[at]
        if at == 0 and self._index is not None:
            self._index.moved(self.number, key, self._order[0][0] if self._order else None)
        self._arrays = None  # (before the arrays change size)
        remaining, rate, last_update, speed = self._state
        del remaining[at], rate[at], last_update[at], speed[at], self._order_gpus[at]
        return True

    def by_finish(self, now: float) -> list[tuple[float, int]]:
        """[(time the lone resident would finish alone, gpu)] sorted, for GPUs whose resident's rate is set."""
        if self._pending:
            remaining, rate, last_update, speed = self._state
            first = self._order[0][0] if self._order else None
            for gpu in [g for g in self._pending if self._rate_set(self._residents[g][0])]:
                job = self._residents[gpu][0]
                key = now + job.remaining_at(now) / job.speed
                self._keys[gpu] = key
                at = bisect.bisect_left(self._order, (key, gpu))
                self._order.insert(at, (key, gpu))
                self._arrays = None
                remaining.insert(at, job.remaining)
                rate.insert(at, job.rate)
                last_update.insert(at, job.last_update)
                speed.insert(at, job.speed)
                self._order_gpus.insert(at, gpu)
                self._pending.discard(gpu)
                if self._index is not None:
                    self._index.ordered(key)
            if self._index is not None:
                if self._order and self._order[0][0] != first:
                    self._index.moved(self.number, first, self._order[0][0])
                if not self._pending:
                    self._index.pending.discard(self.number)
        return self._order

    def solo_time(self, i: int, now: float) -> float:
        """Remaining solo time at `now` of the resident at place i of the order (as Job.remaining_at(now) / speed)."""
        remaining, rate, last_update, speed = self._state
        return (remaining[i] - rate[i] * (now - last_update[i])) / speed[i]

    def progress(self) -> tuple[array, ...]:
        """The order's residents' (remaining, rate, last_update, speed), each a sequence in the order's places (read only):
        solo_time(i, now) is (remaining[i] - rate[i] * (now - last_update[i])) / speed[i]."""
        return self._state

    def solo_times(self, lo: int, hi: int, now: float) -> np.ndarray:
        """solo_time of places lo..hi-1, as an array (the same floating-point operations, element-wise)."""
        return solo_times_of(*(column[lo:hi] for column in self.arrays()[:4]), now)

    def gpus_at(self, lo: int, hi: int) -> np.ndarray:
        """The GPUs at places lo..hi-1 of the order, as an array."""
        return self.arrays()[4][lo:hi]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The order's (remaining, rate, last_update, speed, gpu) as numpy arrays over the kept columns (no copy;
        read only, valid until the group changes: do not keep them)."""
        if self._arrays is None:
            self._arrays = (*(np.frombuffer(column, dtype=float) for column in self._state),
                            np.frombuffer(self._order_gpus, dtype=np.int64))
        return self._arrays

    def check(self) -> None:
        """The kept progress state equals the single-GPU residents' (slow; for Cluster.check)."""
        for i, (_, gpu) in enumerate(self._order):
            job = self._residents[gpu][0]
            if job.num_gpus > 1:
                continue  # a lone gang job's speed follows its other GPUs: its order is not used
            kept = tuple(column[i] for column in self._state)
            if kept != (job.remaining, job.rate, job.last_update, job.speed):
                raise CapacityError(f"GPU {gpu}: kept progress {kept} of job {job.job_id} is stale")
        index = self._index
        if index is not None:
            listed = [key for key, number in index.entries if number == self.number]
            if listed != [key for key, _ in self._order[:1]]:
                raise CapacityError(f"group {self.number}: listed by first key at {listed}, its order starts "
                                    f"{self._order[:1]}")
            if (self.number in index.pending) != bool(self._pending) or (self._order and self._order[-1][0] >
                                                                         index.latest):
                raise CapacityError(f"group {self.number}: pending {sorted(self._pending)[:5]}, last key "
                                    f"{self._order[-1:]}, differ from its device's index (pending: "
                                    f"{self.number in index.pending}, latest {index.latest})")

    def unordered(self) -> set[int]:
        """GPUs not (yet) in `by_finish`'s order: their resident was placed in this round, or its co-runner left."""
        return self._pending

    @staticmethod
    def _rate_set(job) -> bool:
        """Whether the Simulator has set the lone resident's rate: above 0, and no longer the rate it had with
        a co-runner that left in this round (that job still counts as co-located until its rate is set anew)."""
        return job.rate > 0 and not job.colocated


class Cluster:
    """Which jobs sit on which GPU, with indexes for fast placement.

    sharing=False is a cluster whose GPUs hold one job each (for a policy that never co-locates): its cap is
    one job per GPU, so no GPU is shareable, the sharing indexes stay empty, and a second job on a GPU is refused.
    """

    def __init__(self, spec: ClusterSpec, sharing: bool = True):
        self.spec = spec
        self.sharing = sharing
        self.cap = spec.cap if sharing else 1  # (math.inf: no cap but memory)
        self.devices = [d for d, _ in spec.devices]
        self.gpu_device: list[str] = []
        self.gpu_node: list[int] = []
        self.node_device: list[str] = []
        self.node_free: list[set[int]] = []
        self.residents: list[list[Job]] = []
        self.free_count = {d: 0 for d in self.devices}
        self._nodes_by_free = {d: [[] for _ in range(spec.gpus_per_node + 1)] for d in self.devices}
        self.shareable: dict[str, dict[tuple[str, ...], GpuGroup]] = {d: {} for d in self.devices}
        self.firsts = {d: GroupsByFirst() for d in self.devices}  # each device's groups by first key (sim.firsts)
        self._open: dict[str, dict[tuple[str, ...], GpuGroup]] = {d: {} for d in self.devices}  # non-empty ones
        self._shareable_gpus = 0
        self._open_groups = 0  # non-empty shareable groups, over every device type
        self._groups_made = 0  # shareable groups ever made (they are never deleted)
        self.open_changes = 0  # counts groups becoming empty or non-empty: unchanged means the same open groups
        self._most_free = 0  # max(free_count.values())
        self.shared_gpus: set[int] = set()
        # a policy that sets newly_shared to a set gets there every GPU whose set of 2+ jobs changes
        self.newly_shared: set[int] | None = None
        self.busy = 0
        self.version = 0  # counts placements and removals: unchanged means the same jobs on the same GPUs
        for device, count in spec.devices:
            self._add_nodes(device, count)

    def _add_nodes(self, device: str, count: int) -> None:
        while count > 0:
            size = min(count, self.spec.gpus_per_node)
            node = len(self.node_device)
            first = len(self.gpu_device)
            self.node_device.append(device)
            self.node_free.append(set(range(first, first + size)))
            self._nodes_by_free[device][size].append(node)  # nodes are numbered in order: stays sorted
            for _ in range(size):
                self.gpu_device.append(device)
                self.gpu_node.append(node)
                self.residents.append([])
            self.free_count[device] += size
            self._most_free = max(self.free_count.values())
            count -= size

    @property
    def num_gpus(self) -> int:
        return len(self.gpu_device)

    def max_free(self) -> int:
        """Most idle GPUs on any one device type."""
        return self._most_free

    def lowest_free_node(self, device: str) -> int | None:
        """The lowest-numbered node of `device` with an idle GPU; None if none (from the nodes-by-idle-count index:
        the first node of each non-empty count, no walk over the nodes)."""
        heads = [nodes[0] for nodes in self._nodes_by_free[device][1:] if nodes]
        return min(heads) if heads else None

    def idle_nodes(self, device: str) -> list[int]:
        """The nodes of `device` with an idle GPU (from the nodes-by-idle-count index; in no fixed order)."""
        return [node for nodes in self._nodes_by_free[device][1:] for node in nodes]

    def pick_free(self, device: str, n: int) -> tuple[int, ...] | None:
        """n idle GPUs of `device`, on as few nodes as possible (best fit); None if too few."""
        if self.free_count[device] < n:
            return None
        buckets = self._nodes_by_free[device]
        per_node = self.spec.gpus_per_node
        if n <= per_node:
            for count in range(n, per_node + 1):
                if buckets[count]:
                    node = buckets[count][0]
                    return tuple(sorted(self.node_free[node])[:n])
        chosen: list[int] = []
        for count in range(per_node, 0, -1):
            for node in buckets[count]:
                take = sorted(self.node_free[node])[: n - len(chosen)]
                chosen.extend(take)
                if len(chosen) == n:
                    return tuple(sorted(chosen))
        raise CapacityError(f"free count of {device} says {self.free_count[device]} but nodes hold fewer")

    def signature(self, gpu: int) -> tuple[str, ...]:
        """Sorted workloads on `gpu`."""
        return _signature(self.residents[gpu])

    def add(self, job: Job, gpus: tuple[int, ...]) -> None:
        """Put `job` on `gpus` (checked: capacity, one device type, idle GPUs for exclusive jobs)."""
        gpu_device, residents = self.gpu_device, self.residents
        device = gpu_device[gpus[0]]
        if len(gpus) != job.num_gpus or (len(gpus) > 1 and len(set(gpus)) != len(gpus)):
            raise CapacityError(f"job {job.job_id} needs {job.num_gpus} distinct GPUs, got {gpus}")
        for gpu in gpus:
            here = residents[gpu]
            if gpu_device[gpu] != device:
                raise CapacityError(f"job {job.job_id}: GPUs {gpus} span several device types")
            if here and not self.sharing:
                raise CapacityError(f"job {job.job_id}: GPU {gpu} is held by jobs {[j.job_id for j in here]} and "
                                    f"this cluster does not share GPUs (its policy declared shares_gpus = False)")
            if len(here) >= self.cap:
                raise CapacityError(f"job {job.job_id}: GPU {gpu} already holds {len(here)} jobs (cap {self.cap})")
            if here and not (job.shareable and all(j.shareable for j in here)):
                raise CapacityError(f"job {job.job_id}: GPU {gpu} is held by jobs "
                                    f"{[j.job_id for j in here]} and one of them is exclusive")
        indexed = self.cap > 1  # (with one job per GPU no GPU is ever shareable: the sharing indexes stay empty)
        for gpu in gpus:
            here = residents[gpu]
            if here:
                self._unindex(gpu, device, here)
            else:
                self._set_free(gpu, device, free=False)
            here.append(job)
            if indexed:
                self._index(gpu, device, here)
        self.version += 1

    def remove(self, job: Job) -> None:
        self.version += 1
        gpu_device, residents = self.gpu_device, self.residents
        indexed = self.cap > 1  # (as in add)
        for gpu in job.gpus:
            here, device = residents[gpu], gpu_device[gpu]
            if here:
                if indexed:
                    self._unindex(gpu, device, here)
            else:
                self._set_free(gpu, device, free=False)
            try:
                here.remove(job)
            except ValueError:
                raise CapacityError(f"job {job.job_id} is not on GPU {gpu}") from None
            if here:
                self._index(gpu, device, here)
            else:
                self._set_free(gpu, device, free=True)

    def _set_free(self, gpu: int, device: str, free: bool) -> None:
        """Move an idle GPU into (free=True) or out of its node's free set, keeping the counts."""
        node = self.gpu_node[gpu]
        node_free = self.node_free[node]
        buckets = self._nodes_by_free[device]
        bucket = buckets[len(node_free)]
        del bucket[bisect.bisect_left(bucket, node)]
        count = self.free_count[device]
        if free:
            node_free.add(gpu)
            self.free_count[device] = count + 1
            self.busy -= 1
            if count == self._most_free:
                self._most_free = count + 1
        else:
            node_free.discard(gpu)
            self.free_count[device] = count - 1
            self.busy += 1
            if count == self._most_free:
                self._most_free = max(self.free_count.values())
        bisect.insort(buckets[len(node_free)], node)

    def _unindex(self, gpu: int, device: str, here: list[Job]) -> None:
        """Take a GPU holding jobs `here` out of the sharing indexes (before its jobs change)."""
        if len(here) >= self.cap:  # full: in no shareable group
            self.shared_gpus.discard(gpu)
            return
        if len(here) == 1 and not here[0].shareable:  # an exclusive job alone: never indexed (_index)
            return
        sig = _signature(here)
        group = self.shareable[device].get(sig)
        if group is not None and group.discard(gpu):
            self._shareable_gpus -= 1
            if not group:
                del self._open[device][sig]
                self._open_groups -= 1
                self.open_changes += 1
        if len(here) > 1:
            self.shared_gpus.discard(gpu)

    def _index(self, gpu: int, device: str, here: list[Job]) -> None:
        """Put a GPU holding jobs `here` into the sharing indexes (after its jobs changed)."""
        if len(here) > 1:
            self.shared_gpus.add(gpu)
            if self.newly_shared is not None:
                self.newly_shared.add(gpu)
            if len(here) >= self.cap or not all(j.shareable for j in here):
                return
            sig = tuple(sorted(j.workload for j in here))
        elif here[0].shareable and self.cap > 1:
            sig = (here[0].workload,)
        else:
            return
        groups = self.shareable[device]
        group = groups.get(sig)
        if group is None:
            group = groups[sig] = GpuGroup(self.residents, self.firsts[device])
            self._groups_made += 1
        group.add(gpu)
        self._shareable_gpus += 1
        if len(group) == 1:
            self._open[device][sig] = group
            self._open_groups += 1
            self.open_changes += 1

    def shareable_groups(self, device: str):
        """(signature, GPUs) pairs of GPUs that can take one more job, the non-empty groups (in no fixed order)."""
        return list(self._open[device].items())

    def open_groups(self, device: str) -> dict[tuple[str, ...], GpuGroup]:
        """{signature: GPUs} of the non-empty shareable groups of `device` (read only; a group absent is empty)."""
        return self._open[device]

    def any_shareable(self) -> bool:
        return self._shareable_gpus > 0

    def shareable_group_count(self) -> int:
        """Number of non-empty shareable groups, over every device type."""
        return self._open_groups

    def groups_made(self) -> int:
        """Number of shareable groups ever made, empty or not, over every device type (none is ever deleted)."""
        return self._groups_made

    def co_runners(self, job: Job, gpu: int) -> list[Job]:
        return [j for j in self.residents[gpu] if j is not job]

    def check(self) -> None:
        """Recount every index from the residents (slow; for tests and end-of-run checks)."""
        free = {d: 0 for d in self.devices}
        for gpu, here in enumerate(self.residents):
            if len(here) > self.cap:
                raise CapacityError(f"GPU {gpu} holds {len(here)} jobs (cap {self.cap})")
            if not here:
                free[self.gpu_device[gpu]] += 1
                if gpu not in self.node_free[self.gpu_node[gpu]]:
                    raise CapacityError(f"idle GPU {gpu} missing from its node's free set")
            for job in here:
                if gpu not in job.gpus:
                    raise CapacityError(f"job {job.job_id} sits on GPU {gpu} but records GPUs {job.gpus}")
        if free != self.free_count or self._most_free != max(free.values()):
            raise CapacityError(f"idle counts {self.free_count} (most {self._most_free}) differ from a recount {free}")
        for device, buckets in self._nodes_by_free.items():
            for count, nodes in enumerate(buckets):
                if nodes != sorted(set(nodes)) or any(len(self.node_free[n]) != count for n in nodes):
                    raise CapacityError(f"{device} nodes listed with {count} idle GPUs, {nodes[:5]}..., are not "
                                        f"sorted or hold another number")
        for device, groups in self.shareable.items():
            entries = self.firsts[device].entries
            if entries != sorted(entries):
                raise CapacityError(f"{device} groups by first key are not sorted: {entries[:5]}...")
            for sig, group in groups.items():
                gpus = list(group)
                if gpus != sorted(set(gpus)) or any(self.signature(g) != sig or len(sig) >= self.cap for g in gpus):
                    raise CapacityError(f"{device} GPUs indexed as holding {sig}, {gpus[:5]}..., are not sorted or "
                                        f"hold other jobs")
                group.check()
                if bool(group) != (sig in self._open[device]):
                    raise CapacityError(f"{device} group {sig} holds {len(group)} GPUs but is listed "
                                        f"{'closed' if group else 'open'}")
        if self._shareable_gpus != sum(len(g) for groups in self.shareable.values() for g in groups.values()):
            raise CapacityError(f"shareable GPU count {self._shareable_gpus} differs from a recount")
        if (self._open_groups, self._groups_made) != (sum(map(len, self._open.values())),
                                                      sum(map(len, self.shareable.values()))):
            raise CapacityError(f"counts of open and made groups {self._open_groups}, {self._groups_made} differ "
                                f"from a recount")
        if self.busy != self.num_gpus - sum(free.values()):
            raise CapacityError(f"busy count {self.busy} differs from a recount")


def solo_times_of(remaining, rate, last_update, speed, now: float):
    """Residents' remaining solo times at `now` from their kept progress (GpuGroup.solo_time's operations;
    element-wise on arrays)."""
    return (remaining - rate * (now - last_update)) / speed


def _signature(here: list[Job]) -> tuple[str, ...]:
    """Sorted workloads of a GPU's residents `here`."""
    return (here[0].workload,) if len(here) == 1 else tuple(sorted(j.workload for j in here))
