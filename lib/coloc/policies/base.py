"""The policy interface and the registry.

A policy sees the simulator (`sim`): the queue (`sim.queue`, ordered by the
policy's `queue_key`), the cluster (`sim.cluster`), the jobs and, for
predictive policies, `sim.predictions`. It acts by calling `sim.place(job,
gpus)`, `sim.preempt(job)` and `sim.migrate(job, gpus)`; the simulator checks
each action. Policies never read the ground truth's co-location numbers, only
`sim.can_share` (whether a set fits in memory, which every scheduler knows
from the jobs' declared memory) and, after the fact, `sim.observed_factor`.
"""
from __future__ import annotations

from collections.abc import Callable

from coloc.sim.job import Job
from coloc.sim.queue import fifo_key

_REGISTRY: dict[str, Callable[..., "Policy"]] = {}


class Policy:
    """Base class: FIFO queue order, no periodic rounds, no predictions needed."""

    name = "policy"
    kind = "baseline"          # baseline | predictive | oracle
    needs: tuple[str, ...] = ()  # subset of ("norm", "util"): prediction kinds required
    optional: tuple[str, ...] = ()  # prediction kinds used when given
    period_s: float | None = None

    def queue_key(self, job: Job) -> tuple:
        return fifo_key(job)

    def reset(self, sim) -> None:
        """Called once before the run; checks the predictions this policy needs."""
        missing = [n for n in self.needs if not _has(sim.predictions, n)]
        if missing:
            raise ValueError(f"policy {self.name!r} needs {missing} predictions; "
                             f"give Predictions with them (see coloc.sim.predictions)")

    def schedule(self, sim) -> None:
        raise NotImplementedError

    def describe(self) -> dict:
        """Name, kind and parameters, for result tables."""
        params = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        return {"policy": self.name, "kind": self.kind, **params}


def _has(predictions, what: str) -> bool:
    if predictions is None:
        return False
    return predictions.has_util() if what == "util" else predictions.has_norm()


def register(name: str):
    """Class decorator: make `name` available to `get`."""
    def wrap(factory):
        if name in _REGISTRY:
            raise ValueError(f"policy {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory
    return wrap


def get(name: str, **params) -> Policy:
    """A new policy instance by registered name."""
    _load_all()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {names()}") from None
    policy = factory(**params)
    policy.name = name
    return policy


def names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def _load_all() -> None:
    from coloc.policies import exclusive, tiresias, gandiva, horus, isacpp, jct_pack  # noqa: F401


def place_exclusive(sim, job: Job) -> bool:
    """Put `job` on idle GPUs of the first device type that has enough; False if none."""
    for device in sim.cluster.devices:
        if sim.cluster.free_count[device] >= job.num_gpus and sim.truth.has_solo(device, job.workload):
            sim.place(job, sim.cluster.pick_free(device, job.num_gpus))
            return True
    return False


def fill_idle(sim) -> None:
    """Start queued jobs in queue order on idle GPUs while any job fits (backfilling)."""
    queue, cluster = sim.queue, sim.cluster
    while queue:
        job = queue.best(cluster.max_free())
        if job is None:
            return
        if not place_exclusive(sim, job):
            # mixed devices: the first fitting job has no solo throughput where GPUs are idle
            for other in queue.ordered(cluster.max_free()):
                place_exclusive(sim, other)
            return


def pack_singles(sim, choose_gpu, limit: int | None = None) -> None:
    """With no GPU idle, offer single-GPU jobs in queue order to `choose_gpu(job) -> gpu | None`.

    A job whose workload found no GPU is taken as a sign for its whole workload
    this round (the candidates only shrink while packing), so a long queue
    costs one offer per workload, not one per job. `limit` caps the offers.
    """
    cluster, queue = sim.cluster, sim.queue
    skip: set[str] = set()
    offers = 0
    while cluster.max_free() == 0 and cluster.any_shareable():
        job = queue.best_single(skip)
        if job is None or (limit is not None and offers >= limit):
            return
        offers += 1
        gpu = choose_gpu(job)
        if gpu is None:
            skip.add(job.workload)
        else:
            sim.place(job, (gpu,))
