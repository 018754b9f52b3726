"""Simulator speed: jobs simulated per second and policy decision time per job.

    python benchmarks/sim_speed.py [--gpus 2048] [--stress-gpus 512] [--sizes 10000 20000 40000 82247]

Runs `fifo` and `isacpp` over the first N jobs of the Philly trace (N = each size; the last is the whole
82,247-job trace) on a cluster of --gpus V100s, then once more on --stress-gpus GPUs, where the cluster
is saturated for long stretches and ISACPP's packing path (scoring every shareable GPU) is exercised.
Tables come from data/processed/*.parquet when present, else are parsed from the raw files
(--raw-dir, default $COLOC_DATA_MIRROR or data/raw). ISACPP reads the out-of-fold predictions
(--predictions, default data/processed/predictions_lofo.parquet, predictor --predictor); without that file
it is fed the measured pairs, which changes its decisions but not the cost of making them (said in the output).
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import pandas as pd

from coloc import datasets, policies
from coloc.sim import ClusterSpec, GroundTruth, Predictions, simulate
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


def isacpp_predictions(truth: GroundTruth, path: Path, util_path: Path, predictor: str, util_predictor: str):
    if path.exists():
        util = util_path if util_path.exists() else None
        return Predictions.from_files(path, util, predictor, util_predictor), f"out-of-fold {predictor} ({path})"
    return Predictions.from_truth(truth), "measured pairs as stand-in predictions (no predictions file): speed only"


def run(trace, truth, name: str, gpus: int, preds) -> dict:
    start = time.perf_counter()
    result = simulate(trace, truth, policies.get(name), ClusterSpec((("v100", gpus),)), preds)
    wall = time.perf_counter() - start
    summary = summarize(result, gpus)
    return {"policy": name, "gpus": gpus, "jobs": len(trace), "wall_s": wall, "jobs_per_s": len(trace) / wall,
            "decision_ms_per_job": summary["decision_ms_per_job"], "colocated_share": summary["colocated_share"],
            "queue_delay_mean_s": summary["queue_delay_mean"], "events": result.stats["events"],
            "rounds": result.stats["rounds"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=2048, help="cluster size of the main runs")
    parser.add_argument("--stress-gpus", type=int, default=512, help="a smaller cluster that saturates (0: skip)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 40_000, 82_247])
    parser.add_argument("--processed", type=Path, default=Path("data/processed"))
    parser.add_argument("--raw-dir", type=Path, default=Path(os.environ.get("COLOC_DATA_MIRROR") or "data/raw"))
    parser.add_argument("--predictions", type=Path, default=Path("data/processed/predictions_lofo.parquet"))
    parser.add_argument("--utilization", type=Path, default=Path("data/processed/utilization_lofo.parquet"))
    parser.add_argument("--predictor", default="egat")
    parser.add_argument("--util-predictor", default="horus")
    parser.add_argument("--out", type=Path, help="also write the table as CSV")
    args = parser.parse_args()

    solo, pairs, trace, source = load_tables(args.processed, args.raw_dir)
    truth = GroundTruth(solo, pairs, "v100")
    preds, preds_source = isacpp_predictions(truth, args.predictions, args.utilization, args.predictor,
                                             args.util_predictor)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"trace: {len(trace):,} jobs, {source}; isacpp predictions: {preds_source}")
    rows = []
    plan = [(size, args.gpus) for size in args.sizes]
    if args.stress_gpus:
        plan.append((max(args.sizes), args.stress_gpus))
    for size, gpus in plan:
        part = trace.head(size)
        for name in ("fifo", "isacpp"):
            rows.append(run(part, truth, name, gpus, preds if name == "isacpp" else None))
            r = rows[-1]
            print(f"  {name:7s} {gpus:5d} GPUs {r['jobs']:6,d} jobs: {r['wall_s']:6.1f} s, "
                  f"{r['jobs_per_s']:8,.0f} jobs/s, decision {r['decision_ms_per_job']:.3f} ms/job, "
                  f"co-located {r['colocated_share']:.3f}", flush=True)
    table = pd.DataFrame(rows)
    print()
    print(table.to_string(index=False, float_format=lambda v: f"{v:,.3f}"))
    whole = table[(table["jobs"] == len(trace)) & (table["gpus"] == args.gpus)].set_index("policy")["wall_s"]
    for name, target in (("fifo", 60.0), ("isacpp", 180.0)):
        if name in whole:
            verdict = "meets" if whole[name] < target else "MISSES"
            print(f"whole trace, {args.gpus} GPUs, {name}: {whole[name]:.1f} s ({verdict} the {target:.0f} s target)")
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
