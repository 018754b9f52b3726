"""policies.ends.PredictedEnds: the running jobs' predicted ends, kept across rounds, equal a fresh loop's, bit for bit."""
import pytest
from sim_cases import ABC, predictions, trace, truth_abc

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
        assert self._ends.sorted_at(view).tolist() == fresh(view, factor)
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
        assert self.ends.sorted_at(view).tolist() == fresh(view, lambda job: 1.0)


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
