"""From the measurement log to the ``solo``, ``pairs`` and ``sets`` (3 or more jobs) tables (contracts in
ARCHITECTURE.md).

Throughputs are the median over repeats (the mean for two); other measured columns are means.
A repeat during which other processes used more than ``max_other_load_pct`` of the device's
cores is *disturbed* (on this shared 2-core machine such repeats ran up to 2x slower). When
every set measured on a device has an undisturbed repeat, disturbed ones are left out and
counted in ``disturbed_repeats``; otherwise all repeats are used (solo and pairs alike, so
that norms compare like with like). ``norm_a`` = ``tput_a`` / solo throughput of a, as in
the contract. The spread columns normalize each repeat by the solo measurement of the
same round (taken minutes apart at most), so slow changes of the machine's load cancel.
``feasible`` False means "did not fit": a repeat of the set ran out of memory
(:mod:`coloc.profiler.outcome`); such a pair has throughputs 0 and NaN norms (Gavel's
convention) and the error. A repeat that failed otherwise (timeout, crash, exception) says
nothing about fit: it is counted in ``failed_repeats`` (its error in ``error``) and the set's
other repeats are used; a set without any measured repeat, and a pair without the solo
throughput of one of its jobs, is left out of the table with a warning naming it.
Records of older logs are read through :func:`coloc.profiler.outcome.of`. Extra columns: ``repeats``,
``failed_repeats``, ``error``, ``*_std``, ``cpu_util*`` (% of the device's cores),
``mem_bytes*`` (peak GPU memory on a GPU, peak resident memory on a CPU), ``other_cpu_pct``
(other users' load on the device's cores while measuring).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from . import outcome
from .errors import ProfilerError

DISTURBED_PCT = 10.0  # other processes' share of the device's cores above which a repeat is disturbed

_DEVICE_METRICS = ("gpu_util", "mem_util", "mem_used_bytes", "sm_clock_mhz", "pcie_rx_bytes_s", "pcie_tx_bytes_s",
                   "power_w", "cpu_busy_pct", "other_cpu_pct")
_NUMBERS = ("throughput", "iterations", "elapsed_s", "cpu_util", "mem_bytes", "rss_bytes", "gpu_mem_bytes", "sm_util",
            "window_overlap", *_DEVICE_METRICS)
_JOB_COLUMNS = ("device", "set", "kind", "repeat", "slot", "workload", "partners", "outcome", "measured", "feasible",
                "error", *_NUMBERS, "started_utc", "key")


def jobs_table(records: list[dict], max_other_load_pct: float | None = DISTURBED_PCT) -> pd.DataFrame:
    """One row per job of every measurement record (repeats kept apart; a key logged twice: the last).

    ``outcome``: ok, out_of_memory, timeout or error; ``measured``: ok; ``feasible``: False
    only when the measurement ran out of memory. ``disturbed``: other processes used more than
    ``max_other_load_pct`` % of the cores (None: never). ``used``: measured and, when every set
    measured on the device has an undisturbed repeat, undisturbed; otherwise every measured
    repeat is used, so that a pair and the solo runs it is normalized by were measured under
    comparable conditions.
    """
    rows = []
    for record in records:
        _check(record)
    for record in {r["key"]: r for r in records}.values():
        for job in record["jobs"]:
            rows.append(_job_row(record, job))
    table = pd.DataFrame(rows, columns=list(_JOB_COLUMNS))
    for column in _NUMBERS:
        table[column] = pd.to_numeric(table[column], errors="coerce").astype(float)
    table["measured"] = table["measured"].astype(bool)
    table["feasible"] = table["feasible"].astype(bool)
    limit = np.inf if max_other_load_pct is None else max_other_load_pct
    table["disturbed"] = table["other_cpu_pct"].fillna(0.0) > limit
    calm = table["measured"] & ~table["disturbed"]
    # calm repeats only where every set that ran on the device has one: solo and pair alike
    ran = table["measured"].groupby([table["device"], table["set"]]).transform("any")
    set_calm = calm.groupby([table["device"], table["set"]]).transform("any")
    device_calm = (set_calm | ~ran).groupby(table["device"]).transform("all")
    table["used"] = table["measured"] & (calm | ~device_calm)
    return table


def _check(record: dict) -> None:
    missing = [k for k in ("key", "device", "workloads", "repeat", "feasible", "jobs") if k not in record]
    if missing:
        raise ProfilerError(f"measurement record {record.get('key', '?')!r}: keys {missing} missing")


def _job_row(record: dict, job: dict) -> dict:
    metrics = record.get("device_metrics") or {}
    workloads = record["workloads"]
    mem = job.get("gpu_mem_bytes", job.get("gpu_mem_reserved_bytes")) if record.get("device_kind") == "gpu" \
        else job.get("rss_bytes", job.get("max_rss_bytes"))
    partners = workloads[:job["slot"]] + workloads[job["slot"] + 1:]
    result = outcome.of(record)
    return {
        "device": record["device"], "set": "+".join(workloads), "kind": record.get("kind"), "repeat": record["repeat"],
        "slot": job["slot"], "workload": job["workload"], "partners": "+".join(partners),
        "outcome": result, "measured": result == outcome.OK, "feasible": result != outcome.OUT_OF_MEMORY,
        "error": record.get("error"), "throughput": job.get("throughput") if result == outcome.OK else np.nan,
        "iterations": job.get("iterations"), "elapsed_s": job.get("elapsed_s"), "cpu_util": job.get("cpu_util"),
        "mem_bytes": mem, "rss_bytes": job.get("rss_bytes"), "gpu_mem_bytes": job.get("gpu_mem_bytes"),
        "sm_util": job.get("sm_util"), "window_overlap": record.get("window_overlap"),
        **{k: metrics.get(k) for k in _DEVICE_METRICS},
        "started_utc": record.get("started_utc"), "key": record["key"],
    }


def solo_table(records: list[dict], max_other_load_pct: float | None = DISTURBED_PCT) -> pd.DataFrame:
    """The ``solo`` table: device, workload, throughput (median over repeats), measured columns, spread."""
    jobs = jobs_table(records, max_other_load_pct)
    solo = jobs[jobs["kind"] == "solo"]
    columns = ["device", "workload", "throughput", "throughput_std", "repeats", "failed_repeats",
               "disturbed_repeats", "feasible", "error",
               "cpu_util", "mem_bytes", "gpu_util", "mem_util", "sm_util", "pcie_bytes_s", "power_w", "other_cpu_pct"]
    if solo.empty:
        return pd.DataFrame(columns=columns)
    solo = solo.assign(pcie_bytes_s=solo["pcie_rx_bytes_s"] + solo["pcie_tx_bytes_s"])
    rows, left_out = [], []
    for (device, workload), group in solo.groupby(["device", "workload"], sort=True):
        ok = group[group["used"]]
        feasible = bool(group["feasible"].all())
        if feasible and not group["measured"].any():
            left_out.append(_failures(f"{workload} on {device}", group))
            continue
        row = {"device": device, "workload": workload,
               "throughput": ok["throughput"].median() if feasible else np.nan,
               "throughput_std": ok["throughput"].std(ddof=0) if feasible else np.nan,
               "repeats": len(ok), "failed_repeats": int((~group["measured"]).sum()),
               "disturbed_repeats": int((group["measured"] & ~group["used"]).sum()), "feasible": feasible,
               "error": _first_error(group)}
        for column in columns[9:]:
            row[column] = ok[column].mean() if feasible and ok[column].notna().any() else np.nan
        rows.append(row)
    _warn_left_out("solo", left_out)
    return pd.DataFrame(rows, columns=columns)


def pairs_table(records: list[dict], solo: pd.DataFrame | None = None,
                max_other_load_pct: float | None = DISTURBED_PCT) -> pd.DataFrame:
    """The ``pairs`` table: one row per unordered pair (``workload_a <= workload_b``), medians over repeats."""
    jobs = jobs_table(records, max_other_load_pct)
    solo = solo_table(records, max_other_load_pct) if solo is None else solo
    columns = ["device", "workload_a", "workload_b", "tput_a", "tput_b", "norm_a", "norm_b", "feasible", "repeats",
               "failed_repeats", "disturbed_repeats", "error", "tput_a_std", "tput_b_std", "norm_a_std", "norm_b_std",
               "cpu_util_a",
               "cpu_util_b", "mem_bytes_a", "mem_bytes_b", "other_cpu_pct"]
    pairs = jobs[jobs["kind"] == "pair"]
    if pairs.empty:
        return pd.DataFrame(columns=columns)
    solo_mean = solo.set_index(["device", "workload"])["throughput"]
    per_round = _solo_per_round(jobs)
    rows, left_out = [], []
    for (device, name), group in pairs.groupby(["device", "set"], sort=True):
        a, b = name.split("+")
        repeats = group.pivot(index="repeat", columns="slot")
        feasible = bool(repeats["feasible"].all().all())
        measured = repeats["measured"][0]
        if feasible and not measured.any():
            left_out.append(_failures(f"{a} next to {b} on {device}", group))
            continue
        no_solo = [w for w in dict.fromkeys((a, b)) if not np.isfinite(solo_mean.get((device, w), np.nan))]
        if feasible and no_solo:
            left_out.append(f"{a} next to {b} on {device}: no solo throughput of {' or '.join(no_solo)} to divide by")
            continue
        ok = repeats[repeats["used"][0]]
        failed = int((~measured).sum())
        row = {"device": device, "workload_a": a, "workload_b": b, "feasible": feasible, "repeats": len(ok),
               "failed_repeats": failed, "disturbed_repeats": len(repeats) - len(ok) - failed,
               "error": _first_error(group),
               "other_cpu_pct": ok["other_cpu_pct"][0].mean() if len(ok) else np.nan}
        for slot, side, workload in ((0, "a", a), (1, "b", b)):
            solo_tput = solo_mean.get((device, workload), np.nan)
            tput = ok["throughput"][slot]
            round_solo = [per_round.get((device, workload, r), solo_tput) for r in tput.index]
            row.update({
                f"tput_{side}": tput.median() if feasible else 0.0,
                f"norm_{side}": tput.median() / solo_tput if feasible else np.nan,
                f"tput_{side}_std": tput.std(ddof=0) if feasible else np.nan,
                f"norm_{side}_std": (tput / np.array(round_solo, dtype=float)).std(ddof=0) if feasible else np.nan,
                f"cpu_util_{side}": ok["cpu_util"][slot].mean() if len(ok) else np.nan,
                f"mem_bytes_{side}": ok["mem_bytes"][slot].mean() if len(ok) else np.nan,
            })
        rows.append(row)
    _warn_left_out("pairs", left_out)
    return pd.DataFrame(rows, columns=columns)


SETS_COLUMNS = ["device", "set", "size", "slot", "workload", "partners", "tput", "norm", "feasible", "repeats",
                "failed_repeats", "disturbed_repeats", "error", "tput_std", "norm_std", "cpu_util", "mem_bytes",
                "other_cpu_pct"]


def sets_table(records: list[dict], solo: pd.DataFrame | None = None,
               max_other_load_pct: float | None = DISTURBED_PCT) -> pd.DataFrame:
    """The ``sets`` table: one row per job of every set of 3 or more measured together, medians over repeats.

    ``set``: the members, sorted, joined by ``+``; ``slot``: the job's place in it (a job type twice in a
    set gives two rows, two instances); ``partners``: its co-runners joined by ``+``; ``tput``,
    ``norm`` = tput / solo throughput, ``norm_std`` per round as in :func:`pairs_table`, the same rules for
    repeats used, failures and sets that did not fit (``feasible`` False: tput 0, norm NaN).
    """
    jobs = jobs_table(records, max_other_load_pct)
    solo = solo_table(records, max_other_load_pct) if solo is None else solo
    sets = jobs[jobs["kind"] == "set"]
    if sets.empty:
        return pd.DataFrame(columns=SETS_COLUMNS)
    solo_mean = solo.set_index(["device", "workload"])["throughput"]
    per_round = _solo_per_round(jobs)
    rows, left_out = [], []
    for (device, name), group in sets.groupby(["device", "set"], sort=True):
        members = name.split("+")
        repeats = group.pivot(index="repeat", columns="slot")
        feasible = bool(repeats["feasible"].all().all())
        measured = repeats["measured"][0]
        if feasible and not measured.any():
            left_out.append(_failures(f"the set {name} on {device}", group))
            continue
        no_solo = [w for w in dict.fromkeys(members) if not np.isfinite(solo_mean.get((device, w), np.nan))]
        if feasible and no_solo:
            left_out.append(f"the set {name} on {device}: no solo throughput of {' or '.join(no_solo)} to divide by")
            continue
        ok = repeats[repeats["used"][0]]
        failed = int((~measured).sum())
        common = {"device": device, "set": name, "size": len(members), "feasible": feasible, "repeats": len(ok),
                  "failed_repeats": failed, "disturbed_repeats": len(repeats) - len(ok) - failed,
                  "error": _first_error(group), "other_cpu_pct": ok["other_cpu_pct"][0].mean() if len(ok) else np.nan}
        for slot, workload in enumerate(members):
            solo_tput = solo_mean.get((device, workload), np.nan)
            tput = ok["throughput"][slot]
            round_solo = [per_round.get((device, workload, r), solo_tput) for r in tput.index]
            rows.append({**common, "slot": slot, "workload": workload,
                         "partners": "+".join(members[:slot] + members[slot + 1:]),
                         "tput": tput.median() if feasible else 0.0,
                         "norm": tput.median() / solo_tput if feasible else np.nan,
                         "tput_std": tput.std(ddof=0) if feasible else np.nan,
                         "norm_std": (tput / np.array(round_solo, dtype=float)).std(ddof=0) if feasible else np.nan,
                         "cpu_util": ok["cpu_util"][slot].mean() if len(ok) else np.nan,
                         "mem_bytes": ok["mem_bytes"][slot].mean() if len(ok) else np.nan})
    _warn_left_out("sets", left_out)
    return pd.DataFrame(rows, columns=SETS_COLUMNS)


def _failures(what: str, group: pd.DataFrame) -> str:
    """``what``: how its repeats failed, with the first error."""
    records = group.drop_duplicates("key")
    counts = records["outcome"].value_counts()
    return f"{what}: " + ", ".join(f"{n} x {name}" for name, n in counts.items()) + f" ({_first_error(group)})"


def _warn_left_out(table: str, left_out: list[str]) -> None:
    if left_out:
        warnings.warn(f"coloc.profiler: {len(left_out)} set(s) left out of the {table} table: no repeat measured, "
                      "each failed for a reason other than memory, so whether the set fits is unknown (a rerun "
                      "measures an error again, and a timeout when timeout_s is longer): " + "; ".join(left_out),
                      RuntimeWarning, stacklevel=3)


def _solo_per_round(jobs: pd.DataFrame) -> dict:
    solo = jobs[(jobs["kind"] == "solo") & jobs["used"]]
    return {(d, w, r): t for d, w, r, t in solo[["device", "workload", "repeat", "throughput"]].itertuples(index=False)}


def _first_error(group: pd.DataFrame):
    """The first out-of-memory error of the group's repeats, else the first error."""
    errors = group.loc[group["outcome"] == outcome.OUT_OF_MEMORY, "error"].dropna()
    errors = errors if len(errors) else group["error"].dropna()
    return errors.iloc[0] if len(errors) else None


def spread_table(records: list[dict], max_other_load_pct: float | None = DISTURBED_PCT) -> pd.DataFrame:
    """Spread of repeated measurements of each job in each set: over the repeats used (``spread``)
    and over every successful repeat (``spread_all``); spread = (max - min) / mean."""
    jobs = jobs_table(records, max_other_load_pct)
    jobs = jobs[jobs["measured"]]
    keys = ["device", "set", "kind", "slot", "workload"]
    columns = [*keys, "repeats", "mean", "std", "min", "max", "spread", "repeats_all", "spread_all"]
    if jobs.empty:
        return pd.DataFrame(columns=columns)
    used = jobs[jobs["used"]].groupby(keys, sort=True)["throughput"]
    table = used.agg(repeats="size", mean="mean", std=lambda s: s.std(ddof=0), min="min", max="max").reset_index()
    table["spread"] = (table["max"] - table["min"]) / table["mean"]
    every = jobs.groupby(keys, sort=True)["throughput"].agg(
        repeats_all="size", spread_all=lambda s: (s.max() - s.min()) / s.mean()).reset_index()
    return table.merge(every, on=keys)[columns]


def summary(records: list[dict], max_other_load_pct: float | None = DISTURBED_PCT) -> dict:
    """Headline figures of a sweep: counts, measuring time, spread of repeats, contention, load."""
    unique = list({r["key"]: r for r in records}.values())
    jobs = jobs_table(unique, max_other_load_pct)
    spread = spread_table(unique, max_other_load_pct)
    pairs = pairs_table(unique, max_other_load_pct=max_other_load_pct)
    norms = pd.concat([pairs["norm_a"], pairs["norm_b"]]).dropna() if len(pairs) else pd.Series(dtype=float)
    multi = spread[spread["repeats"] > 1]
    every = spread[spread["repeats_all"] > 1]
    records_disturbed = jobs[jobs["measured"]].drop_duplicates("key")["disturbed"]
    outcomes = [outcome.of(r) for r in unique]
    return {
        "device": ", ".join(sorted(jobs["device"].unique())),
        "measurements": len(unique),
        "failed": sum(o != outcome.OK for o in outcomes),
        "out_of_memory": outcomes.count(outcome.OUT_OF_MEMORY),
        "disturbed": int(records_disturbed.sum()),
        "left_out": int((jobs["measured"] & ~jobs["used"]).groupby(jobs["key"]).any().sum()),
        "measuring_s": float(sum(r.get("wall_s") or 0.0 for r in unique)),
        "spread_median": float(multi["spread"].median()) if len(multi) else np.nan,
        "spread_max": float(multi["spread"].max()) if len(multi) else np.nan,
        "within_10pct": float((multi["spread"] <= 0.10).mean()) if len(multi) else np.nan,
        "spread_all_median": float(every["spread_all"].median()) if len(every) else np.nan,
        "within_10pct_all": float((every["spread_all"] <= 0.10).mean()) if len(every) else np.nan,
        "norm_min": float(norms.min()) if len(norms) else np.nan,
        "norm_median": float(norms.median()) if len(norms) else np.nan,
        "other_cpu_pct_mean": float(jobs["other_cpu_pct"].mean()),
    }
