"""Per-job peak GPU memory: estimated from the model graph where it was not measured, and its agreement with
Gavel's measured fit table.

A training job's peak GPU memory is estimated as

    peak = weights + gradients + optimizer state + activations + input batch + context
         = P x (2 + s) + A + I + C

with P the parameters' bytes (`param_bytes` of the workloads table, fp32), s the optimizer's state tensors per
parameter (SGD with momentum 1, SGD without momentum 0, Adam and AdamW 2, with amsgrad 3: read off the zoo's
training recipe by coloc.recipe_memory, kept apart as it needs torch and the simulation does not), A the bytes
autograd saves for backward (`activation_bytes`), I the input batch on the device (`input_bytes`) and C a
per-process allowance for the CUDA context and the cuDNN/cuBLAS workspaces (`CONTEXT_BYTES`, 512 MiB: a CUDA
10-11 context on Volta takes about 300-400 MiB before any tensor).
The estimate ignores the caching allocator's fragmentation and transient buffers of the backward pass (so it
tends to be low for large models) and does not depend on the device.

Where memory was measured (a solo table's `mem_bytes`: the profiler's NVML per-process peak), the measurement is
used (`with_memory`). The simulated world's fit rule stays Gavel's measured fit table (`pairs.feasible`); the
estimate is what a job declares to a scheduler. `fit_agreement` says how often "the two estimates fit the
device's memory" agrees with Gavel's table, per device.
"""
from __future__ import annotations

import math

import pandas as pd

CONTEXT_BYTES = 512 * 2 ** 20
MEMORY_COLUMNS = ("workload", "params", "param_bytes", "optimizer", "optimizer_slots", "activation_bytes",
                  "input_bytes", "context_bytes", "mem_bytes")
ESTIMATED = "estimated from the model graph (coloc.memory)"


def peak_bytes(param_bytes: float, slots: int, activation_bytes: float, input_bytes: float,
               context_bytes: float = CONTEXT_BYTES) -> float:
    """The estimate: weights, gradients and `slots` optimizer tensors of `param_bytes` each, plus activations,
    the input batch and the per-process allowance."""
    return float(param_bytes) * (2 + slots) + float(activation_bytes) + float(input_bytes) + float(context_bytes)


def estimate_table(workloads: pd.DataFrame, optimizers: dict[str, tuple[str, int]],
                   context_bytes: float = CONTEXT_BYTES) -> pd.DataFrame:
    """The memory table: one row per job type of the workloads table, MEMORY_COLUMNS, `mem_bytes` the estimate.
    `optimizers`: {workload: (optimizer name, state tensors per parameter)}, e.g. coloc.recipe_memory.optimizers."""
    missing = [c for c in ("workload", "params", "param_bytes", "activation_bytes", "input_bytes")
               if c not in workloads.columns]
    if missing:
        raise ValueError(f"workloads table: columns {missing} missing; expected coloc.features' table")
    rows = []
    for row in workloads.itertuples(index=False):
        if row.workload not in optimizers:
            raise KeyError(f"coloc.memory: no optimizer given for job type {row.workload!r}")
        name, slots = optimizers[row.workload]
        rows.append({"workload": row.workload, "params": int(row.params), "param_bytes": float(row.param_bytes),
                     "optimizer": name, "optimizer_slots": int(slots),
                     "activation_bytes": float(row.activation_bytes), "input_bytes": float(row.input_bytes),
                     "context_bytes": float(context_bytes),
                     "mem_bytes": peak_bytes(row.param_bytes, slots, row.activation_bytes, row.input_bytes,
                                             context_bytes)})
    return pd.DataFrame(rows, columns=list(MEMORY_COLUMNS)).sort_values("workload", ignore_index=True)


def with_memory(solo: pd.DataFrame, memory: pd.DataFrame | None) -> tuple[pd.DataFrame, str]:
    """(solo table with `mem_bytes` on every row it can fill, memory_source): a measured `mem_bytes` (positive,
    finite) is kept; else the job type's estimate from `memory` (the memory table; same on every device). The
    source says which were used: "measured", ESTIMATED, both, or "none"."""
    out = solo.copy()
    measured = (pd.to_numeric(out["mem_bytes"], errors="coerce") if "mem_bytes" in out.columns
                else pd.Series(math.nan, index=out.index))
    measured = measured.where(measured > 0)
    estimate = (out["workload"].map(memory.set_index("workload")["mem_bytes"]) if memory is not None
                else pd.Series(math.nan, index=out.index))
    out["mem_bytes"] = measured.fillna(estimate).astype(float)
    n_measured = int(measured.notna().sum())
    n_estimated = int((measured.isna() & estimate.notna()).sum())
    if n_measured and n_estimated:
        source = f"measured where measured ({n_measured} rows), else {ESTIMATED} ({n_estimated} rows)"
    elif n_measured:
        source = "measured"
    elif n_estimated:
        source = ESTIMATED
    else:
        source = "none"
    return out, source


def fit_agreement(pairs: pd.DataFrame, memory: dict[tuple[str, str], float] | pd.Series,
                  device_memory: dict[str, float], headroom: float = 0.0) -> pd.DataFrame:
    """Per device (and `all`): how the estimate's fit ("the two jobs' memory leaves more than `headroom` free on one
    GPU") agrees with the measured fit (`pairs.feasible`): tp (both say fits), fn (measured fits, estimate says no),
    fp (estimate fits, measured does not), tn, pairs, accuracy. `memory`: {(device, workload): bytes}; pairs
    whose job types have no memory are left out (counted in `unknown`)."""
    memory = dict(memory)
    counts: dict[str, dict[str, int]] = {}
    for device, a, b, feasible in zip(pairs["device"], pairs["workload_a"], pairs["workload_b"], pairs["feasible"], strict=True):
        row = counts.setdefault(device, {"tp": 0, "fn": 0, "fp": 0, "tn": 0, "unknown": 0})
        ma, mb, cap = memory.get((device, a)), memory.get((device, b)), device_memory.get(device)
        if ma is None or mb is None or cap is None:
            row["unknown"] += 1
            continue
        predicted = cap - (ma + mb) > headroom
        row[("t" if predicted == bool(feasible) else "f") + ("p" if predicted else "n")] += 1
    table = pd.DataFrame([{"device": d, **c} for d, c in sorted(counts.items())],
                         columns=["device", "tp", "fn", "fp", "tn", "unknown"])
    total = table.drop(columns="device").sum().to_dict()
    table = pd.concat([table, pd.DataFrame([{"device": "all", **total}])], ignore_index=True)
    known = table[["tp", "fn", "fp", "tn"]].sum(axis=1)
    table["pairs"] = known
    table["accuracy"] = (table["tp"] + table["tn"]) / known.where(known > 0)
    table["headroom_bytes"] = float(headroom)
    return table


def device_memories(devices) -> dict[str, float]:
    """{device: one GPU's memory in bytes} from coloc.devices, for the devices it knows."""
    from coloc.devices import canonical_gpu, device_row
    out = {}
    for device in devices:
        name = canonical_gpu(device)
        if name:
            out[device] = float(device_row(name)["memory_bytes"])
    return out


def estimate_agreement(pairs: pd.DataFrame, memory_table: pd.DataFrame,
                       headrooms=(0.0, 500 * 2 ** 20)) -> pd.DataFrame:
    """fit_agreement of the memory table's estimates (the same on every device) against `pairs.feasible`, once per
    headroom (0: the two estimates fit the memory; 500 MiB: Horus's rule), with each device's memory."""
    devices = sorted(pairs["device"].unique())
    per_type = memory_table.set_index("workload")["mem_bytes"]
    estimates = {(d, w): float(v) for d in devices for w, v in per_type.items()}
    capacity = device_memories(devices)
    return pd.concat([fit_agreement(pairs, estimates, capacity, h) for h in headrooms], ignore_index=True)
