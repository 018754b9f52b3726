"""Model inputs built from the tables: per-job rows, symmetric pair features, utilization labels.

Achieved compute utilization (used where no utilization was measured, as in Gavel's data)
= solo iterations/s x training-step FLOPs (``flops_step``) / the device's peak FP32 FLOP/s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coloc.predict.base import Tables

DEVICE_COLUMNS = ("peak_flops", "peak_tensor_flops", "memory_bytes", "mem_bandwidth", "sms",
                  "cuda_cores", "mem_clock_mhz", "tensor_cores")
# Per-job measured / derived quantities added to the graph features.
SOLO_COLUMNS = ("throughput", "util", "achieved_flops")
# Per-job timing proxies: seconds per graph operator (iteration time / operators counted by
# the features stage; a proxy for how long each piece of work holds the GPU) and activation
# bytes written per second.
RATE_COLUMNS = ("op_time", "bytes_rate")
# Columns whose job-versus-co-runners log ratio the contrast features give.
CONTRAST_COLUMNS = ("throughput", "util", "flops_step", "n_ops", "activation_bytes", "param_bytes",
                    "batch_size", "op_time", "bytes_rate")


def graph_columns(workloads: pd.DataFrame) -> list[str]:
    """The numeric feature columns of the workloads table (batch size, FLOPs, bytes, op counts...)."""
    numeric = workloads.select_dtypes(include=["number", "bool"]).columns
    return [c for c in numeric if c != "workload"]


def job_frame(tables: Tables) -> pd.DataFrame:
    """One row per (device, workload) of ``solo``: graph features, solo columns, device columns.

    Indexed by (device, workload); raw values (no transform). Computed once per ``tables``.
    """
    if "job_frame" not in tables.cache:
        tables.cache["job_frame"] = _job_frame(tables)
    return tables.cache["job_frame"]


def _job_frame(tables: Tables) -> pd.DataFrame:
    if "flops_step" not in tables.workloads.columns:
        raise KeyError("workloads table: column 'flops_step' (training-step FLOPs) is required")
    tables.check_covers(tables.solo["device"], tables.solo["workload"], "solo table")
    wl = tables.workloads.set_index("workload")[graph_columns(tables.workloads)].astype(float)
    dev = tables.devices.set_index("name")[[c for c in DEVICE_COLUMNS if c in tables.devices.columns]]
    solo = tables.solo[["device", "workload", "throughput"]]
    if solo.duplicated(["device", "workload"]).any():
        dup = solo[solo.duplicated(["device", "workload"])].iloc[0]
        raise ValueError(f"solo table: duplicate row for device={dup.device!r} workload={dup.workload!r}")
    frame = solo.join(wl, on="workload").join(dev.astype(float), on="device")
    frame["achieved_flops"] = frame["throughput"] * frame["flops_step"]
    frame["util"] = frame["achieved_flops"] / frame["peak_flops"]
    frame["op_time"] = 1.0 / (frame["throughput"] * frame["n_ops"].clip(lower=1))
    frame["bytes_rate"] = frame["throughput"] * frame["activation_bytes"]
    return frame.set_index(["device", "workload"])


def lookup(frame: pd.DataFrame, devices, workloads, what: str) -> pd.DataFrame:
    """Rows of ``frame`` for aligned (device, workload) keys; KeyError naming a missing one."""
    keys = pd.MultiIndex.from_arrays([list(devices), list(workloads)])
    pos = frame.index.get_indexer(keys)
    if (pos < 0).any():
        device, workload = keys[np.flatnonzero(pos < 0)[0]]
        raise KeyError(f"{what}: no solo row for device={device!r} workload={workload!r} in the context tables")
    return frame.iloc[pos]


def exploded(queries: pd.DataFrame) -> pd.DataFrame:
    """One row per (query, co-runner): query (position), device, workload."""
    lengths = queries["co_runners"].map(len).to_numpy()
    return pd.DataFrame({
        "query": np.repeat(np.arange(len(queries)), lengths),
        "device": np.repeat(queries["device"].to_numpy(), lengths),
        "workload": [w for co in queries["co_runners"] for w in co],
    })


def _summed_co_runners(queries: pd.DataFrame, frame: pd.DataFrame, columns) -> np.ndarray:
    """Per query, the co-runners' values of ``columns`` summed (one row per query)."""
    ex = exploded(queries)
    others = lookup(frame, ex["device"], ex["workload"], "co-runner")[list(columns)].to_numpy(float)
    co = np.zeros((len(queries), len(columns)))
    np.add.at(co, ex["query"].to_numpy(), others)
    return co


def contrast_features(queries: pd.DataFrame, frame: pd.DataFrame, columns=CONTRAST_COLUMNS) -> pd.DataFrame:
    """``diff_<c>`` = log(job's value) - log(co-runners' summed value): who dominates the GPU.

    A tree splits on one column at a time, so ratios between the job and its co-runners
    (e.g. seconds per operator: whose work holds the device longer) are given explicitly.
    """
    own = lookup(frame, queries["device"], queries["workload"], "query")[list(columns)].to_numpy(float)
    co = _summed_co_runners(queries, frame, columns)
    tiny = np.finfo(float).tiny
    diff = np.log(np.maximum(own, tiny)) - np.log(np.maximum(co, tiny))
    return pd.DataFrame({f"diff_{c}": diff[:, i] for i, c in enumerate(columns)}, index=queries.index)


def pair_features(queries: pd.DataFrame, frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Features of each (job, co-runners) query, symmetric in the co-runners.

    ``own_<c>`` = log1p of the job's value, ``co_<c>`` = log1p of the co-runners' summed value
    (for a pair: the other job's value), ``dev_<c>`` = log1p of the device spec, plus
    ``n_co`` (number of co-runners) and ``sum_util`` (the job's plus its co-runners' utilization).
    """
    own = lookup(frame, queries["device"], queries["workload"], "query")
    co = _summed_co_runners(queries, frame, columns)
    dev_cols = [c for c in DEVICE_COLUMNS if c in frame.columns]
    out = {f"own_{c}": np.log1p(own[c].to_numpy(float)) for c in columns}
    out |= {f"co_{c}": np.log1p(co[:, i]) for i, c in enumerate(columns)}
    out |= {f"dev_{c}": np.log1p(own[c].to_numpy(float)) for c in dev_cols}
    out["n_co"] = queries["co_runners"].map(len).to_numpy(float)
    if "util" in columns:
        out["sum_util"] = own["util"].to_numpy(float) + co[:, columns.index("util")]
    return pd.DataFrame(out, index=queries.index)


MEASURED_UTIL = "gpu_util"


def util_labels(tables: Tables) -> pd.DataFrame:
    """device, workload, util (in [0, 1]) and util_source per solo row.

    ``measured``: the solo table's ``gpu_util`` where finite, or on a CPU device its
    ``cpu_util`` (both in percent when their maximum exceeds 1.5). ``achieved``: solo
    iterations/s x flops_step / peak FLOP/s otherwise. Clipped to [0, 1].
    """
    frame = job_frame(tables).reset_index()
    util = frame["util"].clip(0, 1)
    source = pd.Series("achieved", index=frame.index)
    kinds = tables.devices.set_index("name")["kind"] if "kind" in tables.devices.columns else pd.Series(dtype=str)
    is_cpu = frame["device"].map(kinds).eq("cpu").to_numpy()
    for column, where in ((MEASURED_UTIL, np.ones(len(frame), bool)), ("cpu_util", is_cpu)):
        if column not in tables.solo.columns:
            continue
        measured = tables.solo.set_index(["device", "workload"])[column].astype(float)
        measured = measured.reindex(pd.MultiIndex.from_frame(frame[["device", "workload"]])).to_numpy()
        if np.isfinite(measured).any() and np.nanmax(measured) > 1.5:
            measured = measured / 100
        have = np.isfinite(measured) & where & (source == "achieved").to_numpy()
        util = util.where(~have, np.clip(measured, 0, 1))
        source[have] = "measured"
    return pd.DataFrame({"device": frame["device"], "workload": frame["workload"], "util": util,
                         "util_source": source})
