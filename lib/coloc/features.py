"""Model-graph features of a job type, measured with torch's own machinery on the meta device.

* FLOPs: ``torch.utils.flop_counter.FlopCounterMode`` (a multiply-add counts as 2 FLOPs;
  it counts matrix products and convolutions, not element-wise work). ``flops_fwd`` is the
  model forward and loss, ``flops_step`` adds the backward pass (optimizer updates are
  element-wise and not counted). torch 2.13 counts the weight gradient of a grouped
  convolution `groups` times too often; :func:`flop_counter` corrects that formula.
* Activation bytes: distinct storages saved for backward during forward and loss
  (``torch.autograd.graph.saved_tensors_hooks``), without parameters, buffers (e.g.
  batch-norm running statistics) and the input batch.
* Operator counts: graph nodes of one forward pass, seen by a ``TorchFunctionMode`` at the
  level a user writes them (``F.conv2d``, ``torch.cat``, ``x + y``, ``nn.LSTM``'s fused
  call, ...). Only calls on the data path count: at least one argument is a parameter, an
  input tensor, or the output of an earlier counted call. A recurrent layer counts once per
  layer and direction per call; a recurrent cell once per call.

* Automatic mixed precision (AMP job types, ``...-amp``): the same graph, so the same FLOPs, parameters and
  operator counts; ``amp`` is 1 (0 otherwise) and ``activation_bytes`` is half the FP32 count (autocast keeps
  the activations of matrix products and convolutions, most of what backward saves, in FP16; an estimate:
  autocast does not act on the meta device, and keeps some tensors, e.g. normalization statistics, in FP32).
  Parameters stay FP32 (``param_bytes`` unchanged), as autocast keeps them.

Nothing is allocated: models and batches are built on the meta device, so features of
big batches cost no memory.
"""
from __future__ import annotations

import multiprocessing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Iterable

import pandas as pd
import torch
from torch.overrides import TorchFunctionMode
from torch.utils import flop_counter as torch_flops
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode
from tqdm import tqdm

from . import workloads

OP_KINDS = ("conv", "linear", "matmul", "norm", "relu", "gelu", "silu", "tanh", "sigmoid",
            "softmax", "pool", "dropout", "embedding", "recurrent", "add", "mul", "concat",
            "reshape", "other")
ACTIVATION_KINDS = ("relu", "gelu", "silu", "tanh", "sigmoid", "softmax")
COARSE = ("conv", "linear", "activation", "other")   # Horus's four layer classes
AMP_ACTIVATION_DIVISOR = 2  # FP16 activations under autocast: half the bytes of FP32 (module docstring)

_NAMES_BY_KIND = {
    "conv": "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution",
    "linear": "linear bilinear mm addmm",
    "matmul": "bmm baddbmm einsum scaled_dot_product_attention",
    "norm": "batch_norm layer_norm group_norm instance_norm rms_norm local_response_norm normalize",
    "relu": "relu relu6 leaky_relu hardtanh elu selu celu prelu rrelu threshold",
    "gelu": "gelu",
    "silu": "silu hardswish mish",
    "tanh": "tanh",
    "sigmoid": "sigmoid hardsigmoid logsigmoid",
    "softmax": "softmax log_softmax softmin",
    "pool": ("max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d "
             "adaptive_max_pool1d adaptive_max_pool2d adaptive_avg_pool1d adaptive_avg_pool2d "
             "adaptive_avg_pool3d lp_pool2d"),
    "dropout": "dropout dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout",
    "embedding": "embedding embedding_bag",
    "recurrent": "lstm gru rnn_tanh rnn_relu lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell",
    "add": "add sub rsub iadd isub radd",
    "mul": "mul div truediv rmul imul itruediv rtruediv",
    "concat": "cat concat concatenate stack hstack vstack",
    "reshape": ("view view_as reshape reshape_as flatten unflatten permute transpose t T mT "
                "squeeze unsqueeze expand expand_as contiguous chunk split narrow getitem select "
                "unbind movedim repeat gather index_select"),
}
_KIND = {name: kind for kind, names in _NAMES_BY_KIND.items() for name in names.split()}
_BOOKKEEPING = set("detach requires_grad_ to type type_as float double half cpu cuda clone "
                   "data grad".split())
_CREATION = set("new_zeros new_ones new_empty new_full new_tensor zeros_like ones_like empty_like "
                "full_like rand_like randn_like randint_like".split())
_MULTI_LAYER_RNN = {"lstm", "gru", "rnn_tanh", "rnn_relu"}


def op_name(func: Any) -> str:
    """Normalised name of a torch callable: 'x.add_' and 'x.__iadd__' -> 'add' / 'iadd'."""
    name = getattr(func, "__name__", "") or ""
    if name == "__get__":  # a tensor attribute such as x.T
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    name = name.strip("_")
    return name[:-1] if name.endswith("_") and name[:-1] in _KIND else name


def op_kind(name: str, args: tuple) -> str | None:
    """Operator kind of a call, or None for bookkeeping calls that are not graph nodes."""
    if name in _BOOKKEEPING:
        return None
    if name in ("matmul", "rmatmul"):
        dims = [a.dim() for a in args[:2] if isinstance(a, torch.Tensor)]
        return "linear" if dims and max(dims) <= 2 else "matmul"
    return _KIND.get(name, "other")


def recurrent_layers(name: str, args: tuple) -> int:
    """Layers x directions of a fused recurrent call (num_layers, dropout, train, bidirectional)."""
    if name not in _MULTI_LAYER_RNN:
        return 1
    ints = [i for i, a in enumerate(args) if type(a) is int]
    if not ints or len(args) <= ints[0] + 3:
        raise ValueError(f"cannot read num_layers/bidirectional from the arguments of {name}")
    return args[ints[0]] * (2 if args[ints[0] + 3] else 1)


class OpCounter(TorchFunctionMode):
    """Counts graph nodes of one forward pass by kind, following the data path from `roots`."""

    def __init__(self, roots: Iterable[torch.Tensor]):
        super().__init__()
        self.keep = list(roots)   # keeps ids unique while counting
        self.on_path = {id(t) for t in self.keep}
        self.counts: Counter[str] = Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        name = op_name(func)
        if not outputs or name in _CREATION:
            return out
        if not any(isinstance(a, torch.Tensor) and id(a) in self.on_path for a in tree_leaves((args, kwargs))):
            return out
        kind = op_kind(name, args)
        if kind is not None:
            self.counts[kind] += recurrent_layers(name, args) if kind == "recurrent" else 1
        for t in outputs:
            self.on_path.add(id(t))
            self.keep.append(t)
        return out


class SavedTensors:
    """Records the distinct storages autograd saves for backward, except `exclude`d ones."""

    def __init__(self, exclude: Iterable[torch.Tensor]):
        self.excluded = {t.untyped_storage()._cdata for t in exclude}
        self.sizes: dict[int, int] = {}
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage._cdata not in self.excluded:
            self.sizes[storage._cdata] = storage.nbytes()
        return t

    @property
    def nbytes(self) -> int:
        return sum(self.sizes.values())

    def __enter__(self):
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        return self.hooks.__exit__(*exc)


def _weight_grad_overcount() -> int:
    """How many times too often torch counts a grouped convolution's weight gradient.

    Probe: depthwise 1x1 convolution, 2 channels, one pixel; its weight gradient is 2 multiply-adds.
    """
    shape = [1, 2, 1, 1]
    counted = torch_flops.conv_backward_flop(shape, shape, [2, 1, 1, 1], None, [1, 1], [0, 0], [1, 1], False,
                                             [0, 0], 2, [False, True, False], out_val=[None, [2, 1, 1, 1], None])
    return counted // 4  # 2 (groups) while torch ignores groups there, 1 once it does not


_OVERCOUNT = _weight_grad_overcount()


def _conv_backward_flop(grad_out_shape, x_shape, w_shape, bias, stride, padding, dilation, transposed,
                        output_padding, groups, output_mask, out_shape, **kwargs) -> int:
    """torch's convolution-backward FLOPs, with the weight gradient divided by the group count
    where torch does not (cf. pytorch/pytorch#183405)."""
    args = (grad_out_shape, x_shape, w_shape, bias, stride, padding, dilation, transposed, output_padding,
            groups)
    grad_input = torch_flops.conv_backward_flop(*args, [output_mask[0], False, False], out_val=out_shape)
    grad_weight = torch_flops.conv_backward_flop(*args, [False, output_mask[1], False], out_val=out_shape)
    return grad_input + (grad_weight // groups if _OVERCOUNT > 1 else grad_weight)


def flop_counter() -> FlopCounterMode:
    """torch's FLOP counter (no printing) with the grouped-convolution backward formula fixed."""
    return FlopCounterMode(display=False,
                           custom_mapping={torch.ops.aten.convolution_backward: _conv_backward_flop})


def coarse_counts(counts: dict[str, int]) -> dict[str, int]:
    """Horus's layer classes: convolution, linear (incl. batched matmul), activation, other."""
    conv = counts.get("conv", 0)
    linear = counts.get("linear", 0) + counts.get("matmul", 0)
    activation = sum(counts.get(k, 0) for k in ACTIVATION_KINDS)
    return {"n_conv_coarse": conv, "n_linear_coarse": linear, "n_activation_coarse": activation,
            "n_other_coarse": sum(counts.values()) - conv - linear - activation}


def extract(name: str, batch_size: int | None = None) -> dict:
    """One row of the workloads table for job type `name` (at `batch_size` if given)."""
    job = workloads.build(name, device="meta", batch_size=batch_size)
    params = list(job.model.parameters())
    batch = [t for t in job.batch if isinstance(t, torch.Tensor)]
    state = params + list(job.model.buffers())
    with flop_counter() as flops:
        with SavedTensors(exclude=state + batch) as saved:
            with OpCounter(params + batch) as ops:
                outputs = job.recipe.forward(job.model, job.batch)
            loss = job.recipe.criterion(outputs, job.batch)
        flops_fwd = flops.get_total_flops()
        loss.backward()
    counts = {k: ops.counts.get(k, 0) for k in OP_KINDS}
    row = {"workload": name, "family": job.spec.family, "dataset": job.spec.dataset,
           "task": job.spec.task, "batch_size": batch_size or job.spec.batch_size,
           "flops_fwd": int(flops_fwd), "flops_step": int(flops.get_total_flops()),
           "params": sum(p.numel() for p in params),
           "param_bytes": sum(p.numel() * p.element_size() for p in params),
           "activation_bytes": saved.nbytes // AMP_ACTIVATION_DIVISOR if job.spec.amp else saved.nbytes,
           "input_bytes": sum(t.numel() * t.element_size() for t in batch), "amp": int(job.spec.amp)}
    row.update({f"n_{k}": v for k, v in counts.items()})
    row["n_ops"] = sum(counts.values())
    row.update(coarse_counts(counts))
    return row


def workloads_table(names: Iterable[str] | None = None, progress: bool = False, workers: int = 1) -> pd.DataFrame:
    """The workloads table: one row per job type (all by default), sorted by workload.

    An AMP job type whose FP32 job type is in the table reuses its graph (measured once). ``workers`` > 1
    measures the graphs in that many spawned processes (each job type's measurement is independent and
    deterministic, so the table is the same for any ``workers``).
    """
    names = sorted(set(workloads.names() if names is None else names))
    for n in names:
        workloads.spec(n)  # fail early, naming the unknown job type
    graph_of = {n: _graph_name(n, names) for n in names}
    graphs = sorted(set(graph_of.values()))
    if workers > 1 and len(graphs) > 1:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            measured = list(tqdm(pool.map(extract, graphs), total=len(graphs), desc="features", disable=not progress))
    else:
        measured = [extract(g) for g in tqdm(graphs, desc="features", disable=not progress)]
    rows = dict(zip(graphs, measured, strict=True))
    table = [rows[n] if graph_of[n] == n else amp_row(rows[graph_of[n]], n) for n in names]
    return pd.DataFrame(table).sort_values("workload", ignore_index=True)


def _graph_name(name: str, names: list[str]) -> str:
    """The job type whose graph ``name`` is measured on: its FP32 job type if that is in ``names``, else itself."""
    base = name.removesuffix(workloads.AMP_SUFFIX)
    return base if base != name and base in names else name


def amp_row(row: dict, name: str) -> dict:
    """The features row of AMP job type ``name`` from its FP32 job type's row (module docstring)."""
    return row | {"workload": name, "amp": 1, "activation_bytes": row["activation_bytes"] // AMP_ACTIVATION_DIVISOR}
