"""Choose the ISACPP testbed's job durations by fitting the volcano baseline to Volcano's published completion times.

ISACPP lists its 51 jobs' types and epochs, not their run times. This script simulates the ``isacpp-testbed``
scenario's baseline, ``volcano``, with every job submitted at once (the paper's setting), for each candidate
log-normal duration (median, sigma), over the scenario's seeds, and ranks the candidates by the distance of the
pooled completion times' quantiles to Volcano's 51 published ones (`coloc.sim.calibrate`). Only the baseline is
fitted: ISACPP's and Horus's published times are never looked at, so comparing them with it stays a measurement.
The config's ``median_duration_s`` and ``duration_sigma`` of the scenario are the best candidate of this run.

Needs the default run's data tables, the jobs' declared memory included, as the ``simulate`` rule reads them
(``snakemake --cores all data/processed/pairs.parquet data/processed/memory.parquet``):

    python scripts/fit_testbed.py                      # prints the ranking, writes results/calibration/testbed.csv
    python scripts/fit_testbed.py --data ../run1/data/processed --out /tmp/testbed.csv   # another run's tables
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
from coloc.sim import calibrate, experiment, scenarios

SCENARIO = "isacpp-testbed"


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="config/config.yaml", type=Path, help="the run's config (its scenario spec)")
    p.add_argument("--data", default="data/processed", type=Path,
                   help="folder of the solo, pairs and memory tables (memory: the memory rule's job memory estimate)")
    p.add_argument("--medians", nargs="+", type=float, default=[20, 30, 45, 60, 90],
                   help="candidate median exclusive durations (s)")
    p.add_argument("--sigmas", nargs="+", type=float, default=[1.0, 1.2, 1.4, 1.6, 1.8], help="candidate sigmas")
    p.add_argument("--out", default="results/calibration/testbed.csv", type=Path, help="the ranking (CSV)")
    return p.parse_args(argv)


def volcano_times(spec: dict, settings: dict, solo: pd.DataFrame, pairs: pd.DataFrame, median: float,
                  sigma: float) -> list[float]:
    """Completion times of every job of every seed under volcano, all jobs submitted at once."""
    trace = {**spec["trace"], "median_duration_s": median, "duration_sigma": sigma}
    times = []
    for seed in spec["seeds"]:
        point = scenarios.Point(int(seed), "interval_s", 0.0)
        config = scenarios.run_config("volcano", {**spec, "trace": trace}, settings, point)
        _, jobs, _ = experiment.run(config, scenarios.trace_spec({**spec, "trace": trace}), solo, pairs, None)
        times += jobs["jct"].tolist()
    return times


def main(argv=None) -> int:
    args = parse(argv)
    config = yaml.safe_load(args.config.read_text())
    spec, settings = config["simulation"]["scenario_specs"][SCENARIO], config["simulation"]
    tables = {name: args.data / f"{name}.parquet" for name in ("solo", "pairs", "memory")}
    missing = [str(path) for path in tables.values() if not path.exists()]
    if missing:
        raise SystemExit(f"fit_testbed: {', '.join(missing)} missing; expected the data tables of a run "
                         f"(snakemake --cores all {' '.join(missing)})")
    solo, _ = memory.with_memory(pd.read_parquet(tables["solo"]), pd.read_parquet(tables["memory"]))
    pairs = pd.read_parquet(tables["pairs"])
    candidates = list(itertools.product(args.medians, args.sigmas))
    table = calibrate.fit(candidates, lambda c: volcano_times(spec, settings, solo, pairs, *c),
                          ISACPP_COMPLETION_S["volcano"], lambda c: {"median_duration_s": c[0], "duration_sigma": c[1]})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(table.head(10).to_string(index=False))
    best = table.iloc[0]
    print(f"best: median_duration_s {best.median_duration_s:g}, duration_sigma {best.duration_sigma:g} "
          f"(distance {best.distance:.3f}; {len(spec['seeds'])} seeds, cluster {spec['cluster']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
