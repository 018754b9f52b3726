"""Choose an ISACPP testbed scenario's free numbers by fitting the volcano baseline to Volcano's published completion times.

ISACPP lists its 51 jobs' types and epochs, not their run times, nor its nodes' GPU counts. This script simulates a
testbed scenario's baseline, ``volcano``, with every job submitted at once (the paper's setting), for each candidate,
over the scenario's seeds, and ranks the candidates by the distance of the pooled completion times' quantiles to
Volcano's 51 published ones (`coloc.studies.calibrate`). The candidates are log-normal durations (median, sigma) of
``isacpp-testbed`` (Gavel's cluster), or with ``--gpus`` the GPU counts of a one-device-type cluster at the
scenario's durations (``isacpp-testbed-3090``: Lucid's RTX 3090). Only the baseline is fitted: ISACPP's and
Horus's published times are never looked at, so comparing them with it stays a measurement. The scenario's config
values are the best candidate of this run. ``--baseline`` fits another form of the baseline (e.g.
``volcano-firstfit``, the global first fit the durations were once fitted on), to compare fits.

Needs the default run's data tables (``snakemake --cores all data/processed/memory.parquet
data/processed/lucid/solo.parquet``):

    python scripts/fit_testbed.py                      # prints the ranking, writes results/calibration/testbed.csv
    python scripts/fit_testbed.py --scenario isacpp-testbed-3090 --gpus $(seq 4 24) \
        --out results/calibration/testbed-3090.csv     # the RTX 3090 testbed's GPU count
    python scripts/fit_testbed.py --baseline volcano-firstfit --out /tmp/testbed-firstfit.csv
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import pandas as pd
import yaml

from coloc import memory
from coloc.published import ISACPP_COMPLETION_S
from coloc.studies import calibrate, experiment, scenarios

SCENARIO = "isacpp-testbed"
BASELINE = "volcano"  # the policy whose completion times are fitted to Volcano's published ones
TABLES = {"gavel": ".", "lucid": "lucid"}  # a scenario's dataset -> its tables' folder under --data


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="config/config.yaml", type=Path, help="the run's config (its scenario spec)")
    p.add_argument("--scenario", default=SCENARIO, help="the testbed scenario (a key of simulation.scenario_specs)")
    p.add_argument("--data", default="data/processed", type=Path,
                   help="folder of the workloads table and Gavel's solo and pairs tables (Lucid's: its lucid/)")
    p.add_argument("--gpus", nargs="+", type=int, default=None,
                   help="fit the cluster's GPU count instead of the durations: the candidate counts")
    p.add_argument("--medians", nargs="+", type=float, default=[20, 30, 45, 60, 90],
                   help="candidate median exclusive durations (s)")
    p.add_argument("--sigmas", nargs="+", type=float, default=[1.0, 1.2, 1.4, 1.6, 1.8], help="candidate sigmas")
    p.add_argument("--baseline", default=BASELINE, help="the policy fitted to Volcano's published times")
    p.add_argument("--out", default="results/calibration/testbed.csv", type=Path, help="the ranking (CSV)")
    return p.parse_args(argv)


def volcano_times(spec: dict, settings: dict, solo: pd.DataFrame, pairs: pd.DataFrame,
                  baseline: str = BASELINE) -> list[float]:
    """Completion times of every job of every seed under `baseline` (volcano), all jobs submitted at once."""
    times = []
    for seed in spec["seeds"]:
        point = scenarios.Point(int(seed), "interval_s", 0.0)
        config = scenarios.run_config(baseline, spec, settings, point)
        _, jobs, _ = experiment.run(config, scenarios.trace_spec(spec), solo, pairs, None)
        times += jobs["jct"].tolist()
    return times


def with_durations(spec: dict, median: float, sigma: float) -> dict:
    """The spec with the trace's log-normal durations set."""
    return {**spec, "trace": {**spec["trace"], "median_duration_s": median, "duration_sigma": sigma}}


def with_gpus(spec: dict, gpus: int) -> dict:
    """The spec with its one-device-type cluster sized to `gpus`."""
    return {**spec, "cluster": scenarios.cluster_at(spec["cluster"], gpus)}


def tables(data: Path, dataset: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(solo with the jobs' declared memory, pairs) of the scenario's dataset, the memory as the simulate rule
    declares it: measured where the solo table has it (Lucid's), else the memory rule's estimate (memory.parquet)."""
    folder = data / TABLES[dataset]
    estimates = data / "memory.parquet"
    solo, source = memory.with_memory(pd.read_parquet(folder / "solo.parquet"),
                                      pd.read_parquet(estimates) if estimates.is_file() else None)
    if source != "measured" and not estimates.is_file():
        raise FileNotFoundError(f"{estimates}: the jobs' estimated memory (snakemake data/processed/memory.parquet); "
                                f"{folder / 'solo.parquet'} does not measure every job's memory")
    return solo, pd.read_parquet(folder / "pairs.parquet")


def main(argv=None) -> int:
    args = parse(argv)
    config = yaml.safe_load(args.config.read_text())
    spec, settings = config["simulation"]["scenario_specs"][args.scenario], config["simulation"]
    solo, pairs = tables(args.data, scenarios.dataset_of(spec))
    if args.gpus:
        candidates, describe = list(args.gpus), lambda c: {"gpus": c}
        make = lambda c: with_gpus(spec, c)  # noqa: E731
    else:
        candidates = list(itertools.product(args.medians, args.sigmas))
        describe = lambda c: {"median_duration_s": c[0], "duration_sigma": c[1]}  # noqa: E731
        make = lambda c: with_durations(spec, *c)  # noqa: E731
    table = calibrate.fit(candidates, lambda c: volcano_times(make(c), settings, solo, pairs, args.baseline),
                          ISACPP_COMPLETION_S["volcano"], describe)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(table.head(10).to_string(index=False))
    best = table.iloc[0]
    chosen = ", ".join(f"{k} {best[k]:g}" for k in describe(candidates[0]))
    cluster = with_gpus(spec, int(best["gpus"]))["cluster"] if args.gpus else spec["cluster"]
    print(f"best: {chosen} (distance {best.distance:.3f}; baseline {args.baseline}, {len(spec['seeds'])} seeds, "
          f"scenario {args.scenario}, cluster {cluster})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
