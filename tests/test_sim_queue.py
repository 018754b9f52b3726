"""coloc.sim.queue: the wait queue in its policy's key order, across its buckets of GPU counts and of single-GPU
jobs by workload."""
import pytest

from coloc.sim.job import Job
from coloc.sim.queue import JobQueue


def four() -> list[Job]:
    """Submitted at 0, 1, 2, 3: a 2-GPU job of a, 1-GPU jobs of b and a, a 4-GPU job of c."""
    return [Job(0, 0.0, 10.0, 2, "a"), Job(1, 1.0, 10.0, 1, "b"), Job(2, 2.0, 10.0, 1, "a"), Job(3, 3.0, 10.0, 4, "c")]


def test_the_first_job_that_fits_in_first_come_order_across_gpu_counts():
    queue, jobs = JobQueue(), four()
    for job in jobs:
        queue.push(job)
    assert queue.best() is jobs[0] and queue.best(1) is jobs[1] and queue.best(3) is jobs[0]
    assert queue.first(3) == jobs[:3] and list(queue.ordered(2)) == jobs[:3]
    assert queue.best_single() is jobs[1] and queue.best_single({"b"}) is jobs[2]
    assert queue.best_single({"a", "b"}) is None
    assert queue.first_singles(5) == [jobs[1], jobs[2]] and queue.first_single("a") == (2.0, 2, 2)  # (*key, job id)
    assert sorted(queue.sizes()) == [1, 2, 4] and len(queue) == 4 and jobs[3] in queue


def test_removing_drops_an_emptied_bucket_and_every_change_counts_in_the_version():
    queue, jobs = JobQueue(), four()
    for job in jobs:
        queue.push(job)
    queue.remove(jobs[3])
    queue.remove(jobs[1])
    assert sorted(queue.sizes()) == [1, 2] and queue.best_single() is jobs[2] and jobs[1] not in queue
    assert queue.best(1) is jobs[2] and queue.version == 6
    with pytest.raises(RuntimeError, match="job 2 is already queued"):
        queue.push(jobs[2])


def test_a_job_rekeyed_takes_its_new_place():
    priority = {0: 5.0, 1: 3.0, 2: 4.0, 3: 6.0}
    queue, jobs = JobQueue(key=lambda job: (priority[job.job_id],)), four()
    for job in jobs:
        queue.push(job)
    assert queue.best() is jobs[1] and queue.entry(jobs[1]) == (3.0, 1)
    priority[1] = 9.0
    queue.rekey(jobs[1])
    assert queue.best() is jobs[2] and queue.entry(jobs[1]) == (9.0, 1) and queue.job((9.0, 1)) is jobs[1]
    assert list(queue.ordered()) == [jobs[2], jobs[0], jobs[3], jobs[1]]
