"""policies.ends.PredictedEnds: the running jobs' predicted ends, kept across rounds, equal a fresh loop's, bit
for bit, and so does the k-th least found among the candidates."""
import pytest
from sim_cases import ABC, kept_ends, predictions, trace, truth_abc

from coloc.policies.base import Policy, fill_idle
from coloc.policies.coloc import Coloc
from coloc.policies.ends import PredictedEnds
from coloc.sim import ClusterSpec, simulate


def fresh(view, factor) -> list[float]:
    """What the kept table must equal: a loop over the running jobs, sorted."""
    return sorted(job.remaining_at(view.now) / job.speed / factor(job) for job in view.running.values())


class Checked(Coloc):
    """coloc, comparing the kept ends with a fresh loop before every round's packing."""

    def schedule(self, view):
        fill_idle(view)
        factor = lambda job: self._predicted_factor(view, job)  # noqa: E731
        assert kept_ends(self._ends, view) == fresh(view, factor)
        self.rounds = getattr(self, "rounds", 0) + 1
        super().schedule(view)


class Preempting(Policy):
    """Exclusive placement that preempts the newest running job every third round: stops and restarts."""

    def reset(self, view):
        super().reset(view)
        self.ends, self.n = PredictedEnds(view, lambda job: 1.0), 0

    def schedule(self, view):
        self.n += 1
        if self.n % 3 == 0 and view.running:
            view.preempt(max(view.running.values(), key=lambda j: (j.placed_at, j.job_id)))
        fill_idle(view)
        assert kept_ends(self.ends, view) == fresh(view, lambda job: 1.0)


@pytest.mark.parametrize("cap", [2, 3])
def test_kept_ends_equal_a_fresh_loop_while_jobs_share_finish_and_restart(cap):
    rows = [(i, 9.0 * (i // 2), 200.0 + 53.0 * (i % 7), 1 if i % 6 else 2, "abc"[i % 3]) for i in range(80)]
    preds = predictions(ABC, stds={("a", "b"): (0.05, 0.1)})
    policy = Checked(max_jobs_per_gpu=cap)
    result = simulate(trace(rows), truth_abc(), policy, ClusterSpec((("v100", 6),), gpus_per_node=2,
                                                                     max_jobs_per_gpu=cap), preds)
    assert policy.rounds > 50 and (result.jobs["colocated_time"] > 0).sum() > 10
    result = simulate(trace(rows), truth_abc(), Preempting(), ClusterSpec((("v100", 4),)), restart_cost_s=5.0)
    assert result.stats["preemptions"] > 5


def test_least_ends_from_the_candidates_equal_a_full_sort_while_ends_fall_at_different_rates(monkeypatch):
    """PredictedEnds.least: the k-th least end equals a full sort's at every step, while jobs whose ends fall
    slower or faster than time (rate / speed / factor from 0 to 2 at first, to 11 at the last steps) come, go
    and change, ties included; and most steps are answered from the candidates, without computing every end."""
    from types import SimpleNamespace

    import numpy as np

    from coloc.policies import ends as ends_module
    from coloc.sim.job import RUNNING, Job

    chosen = []
    choose = ends_module.PredictedEnds._choose
    monkeypatch.setattr(ends_module.PredictedEnds, "_choose",
                        lambda self, now, k: chosen.append(now) or choose(self, now, k))
    rng = np.random.default_rng(3)
    factors = {}
    view = SimpleNamespace(changed_jobs=None, running={}, now=0.0)
    ends = PredictedEnds(view, lambda job: factors[job.job_id])

    def progress(job: Job, step: int) -> None:  # ends fall ever faster at later steps, up to 11 per second
        job.rate = job.speed * float(rng.choice([0.0, 0.5, 1.0]))
        factors[job.job_id] = float(rng.choice([1.0, 0.5, 1.0 / (1.0 + step / 40)]))

    def start(job_id: int, step: int) -> None:
        job = Job(job_id, 0.0, 100.0, 1, "a")
        job.state, job.last_update, job.speed = RUNNING, view.now, float(rng.choice([1.0, 2.0, 0.5]))
        job.remaining = float(rng.choice([50.0, 400.0]) if job_id % 5 == 0 else rng.uniform(1.0, 4000.0))
        progress(job, step)
        view.running[job_id] = job
        view.changed_jobs.add(job_id)

    for job_id in range(1500):
        start(job_id, 0)
    next_id, steps = 1500, 400
    for step in range(steps):
        view.now += float(rng.choice([0.0, 0.5, 5.0]))
        for job in list(view.running.values()):  # the ends that ran out, and a few others, stop
            if job.remaining_at(view.now) <= 0 or rng.random() < 0.002:
                del view.running[job.job_id]
                view.changed_jobs.add(job.job_id)
        for job in rng.choice(list(view.running.values()), 5, replace=False):  # rate or co-runners change
            job.remaining, job.last_update = job.remaining_at(view.now), view.now
            progress(job, step)
            view.changed_jobs.add(job.job_id)
        for _ in range(int(rng.integers(0, 4))):
            start(next_id, step)
            next_id += 1
        ends.refresh(view)
        full = sorted(j.remaining_at(view.now) / j.speed / factors[j.job_id] for j in view.running.values())
        for k in (0, 1, 2, 5, 70) if step % 50 == 0 else (0, 1, 3):
            assert ends.least(view.now, k) == full[k], (step, k)
    assert 0 < len(chosen) < steps / 4


def test_a_job_read_again_whose_end_falls_faster_than_the_line_joins_the_candidates():
    """Ends 100..299 falling at 1 per second: the least 64 are the candidates, the line falls at 1 per second
    from the 65th (164). A job read again with its end at 200 but falling at 10 per second is above the line
    then, and below every candidate 15 s later: it must have joined them."""
    from types import SimpleNamespace

    from coloc.sim.job import RUNNING, Job

    factors = {}
    view = SimpleNamespace(changed_jobs=None, running={}, now=0.0)
    ends = PredictedEnds(view, lambda job: factors[job.job_id])
    for i in range(200):
        job = Job(i, 0.0, 100.0, 1, "a")
        job.state, job.remaining, job.rate, job.last_update, job.speed = RUNNING, 100.0 + i, 1.0, 0.0, 1.0
        view.running[i], factors[i] = job, 1.0
        view.changed_jobs.add(i)
    ends.refresh(view)
    assert ends.least(0.0, 0) == 100.0
    fast = view.running[150]
    fast.remaining, factors[150] = 20.0, 0.1  # its end: 20 / 0.1 = 200 now, 50 at 15 s
    view.changed_jobs.add(150)
    ends.refresh(view)
    assert [ends.least(15.0, k) for k in range(3)] == [50.0, 85.0, 86.0]
