"""The workload zoo: pure-torch models for every job type, behind one registry.

A job type id is ``<family>-<dataset>-b<batch>``, e.g. ``resnet50-imagenet-b64``, with ``-amp`` at the end for the
same model trained with automatic mixed precision (``resnet18-cifar10-b32-amp``, Lucid's measurements), or a user's own
model named by its import path ``package.module:function`` (:mod:`coloc.workloads.user`: the function
returns the model and its batch; the path is the job type's name and family). ``build`` returns a
:class:`Job` that runs real training steps; on the meta device it allocates nothing, which is what
:mod:`coloc.features` uses.
"""
from __future__ import annotations

import difflib
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch
from torch import nn

from . import user
from .catalog import ENTRIES, Entry
from .recipe import Recipe, TensorSpec, materialize

AMP_SUFFIX = "-amp"

__all__ = ["WorkloadSpec", "Job", "names", "gavel_names", "lucid_names", "known", "check", "spec", "build", "recipe", "entry"]


@dataclass(frozen=True)
class WorkloadSpec:
    """What a job type id says: family, dataset, task and batch size.

    A user's model: family is its import path, dataset and task "user", batch size None until built.
    """

    name: str
    family: str
    dataset: str
    task: str
    batch_size: int | None
    amp: bool = False  # trained under automatic mixed precision (FP16 autocast on CUDA)


@lru_cache(maxsize=1)
def _catalog_names() -> tuple[str, ...]:
    plain = [f"{e.family}-{e.dataset}-b{b}" for e in ENTRIES.values() for b in e.all_batches()]
    amp = [f"{e.family}-{e.dataset}-b{b}{AMP_SUFFIX}" for e in ENTRIES.values() for b in e.amp_batches]
    return tuple(sorted(plain + amp))


def names() -> list[str]:
    """Every job type id, sorted."""
    return list(_catalog_names())


def gavel_names() -> list[str]:
    """The 26 single-GPU job types of Gavel's throughput measurements, sorted."""
    return sorted(n for n in _catalog_names() if entry(n).source == "gavel" and not n.endswith(AMP_SUFFIX)
                  and _parse(n)[2] in entry(n).batch_sizes)


def lucid_names() -> list[str]:
    """The 66 job types of Lucid's RTX 3090 measurements (56 in pairs, 10 solo only), sorted."""
    out = []
    for n in _catalog_names():
        e, batch = entry(n), _parse(n)[2]
        if batch in (e.amp_batches if n.endswith(AMP_SUFFIX) else e.lucid_batches):
            out.append(n)
    return sorted(out)


def known(name: str) -> bool:
    """Whether ``name`` is a job type of the zoo or has the form of a user model's import path."""
    return name in _catalog_names() or user.is_path(name)


def check(name: str) -> None:
    """Fail early on a name that cannot be built: KeyError for an unknown zoo name; for a user model,
    user.UserModelError naming the path (import, function, what it returns, its loss), built on the meta device."""
    if not user.is_path(name):
        entry(name)
        return
    job = build(name, device="meta")
    try:
        loss = job.loss(job.model, job.batch)
    except Exception as err:  # noqa: BLE001 - the user's code: any failure is reported with the path
        raise user.error(f"user model {name!r}: forward and loss failed on the meta device "
                         f"({type(err).__name__}: {err})") from err
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
        raise user.error(f"user model {name!r}: the loss is {user.describe(loss)}"
                         f"{f' of shape {tuple(loss.shape)}' if isinstance(loss, torch.Tensor) else ''}; expected a "
                         "scalar tensor that requires grad (depends on the model's parameters)")


def _parse(name: str) -> tuple[str, str, int] | None:
    """(family, dataset, batch) of a zoo name (an AMP name: of the model it trains under autocast)."""
    if name.endswith(AMP_SUFFIX):
        name = name[: -len(AMP_SUFFIX)]
    family, _, rest = name.partition("-")
    dataset, _, batch = rest.rpartition("-b")
    if not family or not dataset or not batch.isdigit():
        return None
    return family, dataset, int(batch)


def _unknown(name: str) -> KeyError:
    close = difflib.get_close_matches(name, _catalog_names(), n=5, cutoff=0.6)
    hint = f"close matches: {', '.join(close)}" if close else "see coloc.workloads.names()"
    return KeyError(f"unknown job type {name!r} (expected <family>-<dataset>-b<batch>, or a user model's import "
                    f"path {user.FORM}); {hint}")


def entry(name: str) -> Entry:
    """The catalog entry (family, dataset, batch sizes, provenance) of a job type id."""
    parsed = _parse(name)
    if parsed is None or (parsed[0], parsed[1]) not in ENTRIES:
        raise _unknown(name)
    found = ENTRIES[parsed[0], parsed[1]]
    if parsed[2] not in (found.amp_batches if name.endswith(AMP_SUFFIX) else found.all_batches()):
        raise _unknown(name)
    return found


def recipe(name: str, reduced: bool = False) -> Recipe:
    """The training recipe of a job type (reduced: shorter inputs for unit tests)."""
    return entry(name).recipe(reduced)


def spec(name: str) -> WorkloadSpec:
    """Parse and validate a job type id (a user model's path: its form only)."""
    if user.is_path(name):
        return WorkloadSpec(name, name, "user", "user", None)
    e = entry(name)
    return WorkloadSpec(name, e.family, e.dataset, e.recipe(False).task, _parse(name)[2], name.endswith(AMP_SUFFIX))


def _seeds(seed: int, count: int) -> list[int]:
    """Independent 32-bit seeds, one per randomness source, derived from one seed."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(count)]


@dataclass
class Job:
    """A built job type: model, synthetic batch, loss and optimizer on one device."""

    spec: WorkloadSpec
    model: nn.Module
    batch: tuple
    optimizer: torch.optim.Optimizer
    recipe: Recipe
    device: torch.device
    step_seed: int
    _cpu_rng: torch.Tensor = field(default=None, repr=False)
    _device_rng: torch.Tensor | None = field(default=None, repr=False)

    def loss(self, model: nn.Module, batch: tuple) -> torch.Tensor:
        """Forward pass and training loss (a scalar tensor)."""
        return self.recipe.criterion(self.recipe.forward(model, batch), batch)

    def step(self) -> float:
        """One training step (zero_grad, forward, loss, backward, optimizer step); the loss."""
        if self.device.type == "meta":
            raise RuntimeError(f"{self.spec.name}: a training step needs real tensors, not the meta device")
        with self._own_rng():
            self.optimizer.zero_grad(set_to_none=True)
            # AMP job types run forward and loss under FP16 autocast on CUDA (elsewhere as FP32: autocast on a
            # CPU would be bfloat16, another precision); no loss scaling (a step's time, not its convergence)
            with torch.autocast("cuda", torch.float16, enabled=self.spec.amp and self.device.type == "cuda"):
                loss = self.loss(self.model, self.batch)
            loss.backward()
            if self.recipe.clip_grad_norm is not None:
                nn.utils.clip_grad_norm_(self.model.parameters(), self.recipe.clip_grad_norm)
            self.optimizer.step()
        return float(loss.detach())

    @contextmanager
    def _own_rng(self):
        """Run with this job's own random stream (dropout), leaving the caller's untouched."""
        cuda = [self.device.index if self.device.index is not None else torch.cuda.current_device()] \
            if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda, device_type="cuda"):
            if self._cpu_rng is None:
                self._cpu_rng = torch.Generator().manual_seed(self.step_seed).get_state()
            torch.set_rng_state(self._cpu_rng)
            if cuda:
                if self._device_rng is None:
                    torch.cuda.manual_seed(self.step_seed)
                else:
                    torch.cuda.set_rng_state(self._device_rng, cuda[0])
            yield
            self._cpu_rng = torch.get_rng_state()
            if cuda:
                self._device_rng = torch.cuda.get_rng_state(cuda[0])


def build(name: str, device: str | torch.device = "cpu", batch_size: int | None = None, seed: int = 0,
          *, reduced: bool = False) -> Job:
    """Build a job type on `device` ("meta" allocates nothing).

    batch_size overrides the job type's batch (small unit tests); reduced=True shortens
    images and sequences where the architecture allows (unit tests only). A user model
    (:mod:`coloc.workloads.user`) ignores both: its function fixes the batch.
    """
    if user.is_path(name):
        return _build_user(name, torch.device(device), seed)
    wl = spec(name)
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"{name}: batch_size must be a positive integer, got {batch_size}")
    device = torch.device(device)
    rec = recipe(name, reduced)
    init_seed, data_seed, step_seed = _seeds(seed, 3)
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(init_seed)
        if device.type == "meta":
            with torch.device("meta"):
                model = rec.model()
        else:
            model = rec.model().to(device)
    model.train()
    specs: tuple[TensorSpec, ...] = rec.batch(batch_size or wl.batch_size)
    batch = materialize(specs, device, torch.Generator().manual_seed(data_seed))
    return Job(wl, model, batch, rec.optimizer(model.parameters()), rec, device, step_seed)


def _build_user(path: str, device: torch.device, seed: int) -> Job:
    """A user's model as a Job: its function called under the init seed, the zoo's step seeds."""
    init_seed, _, step_seed = _seeds(seed, 3)
    model, batch, rec = user.make(path, device, init_seed)
    model.train()
    size = int(batch[0].shape[0]) if batch[0].dim() else None
    return Job(WorkloadSpec(path, path, "user", "user", size), model, batch, rec.optimizer(model.parameters()), rec,
               device, step_seed)
