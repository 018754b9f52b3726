"""The policy interface and the registry.

A policy sees a SchedulerView (`view`, coloc.sim.view): the queue (`view.queue`,
ordered by the policy's `queue_key`), the cluster (`view.cluster`), the running
jobs, the time and, for predictive policies, `view.predictions`. It knows what a
real scheduler knows: whether a set fits in memory (`view.can_share`), a job
type's profiled solo speed (`view.has_solo`, `view.speed`) and, after the fact,
the factor a running job achieves (`view.observed_factor`). It acts by calling
`view.place(job, gpus)`, `view.preempt(job)` and `view.migrate(job, gpus)`; each
action is checked. The measured co-location numbers are not in the view; a
policy that declares the need "truth" (the oracle, an upper bound) gets them
through its constructor.

Registry: a policy class is registered once, by `@register(name)`, in a module of
this package; every module of the package is imported to find them (no list to
keep). `info(name)` gives a policy's kind and declared needs without building it.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from coloc.sim.job import Job
from reference_sim.queue import fifo_key

_REGISTRY: dict[str, Callable[..., "Policy"]] = {}
KINDS = ("baseline", "predictive", "oracle")  # in the order tables and figures show them
NEEDS = ("norm", "util", "truth")  # predicted pair norms, predicted utilization, the measured pairs


class Policy:
    """Base class: FIFO queue order, no periodic rounds, no predictions needed."""

    name = "policy"
    kind = "baseline"          # one of KINDS
    needs: tuple[str, ...] = ()  # subset of NEEDS the policy cannot run without
    optional: tuple[str, ...] = ()  # prediction kinds used when given
    period_s: float | None = None

    def queue_key(self, job: Job) -> tuple:
        return fifo_key(job)

    def reset(self, view) -> None:
        """Called once before the run; checks the predictions this policy needs."""
        missing = [n for n in self.needs if n != "truth" and not _has(view.predictions, n)]
        if missing:
            raise ValueError(f"policy {self.name!r} needs {missing} predictions; "
                             f"give Predictions with them (see coloc.sim.predictions)")

    def schedule(self, view) -> None:
        raise NotImplementedError


def _has(predictions, what: str) -> bool:
    if predictions is None:
        return False
    return predictions.has_util() if what == "util" else predictions.has_norm()


def register(name: str):
    """Class decorator: make `name` available to `get`; checks the declared kind and needs."""
    def wrap(factory):
        if name in _REGISTRY:
            raise ValueError(f"policy {name!r} registered twice")
        bad = [n for n in (*factory.needs, *factory.optional) if n not in NEEDS]
        if factory.kind not in KINDS or bad:
            raise ValueError(f"policy {name!r}: kind {factory.kind!r} and needs {bad} must be among "
                             f"{KINDS} and {NEEDS}")
        _REGISTRY[name] = factory
        return factory
    return wrap


def get(name: str, **params) -> Policy:
    """A new policy instance by registered name (a policy that needs "truth" takes `truth=`, a GroundTruth)."""
    factory = _factory(name)
    if "truth" in factory.needs and params.get("truth") is None:
        raise ValueError(f"policy {name!r} (kind {factory.kind!r}, an upper bound) needs the measured pairs: "
                         f"give truth=<GroundTruth>")
    policy = factory(**params)
    policy.name = name
    return policy


def names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def info(name: str) -> dict:
    """{'kind', 'needs', 'optional'} of a registered policy, read from its class (nothing is built)."""
    factory = _factory(name)
    return {"kind": factory.kind, "needs": tuple(factory.needs), "optional": tuple(factory.optional)}


def prediction_needs(name: str) -> tuple[str, ...]:
    """Prediction kinds ('norm', 'util') a policy reads, required or optional: the files a run needs."""
    declared = info(name)
    return tuple(n for n in NEEDS if n != "truth" and n in declared["needs"] + declared["optional"])


def _factory(name: str):
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {names()}") from None


def _load_all() -> None:
    """Import every module of this package, so that each registers its policies."""
    package = importlib.import_module(__package__)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{module.name}")


def place_exclusive(view, job: Job) -> bool:
    """Put `job` on idle GPUs of the first device type that has enough; False if none."""
    for device in view.cluster.devices:
        if view.cluster.free_count[device] >= job.num_gpus and view.has_solo(device, job.workload):
            view.place(job, view.cluster.pick_free(device, job.num_gpus))
            return True
    return False


def fill_idle(view) -> None:
    """Start queued jobs in queue order on idle GPUs while any job fits (backfilling)."""
    queue, cluster = view.queue, view.cluster
    while queue:
        job = queue.best(cluster.max_free())
        if job is None:
            return
        if not place_exclusive(view, job):
            # mixed devices: the first fitting job has no solo throughput where GPUs are idle
            for other in queue.ordered(cluster.max_free()):
                place_exclusive(view, other)
            return


def pack_singles(view, choose_gpu, limit: int | None = None) -> None:
    """With no GPU idle, offer single-GPU jobs in queue order to `choose_gpu(job) -> gpu | None`.

    A job whose workload found no GPU is taken as a sign for its whole workload
    this round (the candidates only shrink while packing), so a long queue
    costs one offer per workload, not one per job. `limit` caps the offers.
    """
    cluster, queue = view.cluster, view.queue
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
            view.place(job, (gpu,))
