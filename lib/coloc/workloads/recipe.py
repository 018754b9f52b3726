"""What a job type is made of: a model factory, a synthetic batch, forward, loss, optimizer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TensorSpec:
    """Shape, dtype and distribution of one synthetic batch tensor.

    kind: "normal" (float N(0,1)), "uniform" (float U[0,1)), "bernoulli" (float 0/1 with
    probability `high`), "int" (int64 uniform in [0, high)).
    """

    shape: tuple[int, ...]
    kind: str = "normal"
    high: float = 1.0

    @property
    def dtype(self) -> torch.dtype:
        return torch.int64 if self.kind == "int" else torch.float32


def materialize(specs: Iterable[TensorSpec], device: torch.device, gen: torch.Generator) -> tuple:
    """Synthetic tensors for `specs` on `device` (empty tensors on the meta device)."""
    out = []
    for s in specs:
        if device.type == "meta":
            out.append(torch.empty(s.shape, dtype=s.dtype, device=device))
            continue
        if s.kind == "normal":
            t = torch.randn(s.shape, generator=gen)
        elif s.kind == "uniform":
            t = torch.rand(s.shape, generator=gen)
        elif s.kind == "bernoulli":
            t = torch.bernoulli(torch.full(s.shape, float(s.high)), generator=gen)
        elif s.kind == "int":
            t = torch.randint(0, int(s.high), s.shape, generator=gen)
        else:
            raise ValueError(f"TensorSpec kind {s.kind!r} unknown; expected normal, uniform, bernoulli or int")
        out.append(t.to(device))
    return tuple(out)


@dataclass(frozen=True)
class Recipe:
    """How to train one (family, dataset): everything but the batch size is fixed here."""

    task: str
    model: Callable[[], nn.Module]
    batch: Callable[[int], tuple[TensorSpec, ...]]
    forward: Callable[[nn.Module, tuple], Any]
    criterion: Callable[[Any, tuple], torch.Tensor]
    optimizer: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
    clip_grad_norm: float | None = None
    note: str = ""


def first_input(model: nn.Module, batch: tuple) -> Any:
    """Forward of a model that takes the first batch tensor."""
    return model(batch[0])


def cross_entropy_last(logits: torch.Tensor, batch: tuple) -> torch.Tensor:
    """Cross-entropy of logits against the last batch tensor (class ids)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[-1].reshape(-1))


def sgd(lr: float, weight_decay: float, momentum: float = 0.9):
    def make(params):
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    return make


def adam(lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0, decoupled: bool = False):
    def make(params):
        cls = torch.optim.AdamW if decoupled else torch.optim.Adam
        return cls(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    return make


def image_classification(model: Callable[[], nn.Module], size: int, classes: int,
                         weight_decay: float, channels: int = 3) -> Recipe:
    """Supervised image classification: N(0,1) images, uniform labels, SGD with momentum."""
    return Recipe(
        task="image-classification",
        model=model,
        batch=lambda n: (TensorSpec((n, channels, size, size)), TensorSpec((n,), "int", classes)),
        forward=first_input,
        criterion=cross_entropy_last,
        optimizer=sgd(0.1, weight_decay),
    )
