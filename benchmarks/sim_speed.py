"""Simulator speed: jobs simulated per second, per policy, and how the time grows with the trace.

    python benchmarks/sim_speed.py [--gpus 64] [--sizes 5000 20000] [--policies fifo tiresias ...]
                                   [--scale-gpus 2048 --scale-sizes 10000 20000 40000 82247]

Saturated runs (the default): every registered policy over the first N jobs of the Philly trace
(N = each of --sizes; jobs wider than the cluster left out) on a cluster of --gpus V100s. At the
trace's own arrival times 64 GPUs are saturated: the queue grows to thousands of jobs, which is
where a policy that rescans every job each round slows down. The table gives jobs/s per size, the
time growth from the smallest to the largest size against the growth of the job count (linear:
the same ratio), and the mean JCT (to check that a speed-up changed no placement).

Scale runs (--scale-sizes, off by default): fifo and isacpp on a large cluster (--scale-gpus), up
to the whole 82,247-job trace.

Tables come from --processed/*.parquet when present (the pipeline's solo, pairs and trace), else
are parsed from the raw files (--raw-dir, default $COLOC_DATA_MIRROR or data/raw). Predictive
policies read the out-of-fold predictions (--predictions with --predictor, --utilization with
--util-predictor). Without the pair predictions file they are fed the measured pairs instead, which
changes their decisions but not the cost of making them; without the utilization file, policies
that need it are skipped, and so is a policy whose data the tables lack (lucid: Lucid's packing labels, which
Gavel's job types do not have); each skip is printed with its reason.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import pandas as pd

from coloc import datasets, policies
from coloc.sim import ClusterSpec, GroundTruth, Predictions, simulate, traces
from coloc.sim.metrics import summarize


def load_tables(processed: Path, raw_dir: Path):
    paths = [processed / f"{name}.parquet" for name in ("solo", "pairs", "trace")]
    if all(p.exists() for p in paths):
        solo, pairs, trace = (pd.read_parquet(p) for p in paths)
        if len(trace) == 82247:
            return solo, pairs, trace, f"{processed}/*.parquet"
    solo, pairs = datasets.load_gavel(raw_dir / "gavel" / "simulation_throughputs.json")
    trace = datasets.trace_from_philly(raw_dir / "philly" / "philly.csv", solo, assign="uniform", seed=0,
                                       reference_device="v100")
    return solo, pairs, trace, f"parsed from {raw_dir} (job types: uniform, seed 0)"


def load_predictions(truth: GroundTruth, path: Path, util_path: Path, predictor: str, util_predictor: str):
    """(Predictions, what they are); the measured pairs stand in when there is no pair predictions file."""
    util = util_path if util_path.exists() else None
    if path.exists():
        preds = Predictions.from_files(path, util, predictor, util_predictor if util else None)
        return preds, f"out-of-fold {predictor} ({path})" + (f", {util_predictor} ({util})" if util else "")
    utils = Predictions.from_files(None, util, None, util_predictor) if util else None
    return (Predictions.from_truth(truth, utils),
            "measured pairs as stand-in predictions (no predictions file): speed only")


def required(name: str) -> tuple[str, ...]:
    """What a policy declares it needs (prediction kinds; 'truth' for the oracle)."""
    if hasattr(policies, "info"):
        return tuple(policies.info(name)["needs"])
    return tuple(policies.base._REGISTRY[name].needs)  # the code before policies.info existed


def skip_reasons(names, truth: GroundTruth, preds, workloads) -> dict[str, str]:
    """{policy: why it cannot run here}: it needs utilization predictions and there are none, or its data is not
    in the tables (policies.data_problem, e.g. lucid's packing labels, on Lucid's job types only)."""
    reasons = {}
    for name in names:
        if "util" in required(name) and not preds.has_util():
            reasons[name] = "no utilization predictions (--utilization)"
        elif hasattr(policies, "data_problem") and (problem := policies.data_problem(name, truth, ["v100"], workloads)):
            reasons[name] = problem
    return reasons


def make_policy(name: str, truth: GroundTruth):
    return policies.get(name, truth=truth) if "truth" in required(name) else policies.get(name)


def run(trace, truth, name: str, gpus: int, preds) -> dict:
    start = time.perf_counter()
    result = simulate(trace, truth, make_policy(name, truth), ClusterSpec((("v100", gpus),)), preds)
    wall = time.perf_counter() - start
    summary = summarize(result, gpus)
    return {"policy": name, "gpus": gpus, "jobs": len(trace), "wall_s": wall, "jobs_per_s": len(trace) / wall,
            "decision_ms_per_job": summary["decision_ms_per_job"], "jct_mean": summary["jct_mean"],
            "colocated_share": summary["colocated_share"], "queue_delay_mean_s": summary["queue_delay_mean"],
            "events": result.stats["events"], "rounds": result.stats["rounds"]}


def run_plan(trace, truth, preds, names, sizes, gpus) -> list[dict]:
    rows = []
    for size in sizes:
        part = traces.select(trace, n_jobs=size, max_gpus=gpus)
        for name in names:
            rows.append(run(part, truth, name, gpus, preds))
            r = rows[-1]
            print(f"  {name:11s} {gpus:5d} GPUs {r['jobs']:6,d} jobs: {r['wall_s']:6.1f} s, "
                  f"{r['jobs_per_s']:8,.0f} jobs/s, decision {r['decision_ms_per_job']:.3f} ms/job, "
                  f"mean JCT {r['jct_mean']:.6f} s", flush=True)
    return rows


def growth(table: pd.DataFrame) -> pd.DataFrame:
    """Per policy: jobs/s at the largest size, time ratio largest / smallest size, job-count ratio."""
    rows = []
    for name, runs in table.groupby("policy", sort=False):
        runs = runs.sort_values("jobs")
        small, large = runs.iloc[0], runs.iloc[-1]
        rows.append({"policy": name, "jobs": int(large["jobs"]), "jobs_per_s": large["jobs_per_s"],
                     "time_growth": large["wall_s"] / small["wall_s"], "jobs_growth": large["jobs"] / small["jobs"]})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=64, help="cluster size of the saturated runs")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 20_000], help="jobs of the saturated runs")
    parser.add_argument("--policies", nargs="+", help="policies of the saturated runs (default: every registered)")
    parser.add_argument("--scale-gpus", type=int, default=2048, help="cluster size of the scale runs")
    parser.add_argument("--scale-sizes", type=int, nargs="*", default=[], help="jobs of the scale runs (none: skip)")
    parser.add_argument("--processed", type=Path, default=Path("data/processed"))
    parser.add_argument("--raw-dir", type=Path, default=Path(os.environ.get("COLOC_DATA_MIRROR") or "data/raw"))
    parser.add_argument("--predictions", type=Path, help="default: <processed>/predictions/gavel/lofo.parquet")
    parser.add_argument("--utilization", type=Path, help="default: <processed>/utilization/gavel/lofo.parquet")
    parser.add_argument("--predictor", default="egat")
    parser.add_argument("--util-predictor", default="horus")
    parser.add_argument("--target", type=float, default=2000.0, help="jobs/s every policy should reach")
    parser.add_argument("--out", type=Path, help="also write the table as CSV")
    args = parser.parse_args()

    solo, pairs, trace, source = load_tables(args.processed, args.raw_dir)
    truth = GroundTruth(solo, pairs, "v100")
    preds, preds_source = load_predictions(truth, args.predictions or args.processed / "predictions" / "gavel" / "lofo.parquet",
                                           args.utilization or args.processed / "utilization" / "gavel" / "lofo.parquet",
                                           args.predictor, args.util_predictor)
    skipped = skip_reasons(args.policies or policies.names(), truth, preds, trace["workload"].unique())
    names = [n for n in (args.policies or policies.names()) if n not in skipped]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"trace: {len(trace):,} jobs, {source}; predictions: {preds_source}")
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    table = pd.DataFrame(run_plan(trace, truth, preds, names, args.sizes, args.gpus))
    if args.scale_sizes:
        table = pd.concat([table, pd.DataFrame(run_plan(trace, truth, preds, ["fifo", "isacpp"], args.scale_sizes,
                                                        args.scale_gpus))], ignore_index=True)
    print()
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.3f}"))
    saturated = growth(table[table["gpus"] == args.gpus])
    saturated["meets_target"] = saturated["jobs_per_s"] >= args.target
    print(f"\nsaturated {args.gpus} GPUs, target >= {args.target:,.0f} jobs/s at {max(args.sizes):,} jobs:")
    print(saturated.to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
