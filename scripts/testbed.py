"""The real testbed, then the simulator held against it: one command on this machine's CPU cores or GPUs.

Steps, each kept on disk as it finishes (a rerun with the same ``--out`` redoes only what is missing; a policy's
run that was killed is rerun afresh, its journal kept as ``runs/<policy>.jsonl.killed``):

1. profile the job types on one of the devices, solo and in every pair (coloc.profiler; ``profiling.jsonl``);
2. measure a start and a restart of each job type (stop with a checkpoint, start again from the count;
   ``launches_measured.csv``);
3. run the trace for real under each policy (coloc.testbed.runner; ``runs/<policy>.jsonl``, ``real_jobs.csv``,
   ``segments.csv``, ``launches.csv``);
4. profile the sets of 3 or more jobs the real runs formed on a device (appended to ``profiling.jsonl``);
5. replay the trace in the simulator per policy: ``sim`` (the simulator as it is: work = iterations / profiled
   solo throughput, sets of 3+ as the product of pairs, the measured restart cost), ``sim-measured-sets`` (the
   measured sets of 3+ in place of the product) and ``sim+startup`` (``sim``, each job charged its type's start-up
   measured in step 2);
6. compare (``comparison.csv``, ``per_job.csv``, ``jct_scatter.png``, ``summary.json`` with commit and machine).

    python scripts/testbed.py --config config/testbed.yaml                  # 2 CPU core sets, results/testbed/run
    snakemake --cores all testbed                                        # the same, outputs into the report
    python scripts/testbed.py --config config/testbed.yaml --devices cuda:0 --out "$OUT/testbed"   # a GPU host
    python scripts/testbed.py --config config/testbed.yaml --devices cuda:0,1 --mps --out "$OUT/testbed"
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from coloc import policies
from coloc.testbed import experiment


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="config/testbed.yaml", type=Path)
    p.add_argument("--out", default="results/testbed/run", type=Path,
                   help="the run's folder (the Snakemake rule testbed's too): logs, journals, tables")
    p.add_argument("--devices", help="override testbed.devices (cpu:2, cuda:0, cuda:0,1)")
    p.add_argument("--mps", action="store_true", help="CUDA MPS daemon on (GPU devices)")
    p.add_argument("--n-jobs", type=int, help="override testbed.n_jobs")
    p.add_argument("--policies", nargs="+", help="override testbed.policies")
    return p.parse_args(argv)


def load_config(args) -> dict:
    config = yaml.safe_load(args.config.read_text())["testbed"]
    if args.devices:
        config["devices"] = args.devices
    if args.mps:
        config["mps"] = True
    if args.n_jobs:
        config["n_jobs"] = args.n_jobs
    if args.policies:
        config["policies"] = args.policies
    unknown = [p for p in config["policies"] if p not in policies.names()]
    if unknown:
        raise SystemExit(f"{args.config}: testbed.policies {unknown} are not registered; expected among "
                         f"{policies.names()}")
    return config


def main(argv=None) -> int:
    args = parse(argv)
    table, summary = experiment.run(load_config(args), args.out, say=lambda text: print(text, flush=True))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.round(3).to_string(index=False))
    for line in summary["disagreements"]:
        print("ranking differs:", line)
    print(f"done in {summary['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
