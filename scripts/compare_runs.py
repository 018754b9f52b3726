"""Compare two runs of the workflow file by file: every output must be byte-identical.

    python scripts/compare_runs.py RUN_A RUN_B [--allow-wall-clock]

RUN_A and RUN_B are two checkouts after ``snakemake --cores all`` (or any folders holding the run's outputs).
Compared: every file under ``data/processed``, ``results`` and ``figures`` (the README's generated blocks are the
run's ``results/readme.md``; ``coloc readme --check`` compares a README with a run). Profiling measures real
training on this machine, so two runs agree only when the second starts from the first's measurement log
(config ``profiling.log``, copied before the run): then it measures nothing and tabulates the same log.
Printed: the number of files compared, each file only one run has, and each file whose sha256 differs. The
scheduling delay's outputs hold wall-clock times (one scheduling round timed against the queue's length) and
differ run to run; ``--allow-wall-clock`` leaves those out (they are named in the output). Exit status 0 when
the runs agree, 1 when they do not.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

OUTPUTS = ("data/processed", "results", "figures")
WALL_CLOCK = ("results/sim/scheduling_delay.parquet", "figures/sim/scheduling_delay.png")


def digests(run: Path) -> dict[str, str]:
    """sha256 of each output file of ``run``, by its path relative to ``run``."""
    found = [p for folder in OUTPUTS if (run / folder).is_dir() for p in (run / folder).rglob("*") if p.is_file()]
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(found)}


def differences(a: dict[str, str], b: dict[str, str], skip: tuple[str, ...] = ()) -> list[str]:
    lines = [f"only in the first run: {name}" for name in sorted(a.keys() - b.keys()) if name not in skip]
    lines += [f"only in the second run: {name}" for name in sorted(b.keys() - a.keys()) if name not in skip]
    lines += [f"differs: {name}" for name in sorted(a.keys() & b.keys()) if a[name] != b[name] and name not in skip]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--allow-wall-clock", action="store_true",
                        help="leave out the scheduling delay's outputs (wall-clock times): " + ", ".join(WALL_CLOCK))
    args = parser.parse_args(argv)
    for run in (args.first, args.second):
        if not any((run / folder).is_dir() for folder in OUTPUTS):
            parser.error(f"{run}: no run outputs here (expected one of {', '.join(OUTPUTS)})")
    a, b = digests(args.first), digests(args.second)
    skip = WALL_CLOCK if args.allow_wall_clock else ()
    lines = differences(a, b, skip)
    print(f"{len(a.keys() | b.keys())} files compared"
          + (f" ({', '.join(s for s in skip if s in a.keys() | b.keys())} left out: wall-clock)" if skip else ""))
    print("\n".join(lines) if lines else "every file is byte-identical")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
