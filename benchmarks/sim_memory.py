"""Peak memory of the simulate rule's work against the trace's job count: the numbers behind coloc.sim.memory_need.

    python benchmarks/sim_memory.py [--processed data/processed] [--sizes 20000 100000 300000]
                                    [--policies fifo coloc] [--runs 4] [--cluster v100:1024]

Each (policy, size) runs in a fresh Python process: `--runs` runs of a Poisson trace of that many jobs at load 1 on
--cluster (scenarios.run_policy, in-process like the rule, its tables kept for every run), and prints the peak
resident memory (ru_maxrss) and the bytes per job simulated above the size-0 baseline (the interpreter, pandas and
the tables' import).  coloc reads the lofo predictions of --processed where they are; fifo reads none.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

CHILD = """
import json, resource, sys
import pandas as pd
from coloc.studies import scenarios
processed, policy, n_jobs, runs, cluster = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
solo, pairs = pd.read_parquet(f"{processed}/solo.parquet"), pd.read_parquet(f"{processed}/pairs.parquet")
settings = {"reference_device": "v100", "max_jobs_per_gpu": 2, "restart_cost_s": 30.0, "protocol": "lofo",
            "predictor_norm": "egat", "predictor_util": "horus", "util_bin_s": 3600.0}
spec = {"trace": {"source": "poisson", "n_jobs": max(n_jobs, 1), "median_duration_s": 1800.0, "duration_sigma": 1.0,
                  "gpu_mix": {"1": 8, "2": 1, "4": 1}}, "cluster": cluster, "gpus_per_node": 8,
        "policies": [policy], "seeds": list(range(runs)), "sweep": {"load": [1.0]}, "headline": 1.0}
if n_jobs:
    tables = scenarios.run_policy("memory", policy, spec, settings, solo, pairs, None,
                                  f"{processed}/predictions/gavel/lofo.parquet" if policy != "fifo" else "",
                                  log=lambda _: None)
    kept = int(sum(t.memory_usage(deep=True).sum() for t in tables.values()))
else:
    kept = 0
print(json.dumps({"maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "kept_bytes": kept}))
"""


def measure(processed: str, policy: str, n_jobs: int, runs: int, cluster: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, processed, policy, str(n_jobs), str(runs), cluster],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processed", default="data/processed")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000, 300_000])
    parser.add_argument("--policies", nargs="+", default=["fifo", "coloc"])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--cluster", default="v100:1024")
    args = parser.parse_args()
    base = measure(args.processed, "fifo", 0, 1, args.cluster)["maxrss_kb"] * 1024
    print(f"baseline (no run): {base / 2**20:.0f} MiB;  {resource.getpagesize()} B pages")
    print(f"cluster {args.cluster}")
    print("| policy | jobs | runs | peak MiB | kept tables MiB | bytes per job above baseline |")
    print("|---|---|---|---|---|---|")
    for policy in args.policies:
        for n_jobs in args.sizes:
            row = measure(args.processed, policy, n_jobs, args.runs, args.cluster)
            peak = row["maxrss_kb"] * 1024
            print(f"| {policy} | {n_jobs} | {args.runs} | {peak / 2**20:.0f} | {row['kept_bytes'] / 2**20:.0f} | "
                  f"{(peak - base) / n_jobs:.0f} |", flush=True)


if __name__ == "__main__":
    main()
