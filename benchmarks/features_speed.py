"""Time feature extraction for every job type in the zoo.

    python benchmarks/features_speed.py [--per-job]

Prints the wall and CPU time of ``coloc.features.workloads_table`` (the CPU time is what
other processes on a shared machine cannot inflate much) and, with --per-job, the slowest
job types.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

from coloc import features, workloads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-job", action="store_true", help="also time each job type serially")
    args = parser.parse_args()
    torch.set_num_threads(1)
    names = workloads.names()
    print(f"{len(names)} job types, {os.cpu_count()} CPUs, torch {torch.__version__}")
    start, cpu_start = time.perf_counter(), time.process_time()
    table = features.workloads_table(names)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"workloads_table: {len(table)} rows x {table.shape[1]} columns in {total:.1f} s wall "
          f"({total / len(names):.2f} s per job type), {cpu:.1f} s CPU; 1-min load average {load:.1f}")
    if args.per_job:
        times = {}
        for n in names:
            t = time.perf_counter()
            features.extract(n)
            times[n] = time.perf_counter() - t
        print("slowest job types (serial):")
        for n in sorted(times, key=times.get, reverse=True)[:10]:
            print(f"  {n:34s} {times[n]:6.2f} s")


if __name__ == "__main__":
    main()
