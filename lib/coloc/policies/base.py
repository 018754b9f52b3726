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
`@register(name, **preset)` registers a preset: the class with those parameters set
(`coloc-fifo` is `coloc` with `order="fifo"`).

Parameters: a policy declares those a config entry may set (`coloc(order=fifo)`,
coloc.policies.entry) in `parameters`, {name: what it takes}: a type (`float`: a
number, an integer too; `int`, `bool`, `str`), a union with None (`int | None`), or
a tuple of the values allowed (`("sjf", "fifo")`). Each is a keyword of the
constructor (checked at registration); `parameter_problems` checks given values.
"""
from __future__ import annotations

import heapq
import importlib
import inspect
import os
import pkgutil
import types
from collections.abc import Callable, Mapping

from coloc.sim.job import Job
from coloc.sim.queue import fifo_key

_REGISTRY: dict[str, Callable[..., "Policy"]] = {}
_PRESETS: dict[str, dict] = {}  # a preset's name -> the parameters it sets
KINDS = ("baseline", "predictive", "oracle")  # in the order tables and figures show them
NEEDS = ("norm", "util", "truth")  # predicted pair norms, predicted utilization, the measured pairs


class Policy:
    """Base class: FIFO queue order, no periodic rounds, no predictions needed."""

    name = "policy"
    kind = "baseline"          # one of KINDS
    needs: tuple[str, ...] = ()  # subset of NEEDS the policy cannot run without
    optional: tuple[str, ...] = ()  # prediction kinds used when given
    period_s: float | None = None
    shares_gpus = True         # False: never co-locates, so the cluster keeps no sharing index (and refuses it)
    max_jobs_per_gpu: int | None = None  # the policy's own limit; None: the cluster's cap (memory decides below it)
    parameters: Mapping[str, object] = {}  # what a config entry may set: {constructor keyword: type or values}

    def queue_key(self, job: Job) -> tuple:
        return fifo_key(job)

    def reset(self, view) -> None:
        """Called once before the run; checks the predictions this policy needs."""
        missing = [n for n in self.needs if n != "truth" and not _has(view.predictions, n)]
        if missing:
            raise ValueError(f"policy {self.name!r} needs {missing} predictions; "
                             f"give Predictions with them (see coloc.sim.predictions)")

    @classmethod
    def data_problem(cls, truth, devices, workloads) -> str | None:
        """Why the policy cannot run jobs of `workloads` on `devices` with the data `truth` gives (its solo table's
        columns), or None: for a caller to skip a policy up front, with the reason, rather than fail in the run."""
        return None

    def schedule(self, view) -> None:
        raise NotImplementedError

    def summary_fields(self) -> dict:
        """Columns the run's summary row records about how the policy ran (after the run)."""
        return {}


def _has(predictions, what: str) -> bool:
    if predictions is None:
        return False
    return predictions.has_util() if what == "util" else predictions.has_norm()


def register(name: str, **preset):
    """Class decorator: make `name` available to `get`; checks the declared kind, needs and parameters. With
    `preset` parameters, `name` is the class with those set (e.g. an ablation), its other parameters as declared."""
    def wrap(factory):
        if name in _REGISTRY:
            raise ValueError(f"policy {name!r} registered twice")
        bad = [n for n in (*factory.needs, *factory.optional) if n not in NEEDS]
        if factory.kind not in KINDS or bad:
            raise ValueError(f"policy {name!r}: kind {factory.kind!r} and needs {bad} must be among "
                             f"{KINDS} and {NEEDS}")
        _check_declared(name, factory)
        problems = _problems(name, factory.parameters, preset)
        if problems:
            raise ValueError(f"preset {name!r}: " + "; ".join(problems))
        _REGISTRY[name] = factory
        if preset:
            _PRESETS[name] = dict(preset)
        return factory
    return wrap


def _check_declared(name: str, factory) -> None:
    """Each declared parameter is a keyword of the constructor and declares a type, a union or allowed values."""
    if not factory.parameters:
        return
    signature = inspect.signature(factory)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    for key, expected in factory.parameters.items():
        if key not in signature.parameters and not takes_any:
            raise ValueError(f"policy {name!r} declares parameter {key!r}, which its constructor "
                             f"{factory.__name__}{signature} does not take")
        if not isinstance(expected, (type, types.UnionType, tuple)) or expected == ():
            raise ValueError(f"policy {name!r}: parameter {key!r} declared as {expected!r}; expected a type, "
                             f"a union such as int | None, or a tuple of the values allowed")


def get(name: str, **params) -> Policy:
    """A new policy instance by registered name (a policy that needs "truth" takes `truth=`, a GroundTruth); a
    preset's parameters are set first."""
    factory = _factory(name)
    if "truth" in factory.needs and params.get("truth") is None:
        raise ValueError(f"policy {name!r} (kind {factory.kind!r}, an upper bound) needs the measured pairs: "
                         f"give truth=<GroundTruth>")
    policy = factory(**_PRESETS.get(name, {}), **params)
    policy.name = name
    return policy


def parameters(name: str) -> dict[str, object]:
    """The parameters a config entry of policy `name` may set: its class's declared ones, less those its preset
    sets."""
    preset = _PRESETS.get(name, {})
    return {k: v for k, v in _factory(name).parameters.items() if k not in preset}


def parameter_problems(name: str, params: Mapping) -> list[str]:
    """Why `params` do not fit registered policy `name` (empty if they do): each parameter it does not declare, or
    whose value is not of the declared type or among the allowed values, named with what was expected."""
    return _problems(name, parameters(name), params, _PRESETS.get(name, {}))


def _problems(name: str, declared: Mapping, params: Mapping, preset: Mapping | None = None) -> list[str]:
    problems = []
    for key, value in params.items():
        if key in (preset or {}):
            problems.append(f"policy {name!r} is a preset that sets {key}={preset[key]!r}; a parameter it sets "
                            f"cannot be given")
        elif key not in declared:
            takes = ", ".join(f"{k} ({expectation(v)})" for k, v in declared.items()) or "none"
            problems.append(f"policy {name!r} has no parameter {key!r}; it takes: {takes}")
        elif not fits(value, declared[key]):
            problems.append(f"policy {name!r}: parameter {key!r} = {value!r}; expected {expectation(declared[key])}")
    return problems


def fits(value, expected) -> bool:
    """Whether `value` is what a declaration `expected` allows (a bool is no number; an int is a float)."""
    if isinstance(expected, tuple):
        return any(value == v and type(value) is type(v) for v in expected)
    allowed = expected.__args__ if isinstance(expected, types.UnionType) else (expected,)
    for kind in allowed:
        if kind is type(None) and value is None or kind is bool and isinstance(value, bool):
            return True
        if kind in (int, float) and isinstance(value, bool):
            continue
        if isinstance(value, kind) or kind is float and isinstance(value, int):
            return True
    return False


def expectation(expected) -> str:
    """A declaration in words: 'a number', 'an integer or null', "one of ['sjf', 'fifo']"."""
    if isinstance(expected, tuple):
        return f"one of {list(expected)}"
    words = {int: "an integer", float: "a number", bool: "true or false", str: "text", type(None): "null"}
    allowed = expected.__args__ if isinstance(expected, types.UnionType) else (expected,)
    return " or ".join(words.get(kind, kind.__name__) for kind in allowed)


def names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def info(name: str) -> dict:
    """{'kind', 'needs', 'optional'} of a registered policy, read from its class (nothing is built)."""
    factory = _factory(name)
    return {"kind": factory.kind, "needs": tuple(factory.needs), "optional": tuple(factory.optional)}


def data_problem(name: str, truth, devices, workloads) -> str | None:
    """Why policy `name` cannot run `workloads` on `devices` with `truth`'s data, or None
    (:meth:`Policy.data_problem`)."""
    return _factory(name).data_problem(truth, tuple(devices), tuple(workloads))


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


_SCANNED: list = []  # the package folders' listing when every module of it was last imported


def _load_all() -> None:
    """Import every module of this package, so that each registers its policies (again only when a file of the
    package was added or removed since: the registry is read thousands of times by a config check)."""
    package = importlib.import_module(__package__)
    listing = sorted(name for folder in package.__path__ for name in os.listdir(folder))
    if listing == _SCANNED:
        return
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{module.name}")
    _SCANNED[:] = listing


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
        free = cluster.max_free()
        if not free:
            return  # no idle GPU (most rounds at load): no job fits
        job = queue.best(free)
        if job is None:
            return
        if not place_exclusive(view, job):
            # mixed devices: the first fitting job has no solo throughput where GPUs are idle
            for other in queue.ordered(cluster.max_free()):
                if other.num_gpus <= cluster.max_free():  # (a larger job fits nowhere: no need to try)
                    place_exclusive(view, other)
                if cluster.max_free() == 0:
                    return
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


def first_come_with_skipping(view, choose, failing: set[str] | frozenset = frozenset()) -> None:
    """Volcano's order: every queued job in queue order gets `choose(view, job) -> gpus | None`; a job that fits
    nowhere is passed over, and so are the later jobs of its workload and GPU count this round (room only shrinks).

    `choose` must give a job of several GPUs whole idle GPUs (so one needing more than any device type has idle fits
    nowhere). The next job offered is the first queued one whose workload and GPU count have not failed this round
    (the jobs before it were placed, or are of a failed kind): the single-GPU jobs' first per workload (a heap of
    `JobQueue.single_heads`, a workload dropped when its job fails), and each larger GPU count's first past its failed kinds, a count above the most idle
    GPUs skipped whole; so a round never walks the queue. `failing`: single-GPU job types the caller knows fit
    nowhere now (passed over without an offer, as an offer would fail)."""
    queue, cluster = view.queue, view.cluster
    failed: set[tuple[str, int]] = set()
    singles = [head for head in queue.single_heads() if head[1] not in failing]  # a heap of (first entry,
    # workload) of the single-GPU job types not failed
    heapq.heapify(singles)
    passed: dict[int, tuple] = {}  # GPU count > 1 -> the last entry of it passed over (those before failed too)
    while cluster.max_free() or cluster.any_shareable():
        best = singles[0][0] if singles else None
        most = cluster.max_free()
        for size in [n for n in queue.sizes() if 1 < n <= most]:
            entry = queue.first_after(size, passed.get(size))
            while entry is not None and (queue.job(entry).workload, size) in failed:
                passed[size] = entry
                entry = queue.first_after(size, entry)
            if entry is not None and (best is None or entry < best):
                best = entry
        if best is None:
            return
        job = queue.job(best)
        gpus = choose(view, job)
        if gpus is not None:
            view.place(job, gpus)
        if job.num_gpus == 1:
            heapq.heappop(singles)
            head = None if gpus is None else queue.first_single(job.workload)
            if head is not None:
                heapq.heappush(singles, (head, job.workload))
        elif gpus is None:
            failed.add((job.workload, job.num_gpus))
            passed[job.num_gpus] = best


def whole_idle_gpus(view, job) -> tuple[int, ...] | None:
    """Idle GPUs for `job` on the first device type that runs it and has enough (as few nodes as possible); None."""
    for device in view.cluster.devices:
        if view.has_solo(device, job.workload):
            gpus = view.cluster.pick_free(device, job.num_gpus)
            if gpus is not None:
                return gpus
    return None
