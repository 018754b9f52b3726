"""The counts Cluster keeps instead of recounting (most idle GPUs, open and made groups, open_changes) equal
a recount after every placement and removal, and open_changes stays put only while the same groups are open."""
import random

import pytest

from coloc.sim.cluster import CapacityError, Cluster, ClusterSpec
from coloc.sim.job import Job


def open_groups(cluster: Cluster) -> set:
    return {(device, sig) for device in cluster.devices for sig, _ in cluster.shareable_groups(device)}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cap", [2, 3])
def test_kept_counts_equal_a_recount_through_random_placements_and_removals(seed, cap):
    random.seed(seed)
    cluster = Cluster(ClusterSpec((("v100", 12), ("k80", 7)), gpus_per_node=4, max_jobs_per_gpu=cap))
    running, next_id = [], 0
    before = (cluster.open_changes, open_groups(cluster))
    for _ in range(400):
        if running and random.random() < 0.45:
            cluster.remove(running.pop(random.randrange(len(running))))
        else:
            job = Job(next_id, 0.0, 1.0, random.choice([1, 1, 1, 2, 4]), random.choice("abc"))
            job.shareable = job.num_gpus == 1
            next_id += 1
            device = random.choice(cluster.devices)
            fits = [g for g in range(cluster.num_gpus) if cluster.gpu_device[g] == device
                    and (not cluster.residents[g] or (job.shareable and len(cluster.residents[g]) < cap
                                                      and all(j.shareable for j in cluster.residents[g])))]
            if len(fits) < job.num_gpus:
                continue
            job.gpus = tuple(sorted(random.sample(fits, job.num_gpus)))
            cluster.add(job, job.gpus)
            running.append(job)
        cluster.check()  # recounts idle GPUs, the most idle, open and made groups
        assert cluster.max_free() == max(cluster.free_count.values())
        assert cluster.shareable_group_count() == len(open_groups(cluster))
        assert cluster.groups_made() == sum(len(groups) for groups in cluster.shareable.values())
        now = (cluster.open_changes, open_groups(cluster))
        assert now[0] != before[0] or now[1] == before[1], "open groups changed but open_changes did not"
        before = now
    assert cluster.open_changes > 0 and cluster.max_free() < cluster.num_gpus


def test_a_cluster_that_does_not_share_keeps_no_groups_and_refuses_a_second_job_on_a_gpu():
    spec = ClusterSpec((("v100", 8),), gpus_per_node=4)
    shared, alone = Cluster(spec), Cluster(spec, sharing=False)
    jobs = [Job(i, 0.0, 1.0, 1, "ab"[i % 2]) for i in range(6)]
    for job, gpu in zip(jobs, [0, 1, 2, 3, 4, 5], strict=True):
        job.shareable, job.gpus = True, (gpu,)
        for cluster in (shared, alone):
            cluster.add(job, job.gpus)
    shared.remove(jobs[2])
    alone.remove(jobs[2])
    for cluster in (shared, alone):
        cluster.check()
    assert (shared.busy, shared.free_count, shared.max_free()) == (alone.busy, alone.free_count, alone.max_free())
    assert shared.any_shareable() and shared.shareable_group_count() == 2
    assert not alone.any_shareable() and alone.shareable_group_count() == 0 and not alone.shared_gpus
    extra = Job(9, 0.0, 1.0, 1, "a")
    extra.shareable = True
    shared.add(extra, (0,))
    with pytest.raises(CapacityError, match="GPU 0 is held by jobs \\[0\\].*does not share GPUs"):
        alone.add(extra, (0,))
