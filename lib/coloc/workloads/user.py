"""A user's own model as a job type: the import path ``package.module:function`` names it.

The function takes no arguments and returns ``(model, batch)`` or ``(model, batch, loss_fn)``:

* ``model``: a ``torch.nn.Module``;
* ``batch``: a tensor (``model(batch)``), a tuple or list of tensors (``model(*batch)``) or a dict of
  tensors (``model(**batch)``); it is moved to the job's device with the model;
* ``loss_fn(model, batch)``: the forward pass and the training loss, a scalar tensor (the batch as returned,
  on the device; a list comes as a tuple). Without it the forward is as above and the loss is the synthetic objective
  ``output.float().pow(2).mean()`` (the output must then be a tensor): the mean square of the output.

The training step is the zoo's: zero_grad, forward, loss, backward, then Adam (lr 1e-4, torch's other
defaults). The function runs with torch's CPU generator seeded from the job's seed, so a seeded random
model and batch come out the same on every run. The batch fixes the batch size (the profiler's
``batch_size`` and ``reduced`` test settings do not apply).

The module must be importable where coloc runs, in the profiler's worker processes too: on
``PYTHONPATH`` or installed. The function is also called under ``torch.device("meta")`` (checking it
before anything is measured, and the features table): create its tensors with torch's factory
functions, not from data on disk. The profiler's log knows a model by its path only: after changing
the model, measure it into a new log.
"""
from __future__ import annotations

import importlib
import re
from contextlib import nullcontext
from typing import Any, Callable

import torch
from torch import nn

from .recipe import Recipe, adam

PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
LEARNING_RATE = 1e-4
FORM = "package.module:function, a function returning (model, batch) or (model, batch, loss_fn)"


def is_path(name: str) -> bool:
    """Whether ``name`` has the form of an import path ``package.module:function``."""
    return isinstance(name, str) and PATH.fullmatch(name) is not None


class UserModelError(ValueError):
    """A user's model that cannot be had or trained (the message names its import path and what was expected);
    the profiler raises it as a ProfilerError (:func:`coloc.profiler.sweep.check`)."""


def error(message: str) -> UserModelError:
    return UserModelError(message)


def load(path: str) -> Callable[[], Any]:
    """The function an import path names; UserModelError naming the path when it cannot be had."""
    if not is_path(path):
        raise error(f"user model {path!r}: expected an import path {FORM}")
    module_name, _, function_name = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise error(f"user model {path!r}: cannot import module {module_name!r} ({type(err).__name__}: {err}); "
                    "put its folder on PYTHONPATH or install it") from err
    except Exception as err:  # noqa: BLE001 - the user's module: any failure is reported with the path
        raise error(f"user model {path!r}: importing module {module_name!r} raised {type(err).__name__}: {err}") \
            from err
    function = getattr(module, function_name, None)
    if not callable(function):
        raise error(f"user model {path!r}: module {module_name!r} ({getattr(module, '__file__', '?')}) has no "
                    f"function {function_name!r}")
    return function


def make(path: str, device: torch.device, seed: int) -> tuple[nn.Module, tuple[torch.Tensor, ...], Recipe]:
    """Call the function under ``seed`` (under the meta device when ``device`` is meta).

    Returns the model and the batch's tensors (a tuple, like the zoo's batches) on ``device``, and the
    recipe that trains them (forward and loss see the batch in the structure the function returned).
    """
    function = load(path)
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        with torch.device("meta") if device.type == "meta" else nullcontext():
            try:
                result = function()
            except Exception as err:  # noqa: BLE001 - the user's code: any failure is reported with the path
                where = " on the meta device" if device.type == "meta" else ""
                raise error(f"user model {path!r}: calling it{where} raised {type(err).__name__}: {err}") from err
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):
        raise error(f"user model {path!r}: returned {describe(result)}; expected (model, batch) or (model, batch, "
                    "loss_fn)")
    model, batch, *rest = result
    if not isinstance(model, nn.Module):
        raise error(f"user model {path!r}: the model it returned is {describe(model)}; expected a torch.nn.Module")
    flat = _tensors(batch)
    if not flat:
        raise error(f"user model {path!r}: the batch it returned is {describe(batch)}; expected a tensor, or a "
                    "tuple, list or dict of tensors")
    loss_fn = rest[0] if rest else None
    if loss_fn is not None and not callable(loss_fn):
        raise error(f"user model {path!r}: the loss_fn it returned is {describe(loss_fn)}; expected a function "
                    "(model, batch) -> scalar tensor")
    keys = list(batch) if isinstance(batch, dict) else None
    single = isinstance(batch, torch.Tensor)

    def structured(tensors: tuple) -> Any:
        return tensors[0] if single else dict(zip(keys, tensors, strict=True)) if keys is not None else tuple(tensors)

    if loss_fn is None:
        steps = dict(forward=lambda m, b: forward(m, structured(b)), criterion=synthetic_loss)
    else:  # the user's function does forward and loss
        steps = dict(forward=lambda m, b: loss_fn(m, structured(b)), criterion=lambda loss, b: loss)
    recipe = Recipe(task="user", model=lambda: model, batch=lambda n: (), optimizer=adam(LEARNING_RATE),
                    note=f"user model {path}", **steps)
    return model.to(device), tuple(t.to(device) for t in flat), recipe


def synthetic_loss(output: Any, batch: Any) -> torch.Tensor:
    """The default training objective: the mean square of the model's output tensor."""
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"the model's output is {describe(output)}: the default loss (output.float().pow(2).mean()) "
                        "needs a tensor; return (model, batch, loss_fn) with loss_fn(model, batch) -> scalar tensor")
    return output.float().pow(2).mean()


def forward(model: nn.Module, batch: Any) -> Any:
    """The model on its batch: a tensor as the one argument, a tuple or list as arguments, a dict as keywords."""
    if isinstance(batch, dict):
        return model(**batch)
    if isinstance(batch, (tuple, list)):
        return model(*batch)
    return model(batch)


def _tensors(batch: Any) -> list[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, (tuple, list)) and batch and all(isinstance(t, torch.Tensor) for t in batch):
        return list(batch)
    if isinstance(batch, dict) and batch and all(isinstance(t, torch.Tensor) for t in batch.values()):
        return list(batch.values())
    return []


def describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} ({', '.join(type(v).__name__ for v in value)})"
    return f"a {type(value).__name__}"
