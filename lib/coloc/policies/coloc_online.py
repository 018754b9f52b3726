"""coloc-online: coloc's rule, refining its predictions from the pairs it has run.

What it observes: every `period_s` (and at every arrival and completion) each GPU that holds exactly two
single-GPU jobs, once the two have run together for `observe_s` seconds, gives both jobs' achieved factors
(`SchedulerView.observed_factor`, what a running system measures from iteration times). Each pair
instance is read once. Nothing else is read: no measured pair the policy did not run.

What it learns (in log space, pooled over device types):
* a seen pair (device, job, co-runner) takes the observed value, with no spread (the simulator's
  measurements carry no noise; a real one would keep a spread here);
* an unseen pair's prediction is multiplied by exp(u[job] + v[co-runner] + U[job's family] + V[co-runner's
  family]): job and co-runner effects, per job type and per family, fitted by ridge regression (penalty
  `ridge`, one pseudo-observation of zero per effect) on the residuals log(observed) - log(predicted) of
  the seen pairs (the shape of the `interactions` predictor's effects). Its spread shrinks by
  1 / sqrt(1 + n), n the seen pairs that share its job as job or its co-runner as co-runner.
The refit happens only when a new pair is seen; decisions are then re-read from the refined values.

What it does with it: coloc's rule (coloc.policies.coloc) on the refined values, so a pair seen to be bad
is formed again only where its observed cost still pays against the wait. And, at the observation, a pair
whose observed combined throughput is below what was predicted for it and below 1 is split when staying
costs more than splitting: staying adds (1 - (1 + q)(s - 1)) min(t_a / n_a, t_b / n_b) of completion time
(s = n_a + n_b observed, q = queued jobs per GPU, t solo remaining times), splitting costs the newer job
the restart (`restart_cost_s`) plus its wait (0 when a GPU of its device type is idle: it migrates there;
else it is preempted back to the queue, waiting until the first running job ends: the partner alone, or
another at its observed factor where its set has run together for `observe_s`, as a real scheduler measures
it, else at its predicted factor).
Everything is deterministic: GPUs are visited in order, ties broken by job id.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from coloc.datasets import family_of
from coloc.policies.base import register
from coloc.policies.coloc import Coloc
from coloc.policies.coloc_search import solo_left


@register("coloc-online")
class ColocOnline(Coloc):
    """coloc, refining its pair predictions from the pairs it has run (observed factors) and splitting bad ones."""

    def __init__(self, observe_s: float = 120.0, period_s: float | None = 120.0, ridge: float = 1.0,
                 split: bool = True, **params):
        super().__init__(**params)
        if not observe_s >= 0:
            raise ValueError(f"policy coloc-online: observe_s={observe_s!r}; expected seconds >= 0")
        self.observe_s = float(observe_s)
        self.period_s = period_s
        self.ridge = float(ridge)
        self.split = split

    def reset(self, view) -> None:
        super().reset(view)
        self._seen: dict[tuple[str, str, str], float] = {}  # (device, job, co-runner) -> observed factor
        self._effects: dict[tuple[str, str], float] = {}   # ('job' | 'co' | 'jobf' | 'cof', name) -> log effect
        self._count: dict[tuple[str, str], int] = {}
        self._read: dict[int, frozenset[int]] = {}          # gpu -> the pair instance already read there
        self._fresh = view.cluster.newly_shared = set()
        self._later: list[tuple[float, int]] = []
        self.observed_pairs = 0
        self.splits = 0

    def summary_fields(self) -> dict:
        return {"observed_pairs": self.observed_pairs, "splits": self.splits}

    def schedule(self, view) -> None:
        self._observe(view)
        super().schedule(view)

    # ----- what it believes ------------------------------------------------------------------------------
    def _belief(self, device: str, a: str, b: str) -> tuple[float, float]:
        seen = self._seen.get((device, a, b))
        if seen is not None:
            return seen, 0.0
        mean, std = super()._belief(device, a, b)
        if not self._effects:
            return mean, std
        fa, fb = family_of(a), family_of(b)
        shift = (self._effects.get(("job", a), 0.0) + self._effects.get(("co", b), 0.0)
                 + self._effects.get(("jobf", fa), 0.0) + self._effects.get(("cof", fb), 0.0))
        n = self._count.get(("job", a), 0) + self._count.get(("co", b), 0)
        return stable(mean * math.exp(shift)), std / math.sqrt(1.0 + n)

    def _refit(self) -> None:
        """Ridge fit of the log residuals of the seen pairs on job, co-runner and family effects."""
        keys = sorted(self._seen)
        terms = sorted({t for device, a, b in keys for t in (("job", a), ("co", b), ("jobf", family_of(a)),
                                                             ("cof", family_of(b)))})
        index = {t: i for i, t in enumerate(terms)}
        x = np.zeros((len(keys), len(terms)))
        r = np.empty(len(keys))
        count: dict[tuple[str, str], int] = {}
        for row, (device, a, b) in enumerate(keys):
            for t in (("job", a), ("co", b), ("jobf", family_of(a)), ("cof", family_of(b))):
                x[row, index[t]] = 1.0
            count[("job", a)] = count.get(("job", a), 0) + 1
            count[("co", b)] = count.get(("co", b), 0) + 1
            predicted = min(max(self._preds.norm(device, a, b), 0.01), 1.0)
            r[row] = math.log(max(self._seen[(device, a, b)], 0.01)) - math.log(predicted)
        beta = np.linalg.solve(x.T @ x + self.ridge * np.eye(len(terms)), x.T @ r)
        self._effects = {t: stable(float(beta[i])) for t, i in index.items()}
        self._count = count

    def _forget(self, view) -> None:
        """Drop what was derived from the old beliefs: the cached norms and set rules, and the running jobs'
        predicted ends (read again from the refined values)."""
        self._cache.clear()
        self._rules.clear()
        if view.changed_jobs is not None:
            view.changed_jobs.update(view.running)

    # ----- what it observes ----------------------------------------------------------------------------------
    def _observe(self, view) -> None:
        cluster, now, fresh, later = view.cluster, view.now, self._fresh, self._later
        while later and later[0][0] <= now:
            fresh.add(heapq.heappop(later)[1])
        fresh.intersection_update(cluster.shared_gpus)
        learned, to_split = False, []
        for gpu in sorted(fresh):
            here = list(cluster.residents[gpu])
            fresh.discard(gpu)
            ids = frozenset(j.job_id for j in here)
            if len(here) != 2 or any(len(j.gpus) > 1 for j in here) or self._read.get(gpu) == ids:
                continue
            together = max(j.placed_at for j in here)
            if now - together < self.observe_s or any(j.rate == 0.0 for j in here):
                due = together + self.observe_s
                heapq.heappush(later, (due - 1e-9 * max(1.0, abs(due)), gpu))
                continue
            self._read[gpu] = ids
            self.observed_pairs += 1
            device = cluster.gpu_device[gpu]
            first, second = sorted(here, key=lambda j: j.job_id)
            observed = (view.observed_factor(first), view.observed_factor(second))
            predicted = (self._belief(device, first.workload, second.workload)[0],
                         self._belief(device, second.workload, first.workload)[0])
            for job, other, value in ((first, second, observed[0]), (second, first, observed[1])):
                key = (device, job.workload, other.workload)
                if key not in self._seen:
                    self._seen[key] = value
                    learned = True
            if sum(observed) < min(1.0, sum(predicted)):
                to_split.append((gpu, first, second, observed))
        if learned:
            self._refit()
            self._forget(view)
        if self.split:
            for gpu, first, second, observed in to_split:
                self._maybe_split(view, gpu, first, second, observed)

    def _maybe_split(self, view, gpu: int, first, second, observed) -> None:
        """Split the pair on `gpu` when staying together costs more completion time than the newer job's restart
        and wait (see the module docstring)."""
        cluster, now = view.cluster, view.now
        if set(cluster.residents[gpu]) != {first, second}:
            return
        n_a, n_b = observed
        t_a, t_b = solo_left(first, now), solo_left(second, now)
        queued = len(view.queue) / cluster.num_gpus
        stay = (1.0 - (1.0 + queued) * (n_a + n_b - 1.0)) * min(t_a / n_a, t_b / n_b)
        newer = max((first, second), key=lambda j: (j.placed_at, j.job_id))
        device = cluster.gpu_device[gpu]
        target = cluster.pick_free(device, 1)
        wait = 0.0
        if target is None:  # until the first running job ends: the partner alone, or another at its known factor
            partner = first if newer is second else second
            others = (j for j in view.running.values() if j is not first and j is not second)
            wait = min([solo_left(partner, now)] + [solo_left(j, now) / max(self._known_factor(view, j), 0.01)
                                                    for j in others])
        if stay <= view.restart_cost_s + wait:
            return
        self.splits += 1
        if target is not None:
            view.migrate(newer, target)
        else:
            view.preempt(newer)

    def _known_factor(self, view, job) -> float:
        """A running job's factor as a real scheduler knows it: observed (`SchedulerView.observed_factor`) once every
        set it is in has run together for `observe_s` (measured from iteration times over the window), else
        predicted (coloc's pessimistic factor, from the refined beliefs)."""
        residents, now = view.cluster.residents, view.now
        formed = max(other.placed_at for gpu in job.gpus for other in residents[gpu])
        if now - formed >= self.observe_s:
            return view.observed_factor(job)
        return self._predicted_factor(view, job)


def stable(value: float) -> float:
    """`value` to 12 significant digits. The ridge fit runs through BLAS, whose last bits depend on the CPU's code
    path (another machine's AVX-512 or SSE kernels round differently), and a last bit can tip a near-tie between two
    placements: rounded, another machine feeds the rule the same numbers unless a value lies within the BLAS
    difference of a rounding boundary. It narrows the differences, not removes them: of the default run's 2,940
    simulation runs, 2 differed on this machine with AVX-512 and AVX2 turned off, 1 after rounding."""
    return float(f"{value:.12g}")
