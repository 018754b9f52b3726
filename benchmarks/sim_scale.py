"""Simulator scale: every policy at 10^4..10^6 jobs on 10^3..10^4 GPUs, each point a whole process.

    nice -n 10 python benchmarks/sim_scale.py [--jobs 10000 100000 1000000] [--gpus 1000 10000]
        [--clusters v100 mixed] [--policies fifo isacpp ...] [--load 1.1] [--limit-s 600] [--out scale.csv]
        [--figure scale.png]
    python benchmarks/sim_scale.py --from a.csv b.csv [--figure scale.png]   (earlier runs' tables together)

A point is one policy on one synthetic trace (Poisson arrivals at offered load 1.1 or --load, log-normal
durations with a median of 30 min, GPU counts 1:8, 2:1, 4:1, every job type of the reference
device, seed 0) on one cluster: 'v100' is N V100s, 'mixed' is N/2 V100s, N/4 P100s and N/4 K80s.
Each point runs in a fresh Python process (`--point`), so its peak memory (ru_maxrss) is its own;
a point past --limit-s is stopped and shown as such. Printed per point: wall time of the whole
simulation (trace building excluded), jobs/s, decision time per job (wall time inside the policy, and the CPU
time inside its `schedule`), peak memory, the placements and preemptions made (a policy that preempts pays
for each), the CPU time of the simulation (on a shared machine the wall time includes waiting for a core; the
CPU time does not) and a sha256 of the jobs table (equal digests: the same decisions, so a change meant to
make decisions cheaper, not different, is checked by running a point before and after it). Then the table,
and the growth exponents: the slope of log(wall time) against log(jobs) at fixed GPUs, and against log(GPUs)
at fixed jobs (1: linear, 0: flat). Above load 1 the queue grows for the whole run, so the work per job grows
with the number of jobs; a load below 1 (--load 0.9) separates that from the simulator's own growth.

Tables come from --processed/{solo,pairs}.parquet when present, else are parsed from the raw Gavel
file (--raw-dir, default $COLOC_DATA_MIRROR or data/raw). Predictive policies read --predictions
(and --utilization) when given, else the measured pairs stand in (the decisions change, their cost
does not) and utilizations are set to each job type's share of the largest solo throughput.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

GPU_MIX = {1: 8.0, 2: 1.0, 4: 1.0}
LOAD = 1.1


def cluster_devices(kind: str, gpus: int) -> tuple[tuple[str, int], ...]:
    if kind == "v100":
        return (("v100", gpus),)
    if kind == "mixed":
        return (("v100", gpus // 2), ("p100", gpus // 4), ("k80", gpus - gpus // 2 - gpus // 4))
    raise ValueError(f"cluster {kind!r}: expected 'v100' or 'mixed'")


def load_tables(processed: Path, raw_dir: Path):
    from coloc import datasets
    paths = [processed / f"{name}.parquet" for name in ("solo", "pairs")]
    if all(p.exists() for p in paths):
        return (*(pd.read_parquet(p) for p in paths), f"{processed}/{{solo,pairs}}.parquet")
    solo, pairs = datasets.load_gavel(raw_dir / "gavel" / "simulation_throughputs.json")
    return solo, pairs, f"parsed from {raw_dir}/gavel"


def predictions(truth, args):
    from coloc.sim import Predictions
    if args.predictions:
        return Predictions.from_files(args.predictions, args.utilization, args.predictor,
                                      args.util_predictor if args.utilization else None)
    tputs = truth.solo_throughputs()
    top = {}
    for (device, _), tput in tputs.items():
        top[device] = max(top.get(device, 0.0), tput)
    utils = Predictions({}, utils={key: tput / top[key[0]] for key, tput in tputs.items()})
    return Predictions.from_truth(truth, utils)


def point(args) -> dict:
    """One simulation in this process; returns its measurements."""
    from coloc import policies
    from coloc.sim import ClusterSpec, GroundTruth, simulate, traces
    name, jobs, gpus, kind = args.point[0], int(args.point[1]), int(args.point[2]), args.point[3]
    load = args.load
    solo, pairs, _ = load_tables(args.processed, args.raw_dir)
    truth = GroundTruth(solo, pairs, "v100")
    spec = ClusterSpec(cluster_devices(kind, gpus))
    workloads = [w for w in truth.workloads("v100") if all(truth.has_solo(d, w) for d, _ in spec.devices)]
    trace = traces.poisson(jobs, workloads, seed=0, load=load, total_gpus=gpus, gpu_mix=GPU_MIX)
    needs = policies.info(name)["needs"]
    policy = policies.get(name, truth=truth) if "truth" in needs else policies.get(name)
    preds = predictions(truth, args)
    decision_cpu = time_schedule(policy)
    start, cpu = time.perf_counter(), time.process_time()
    result = simulate(trace, truth, policy, spec, preds, restart_cost_s=30.0)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"policy": name, "jobs": jobs, "gpus": gpus, "cluster": kind, "load": load, "wall_s": wall, "cpu_s": cpu,
            "jobs_per_s": jobs / wall,
            "decision_ms_per_job": 1000.0 * result.stats["decision_time_s"] / jobs,
            "decision_cpu_ms_per_job": 1000.0 * decision_cpu[0] / jobs,
            "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20,
            "jct_mean": float(result.jobs["jct"].mean()), "rounds": result.stats["rounds"],
            "placements": result.stats["placements"], "preemptions": result.stats["preemptions"],
            "jobs_sha256": jobs_digest(result.jobs)}


def time_schedule(policy) -> list[float]:
    """Wrap the policy's `schedule` so that the CPU time spent inside it (time.process_time, which a wait for a
    core on a shared machine does not count) is summed into the one-element list returned."""
    spent, schedule = [0.0], policy.schedule

    def timed(view) -> None:
        start = time.process_time()
        schedule(view)
        spent[0] += time.process_time() - start

    policy.schedule = timed
    return spent


def jobs_digest(jobs: pd.DataFrame) -> str:
    """sha256 of the jobs table sorted by job id, column by column in name order, numbers by their bits: equal
    digests mean every job started, ran and finished at the same times on the same device, so the decisions
    were the same."""
    table = jobs.sort_values("job_id", kind="stable")
    digest = hashlib.sha256()
    for name in sorted(table.columns):
        values = table[name].to_numpy()
        digest.update(f"{name}:{values.dtype}:".encode())
        digest.update(values.tobytes() if values.dtype.kind in "biuf" else "\x1f".join(map(str, values)).encode())
    return digest.hexdigest()


def run_point(args, name: str, jobs: int, gpus: int, kind: str) -> dict:
    command = [sys.executable, __file__, "--point", name, str(jobs), str(gpus), kind, "--load", repr(args.load),
               "--processed", str(args.processed), "--raw-dir", str(args.raw_dir)]
    for flag in ("predictions", "utilization", "predictor", "util_predictor"):
        if getattr(args, flag):
            command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.limit_s, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return {"policy": name, "jobs": jobs, "gpus": gpus, "cluster": kind, "load": args.load, "wall_s": math.nan,
                "note": f"stopped after {time.perf_counter() - start:.0f} s (--limit-s)"}
    except subprocess.CalledProcessError as err:
        raise SystemExit(f"point {name} {jobs} jobs {gpus} GPUs {kind} failed:\n{err.stderr}") from None


def exponents(table: pd.DataFrame) -> pd.DataFrame:
    """Slopes of log(wall time) and log(CPU time) against log(jobs) (fixed GPUs) and log(GPUs) (fixed jobs), per
    policy, cluster and load."""
    rows = []
    done = with_load(table).dropna(subset=["wall_s"])
    for (name, kind, load), runs in done.groupby(["policy", "cluster", "load"], sort=False):
        for fixed, over in (("gpus", "jobs"), ("jobs", "gpus")):
            for value, part in runs.groupby(fixed):
                part = part.sort_values(over)
                if len(part) >= 2:
                    x = np.log(part[over])
                    rows.append({"policy": name, "cluster": kind, "load": load, "over": over, fixed: value,
                                 "range": f"{part[over].min():,}-{part[over].max():,}",
                                 "exponent_wall": np.polyfit(x, np.log(part["wall_s"]), 1)[0],
                                 "exponent_cpu": np.polyfit(x, np.log(part["cpu_s"]), 1)[0]})
    return pd.DataFrame(rows)


def with_load(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its load column (tables written before --load existed ran at load 1.1)."""
    return table.assign(load=table["load"].fillna(LOAD)) if "load" in table else table.assign(load=LOAD)


def figure(table: pd.DataFrame, path: Path) -> None:
    """CPU time against jobs (at the most GPUs) and against GPUs (at the jobs with most GPU counts), log-log:
    one colour per policy, one line style per cluster and load (solid: V100 at load 1.1); the legend beside the
    panels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    done = with_load(table).dropna(subset=["cpu_s"])
    done = done.assign(setting=[f"{kind} cluster, load {load:g}" for kind, load in zip(done["cluster"], done["load"], strict=True)])
    names = sorted(done["policy"].unique())
    colour = dict(zip(names, plt.get_cmap("tab10").colors * 2, strict=False))
    pairs = sorted(set(zip(done["cluster"], done["load"], strict=True)), key=lambda p: (p[0] != "v100", p[1] != LOAD, p))
    style = dict(zip([f"{kind} cluster, load {load:g}" for kind, load in pairs], ["-", "--", ":", "-."] * 4, strict=False))
    gpus = int(done["gpus"].max())
    jobs = int(done.groupby("jobs")["gpus"].nunique().sort_values(kind="stable").index[-1])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    panels = ((axes[0], done[done["gpus"] == gpus], "jobs", f"at {gpus:,} GPUs"),
              (axes[1], done[done["jobs"] == jobs], "gpus", f"at {jobs:,} jobs"))
    for ax, part, over, title in panels:
        for (name, setting), runs in part.groupby(["policy", "setting"]):
            runs = runs.sort_values(over)
            ax.plot(runs[over], runs["cpu_s"], marker="o", color=colour[name], linestyle=style[setting])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(over if over == "jobs" else "GPUs")
        ax.set_ylabel("CPU time of the simulation (s)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    handles = [Line2D([], [], color=colour[n], marker="o", label=n) for n in names]
    handles += [Line2D([], [], color="black", linestyle=s, label=k) for k, s in style.items()]
    fig.legend(handles=handles, loc="center right", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.86, 1))
    fig.savefig(path, dpi=150)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--clusters", nargs="+", default=["v100", "mixed"])
    parser.add_argument("--policies", nargs="+", help="default: every registered policy")
    parser.add_argument("--load", type=float, default=LOAD, help="offered load of the traces (default 1.1)")
    parser.add_argument("--limit-s", type=float, default=600.0, help="stop a point after this many seconds")
    parser.add_argument("--processed", type=Path, default=Path("data/processed"))
    parser.add_argument("--raw-dir", type=Path, default=Path(os.environ.get("COLOC_DATA_MIRROR") or "data/raw"))
    parser.add_argument("--predictions", type=Path, help="pair predictions file (default: measured pairs stand in)")
    parser.add_argument("--utilization", type=Path, help="utilization predictions file")
    parser.add_argument("--predictor", default="egat")
    parser.add_argument("--util-predictor", default="horus")
    parser.add_argument("--out", type=Path, help="write the table as CSV")
    parser.add_argument("--figure", type=Path, help="write the log-log figure (PNG)")
    parser.add_argument("--from", dest="tables", type=Path, nargs="+",
                        help="run nothing: print the table, exponents and figure of earlier --out files together")
    parser.add_argument("--point", nargs=4, metavar=("POLICY", "JOBS", "GPUS", "CLUSTER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        print(json.dumps(point(args)))
        return

    if args.tables:
        report(pd.concat([pd.read_csv(path) for path in args.tables], ignore_index=True), args)
        return
    from coloc import policies
    names = args.policies or policies.names()
    _, _, source = load_tables(args.processed, args.raw_dir)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"tables {source}; predictions {args.predictions or 'measured pairs (stand-in)'}; load {args.load:g}")
    rows = []
    for kind in args.clusters:
        for gpus in args.gpus:
            for jobs in args.jobs:
                for name in names:
                    row = run_point(args, name, jobs, gpus, kind)
                    rows.append(row)
                    if "note" in row:
                        print(f"  {name:11s} {kind:5s} {gpus:6,d} GPUs {jobs:9,d} jobs: {row['note']}", flush=True)
                    else:
                        print(f"  {name:11s} {kind:5s} {gpus:6,d} GPUs {jobs:9,d} jobs: {row['wall_s']:7.1f} s "
                              f"(CPU {row['cpu_s']:.1f} s), "
                              f"{row['jobs_per_s']:8,.0f} jobs/s, decision {row['decision_ms_per_job']:.3f} ms/job "
                              f"(CPU {row['decision_cpu_ms_per_job']:.4f}), peak {row['peak_gb']:.2f} GB, "
                              f"jobs sha256 {row['jobs_sha256'][:12]}", flush=True)
    report(pd.DataFrame(rows), args)


def report(table: pd.DataFrame, args) -> None:
    """Print the table and the growth exponents; write the CSV (--out) and the figure (--figure)."""
    print()
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.3f}"))
    growth = exponents(table)
    if not growth.empty:
        print("\ngrowth exponents (slope of log wall time):")
        print(growth.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if args.out:
        table.to_csv(args.out, index=False)
    if args.figure:
        figure(table, args.figure)


if __name__ == "__main__":
    main()
