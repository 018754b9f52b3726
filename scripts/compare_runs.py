"""Compare two runs of the workflow file by file: every output must be byte-identical.

    python scripts/compare_runs.py RUN_A RUN_B [--allow-wall-clock]

RUN_A and RUN_B are two checkouts after ``snakemake --cores all`` (or any folders holding the run's outputs).
Compared: every file under ``data/processed``, ``results`` and ``figures`` (the README's generated blocks are the
run's ``results/readme.md``; ``coloc readme --check`` compares a README with a run), except the executed notebooks
under ``results/notebooks`` (the rules' logs: they hold timings). Profiling measures real training on this
machine, so two runs agree only when the second starts from the first's measurement log (config
``profiling.log``, copied before the run): then it measures nothing and tabulates the same log.

Printed: the number of files compared, each file only one run has, and each file whose sha256 differs. Some
outputs hold wall-clock times, which differ run to run: the scheduling delay (one scheduling round timed against
the queue's length: its table, its figure, and its claim's row in the claims tables and the README's) and each
simulation's own time (the summaries' columns ``sim_wall_s`` and ``decision_ms_per_job``). With
``--allow-wall-clock`` a file whose bytes differ is compared again without those (tables without the columns and
the rows, text without the lines or table rows) and reported as agreeing in the rest, or as differing. Exit
status 0 when the runs agree, 1 when they do not.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

import pandas as pd

OUTPUTS = ("data/processed", "results", "figures")
LOGS = ("results/notebooks/",)
WALL_CLOCK = ("results/sim/scheduling_delay.parquet", "figures/sim/scheduling_delay.png")
WALL_CLOCK_COLUMNS = ("sim_wall_s", "decision_ms_per_job")
WALL_CLOCK_ROW = "scheduling delay at"  # the scheduling delay's claim, wherever a table lists the claims
TABLES, TEXTS = (".parquet", ".csv"), (".md", ".html")  # the files that can hold wall-clock values among others


def digests(run: Path) -> dict[str, str]:
    """sha256 of each output file of ``run``, by its path relative to ``run`` (the notebooks' logs left out)."""
    found = [p for folder in OUTPUTS if (run / folder).is_dir() for p in (run / folder).rglob("*") if p.is_file()]
    names = {str(p.relative_to(run)): p for p in sorted(found)}
    return {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in names.items()
            if not name.startswith(LOGS)}


def without_wall_clock(path: Path):
    """The file's content without its wall-clock values: a table without their columns and rows, text without
    the lines (or HTML table rows) that hold them."""
    if path.suffix in TABLES:
        table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, dtype=str)
        table = table.drop(columns=[c for c in WALL_CLOCK_COLUMNS if c in table.columns])
        text = table.select_dtypes(include=["object", "string"]).astype(str)
        return table[~text.apply(lambda column: column.str.contains(WALL_CLOCK_ROW, regex=False)).any(axis=1)]
    text = path.read_text()
    text = re.sub(r"<tr>(?:(?!</tr>).)*" + re.escape(WALL_CLOCK_ROW) + r".*?</tr>", "", text, flags=re.S)
    return [line for line in text.splitlines() if WALL_CLOCK_ROW not in line]


def agree_but_for_wall_clock(first: Path, second: Path) -> bool:
    """Whether two tables or texts agree without their wall-clock values (any other file, a figure, never does)."""
    if first.suffix not in TABLES + TEXTS:
        return False
    a, b = without_wall_clock(first), without_wall_clock(second)
    return a.reset_index(drop=True).equals(b.reset_index(drop=True)) if isinstance(a, pd.DataFrame) else a == b


def differences(a: dict[str, str], b: dict[str, str], skip: tuple[str, ...] = (),
                same_but_wall_clock=lambda name: False) -> list[str]:
    lines = [f"only in the first run: {name}" for name in sorted(a.keys() - b.keys()) if name not in skip]
    lines += [f"only in the second run: {name}" for name in sorted(b.keys() - a.keys()) if name not in skip]
    lines += [f"differs: {name}" for name in sorted(a.keys() & b.keys())
              if a[name] != b[name] and name not in skip and not same_but_wall_clock(name)]
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
    wall_clock_only = []

    def same_but_wall_clock(name: str) -> bool:
        if args.allow_wall_clock and agree_but_for_wall_clock(args.first / name, args.second / name):
            wall_clock_only.append(name)
            return True
        return False

    lines = differences(a, b, skip, same_but_wall_clock)
    print(f"{len(a.keys() | b.keys())} files compared"
          + (f" ({', '.join(s for s in skip if s in a.keys() | b.keys())} left out: wall-clock)" if skip else ""))
    for name in wall_clock_only:
        print(f"equal but for wall-clock values: {name}")
    print("\n".join(lines) if lines else "every other file is byte-identical" if wall_clock_only
          else "every file is byte-identical")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
