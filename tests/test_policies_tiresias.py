"""Tiresias's incremental rounds make exactly the decisions of re-sorting every job every round."""
import bisect
from types import SimpleNamespace

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from coloc import policies
from coloc.policies.base import Policy
from coloc.sim import ClusterSpec, GroundTruth, simulate, traces
from coloc.sim.job import RUNNING


class TiresiasBySorting(Policy):
    """Test helper, the reference: 2D-LAS that sorts every running and waiting job each round."""

    def __init__(self, thresholds, period_s, starve_factor):
        self.thresholds, self.period_s, self.starve_factor = tuple(sorted(thresholds)), period_s, starve_factor
        self.name = "tiresias-by-sorting"

    def priority(self, job, now):
        attained = job.attained + ((now - job.last_update) * job.num_gpus if job.state == RUNNING else 0.0)
        level = bisect.bisect_right(self.thresholds, attained)
        if self.starve_factor is not None and job.state != RUNNING:
            if now - job.queued_since >= self.starve_factor * max(job.run_time, 1.0):
                level = 0
        return (level, job.submit_time, job.job_id)

    def schedule(self, view):
        active = sorted(list(view.running.values()) + list(view.queue), key=lambda j: self.priority(j, view.now))
        budget = {d: view.spec.gpus_of(d) for d in view.cluster.devices}
        keep, start = set(), []
        for job in active:
            if job.state == RUNNING:
                if budget[job.device] >= job.num_gpus:
                    budget[job.device] -= job.num_gpus
                    keep.add(job.job_id)
                continue
            for device in view.cluster.devices:
                if budget[device] >= job.num_gpus and view.has_solo(device, job.workload):
                    budget[device] -= job.num_gpus
                    start.append((job, device))
                    break
        if not start:
            return
        for job in [j for j in view.running.values() if j.job_id not in keep]:
            view.preempt(job)
        for job, device in start:
            view.place(job, view.cluster.pick_free(device, job.num_gpus))


def two_devices() -> GroundTruth:
    """v100 runs a, b, c; k80 (half as fast) runs a and b only."""
    solo = pd.DataFrame({"device": ["v100"] * 3 + ["k80"] * 2, "workload": ["a", "b", "c", "a", "b"],
                         "throughput": [10.0, 10.0, 10.0, 5.0, 5.0]})
    pairs = pd.DataFrame([{"device": d, "workload_a": w, "workload_b": w, "norm_a": 0.5, "norm_b": 0.5,
                           "feasible": True} for d, ws in (("v100", "abc"), ("k80", "ab")) for w in ws])
    return GroundTruth(solo, pairs, "v100")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), starve=st.sampled_from([None, 4.0]),
       thresholds=st.sampled_from([(50.0,), (30.0, 300.0), (3600.0, 36000.0)]),
       mixed=st.booleans(), restart=st.sampled_from([0.0, 5.0]))
def test_incremental_rounds_equal_sorting_every_round(seed, starve, thresholds, mixed, restart):
    jobs = traces.poisson(50, ["a", "b", "c"], seed=seed, load=2.5, total_gpus=4, median_duration_s=120,
                          gpu_mix={1: 6, 2: 2, 4: 1})
    spec = ClusterSpec((("v100", 2), ("k80", 2)) if mixed else (("v100", 4),), gpus_per_node=2)
    if mixed:
        jobs["num_gpus"] = jobs["num_gpus"].clip(upper=2)
    results = [simulate(jobs, two_devices(), policy, spec, restart_cost_s=restart, check_every=7)
               for policy in (policies.get("tiresias", thresholds=thresholds, period_s=10.0, starve_factor=starve),
                              TiresiasBySorting(thresholds, 10.0, starve))]
    columns = ["job_id", "start_time", "finish_time", "jct", "queue_delay", "device", "run_time", "preemptions"]
    pd.testing.assert_frame_equal(results[0].jobs[columns], results[1].jobs[columns], check_exact=True)
    pd.testing.assert_frame_equal(results[0].timeline, results[1].timeline, check_exact=True)


def test_a_starving_job_is_promoted_above_newer_jobs():
    # Job 1 (a, 1000 s) is demoted at 50 GPU-s; from t=100 a 40 s job arrives every 40 s, each at level 0.
    # Without the guard job 1 waits for all ten (100 + 400 + 900 = 1400); with starve_factor 1 it is
    # promoted after waiting as long as it ran and takes the GPU back while short jobs still arrive.
    rows = pd.DataFrame([(1, 0.0, 1000.0, 1, "a")] + [(i, 20.0 + 40.0 * i, 40.0, 1, "b") for i in range(2, 12)],
                        columns=["job_id", "submit_time", "duration", "num_gpus", "workload"])
    one = ClusterSpec((("v100", 1),))
    runs = {starve: simulate(rows, two_devices(), policies.get("tiresias", thresholds=(50.0,), period_s=10.0,
                                                               starve_factor=starve), one).jobs.set_index("job_id")
            for starve in (None, 1.0)}
    assert runs[None].loc[1, "preemptions"] == 1 and runs[None].loc[1, "finish_time"] == 1400.0
    assert runs[1.0].loc[1, "preemptions"] > 1
    assert runs[1.0].loc[11, "finish_time"] > runs[None].loc[11, "finish_time"]  # the short jobs waited for it


@pytest.mark.parametrize("devices", [(("v100", 8),), (("v100", 4), ("k80", 4))])
def test_running_index_sums_the_running_jobs_in_priority_order_at_every_round(devices):
    """The index, kept from the view's change log and the threshold crossings, equals sorting the running jobs."""
    jobs = traces.poisson(300, ["a", "b", "c"], seed=4, load=2.5, total_gpus=8, median_duration_s=120,
                          gpu_mix={1: 6, 2: 2, 4: 1})
    policy = policies.get("tiresias", thresholds=(30.0, 300.0), period_s=10.0)
    walk, checked = policy._walk, []

    def checked_walk(view):
        index, now, names = policy._index, view.now, view.cluster.devices
        running = sorted(view.running.values(), key=lambda job: policy.priority(job, now))
        ahead = [0] * len(names)
        for job in running:
            entry, d = (*policy.priority(job, now), job.job_id), names.index(job.device)
            assert index.before(entry) == ahead
            room = [view.spec.gpus_of(name) for name in names]
            room[d] = ahead[d] + job.num_gpus - 1  # one GPU short for this job: the first to stop
            assert index.first_stop(room, [0] * len(names)) == (entry, job, d)
            ahead[d] += job.num_gpus
        assert index.totals == ahead
        assert index.first_stop([view.spec.gpus_of(name) for name in names], [0] * len(names)) is None
        for job in view.queue:
            entry = view.queue.entry(job)
            assert index.before(entry) == [sum(other.num_gpus for other in running if other.device == name and
                                               policy.priority(other, now) < entry[:-1]) for name in names]
        checked.append(len(running))
        return walk(view)

    policy._walk = checked_walk
    result = simulate(jobs, two_devices(), policy, ClusterSpec(devices, gpus_per_node=4))
    assert len(checked) > 100 and max(checked) >= 4
    assert (result.jobs["preemptions"] > 0).sum() > 10  # jobs crossed thresholds and were displaced


@pytest.mark.parametrize("devices", [(("v100", 64),), (("v100", 32), ("p100", 16), ("k80", 16))])
def test_a_round_from_running_jobs_decides_as_the_scanning_reference(devices, gavel, monkeypatch):
    """Scheduling-delay rounds start from a view with jobs already running (not placed by the policy). The
    reference runs on its own plain queue, as in the exactness tests."""
    import reference_sim.base as reference
    from reference_sim.queue import JobQueue as ReferenceQueue

    from coloc.sim import view as view_module
    from coloc.sim.view import Profile
    from coloc.studies import delay
    truth = GroundTruth(*gavel, "v100")
    profile, spec = Profile.of(truth), ClusterSpec(devices)
    jobs = delay.draw_jobs(400, delay.job_types(truth), 1, spec, profile, 1800.0, 1.0, {1: 8, 2: 1, 4: 1})
    decided = []
    for make, is_reference in ((policies.get, False), (reference.get, True)):
        with monkeypatch.context() as patch:
            if is_reference:
                patch.setattr(view_module, "JobQueue", ReferenceQueue)
            policy = make("tiresias")
            view = delay.round_state(policy, profile, spec, None, jobs[:200], jobs[200:], 0.6, seed=1)
            placed, add = [], view.cluster.add
            view.cluster.add = lambda job, gpus, placed=placed, add=add: (placed.append((job.job_id, tuple(gpus))),
                                                                          add(job, gpus))
            delay.time_round(policy, view)
            decided.append((placed, view.stats["preemptions"]))
    assert decided[0] == decided[1]
    assert len(decided[0][0]) > 20 and decided[0][1] > 0  # it started jobs and displaced running ones


def test_jobs_queued_out_of_arrival_order_are_refused_by_name():
    """The index orders jobs inside a level by when they were first queued: that must be (submit_time, job_id)."""
    from coloc.sim.job import Job
    policy = policies.get("tiresias")
    view = SimpleNamespace(running={}, queue=[], cluster=SimpleNamespace(devices=("v100",)), changed_jobs=None,
                           now=0.0, predictions=None, spec=ClusterSpec((("v100", 4),)))
    policy.reset(view)
    for job_id, submit in ((1, 10.0), (2, 5.0)):
        policy.queue_key(Job(job_id, submit, 100.0, 1, "a"))
    with pytest.raises(RuntimeError, match="job 2 queued first after job 1"):
        policy._index.update(view)
