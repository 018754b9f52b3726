"""The README's result tables, written from a run's outputs, never typed in.

Each table of measured results in README.md (the claims, each scenario's headline point) and in docs/results.md (the
predictors' scores, every scenario point) sits between two markers,

    <!-- results:NAME (written by the run: coloc readme; do not edit) -->
    ...
    <!-- /results:NAME -->

and :func:`sections` renders every NAME from a finished run's files under ``results/`` (the claims table, the
predictors' scores, each scenario's mean completion times). The workflow's ``readme`` rule writes the sections
to ``results/readme.md`` and, in the default run (config ``readme.fill: true``), puts them into README.md and
docs/results.md, so after ``snakemake --cores all`` both hold that run's numbers. ``coloc readme --check`` says
which sections differ from a run's files (exit 1), so a number edited by hand is caught.

Each scenario's headline point is the one in the config the run used: the ``readme`` rule passes them
(``--headlines``) and records them in ``results/headlines.json`` (``--headlines-out``), which ``coloc readme``
reads when no ``--headlines`` are given, so the command without options renders what the run rendered.

``--check`` leaves out the claims whose coloc value is wall-clock time of the machine that ran it
(:func:`coloc.claims.wall_clock_claims`: the scheduling delay): a run on another machine times another value.
Every other cell must be equal.
"""
from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pandas as pd

from coloc import datasets
from coloc.claims import BRIEF_HEADERS, wall_clock_claims

MARK = "<!-- results:{name} (written by the run: coloc readme; do not edit) -->"
END = "<!-- /results:{name} -->"
SECTION = re.compile(r"<!-- results:(?P<name>[a-z0-9-]+) \(written by the run: coloc readme; do not edit\) -->\n"
                     r"(?P<body>.*?)<!-- /results:(?P=name) -->", re.S)
INPUTS = {"claims": "claims_brief.csv", "claims_map": "claims_map.csv", "predictors": "predictors/summary.csv",
          "scenarios": "sim/summary.parquet"}
VERDICT_MARKS = {"reproduced": "R", "same direction, smaller": "S", "not reproduced": "N", "not comparable": "NC",
                 "coloc's finding": "F"}
DOCUMENTS = ("README.md", "docs/results.md")  # the files holding the sections (each section in one of them)
HEADLINES = "headlines.json"  # in the results folder: {scenario: headline point} of the config the run used
UNCHECKED = "(wall-clock time: not checked)"  # what --check compares in place of a wall-clock value


def markdown(frame: pd.DataFrame) -> str:
    """A Markdown table of `frame` (its values as text, bars in them escaped)."""
    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def claims_section(brief: pd.DataFrame) -> str:
    """The claims table: paper, claim, the paper's value (its interval where the published data give one), coloc in
    the paper's setting and in its own, each with its 95% interval and verdict, and what decides the verdict."""
    table = brief.rename(columns=BRIEF_HEADERS)
    return markdown(table[["paper", "claim", "paper says", "coloc, paper's setting", "verdict there",
                           "coloc, own setting", "verdict", "decided by"]])


def claims_map_section(table: pd.DataFrame) -> str:
    """The claims map: a table per group of simulated claims, a row per claim, a column per cell (the paper's setting,
    each one-factor move, coloc's), each entry coloc's change (%) and its verdict's mark (:data:`VERDICT_MARKS`)."""
    legend = ", ".join(f"{mark} {verdict}" for verdict, mark in VERDICT_MARKS.items() if verdict != "coloc's finding")
    parts = []
    shown = table[~table["verdict"].isin(["coloc's finding"])]
    for group, part in shown.groupby("group", sort=False):
        cells = list(dict.fromkeys(part["cell"]))
        rows = {}
        for row in part.itertuples():
            value = "n/a" if pd.isna(row.coloc_value) else f"{float(row.coloc_value):+.3g}%"
            rows.setdefault(row.claim, {})[row.cell] = f"{value} {VERDICT_MARKS[row.verdict]}"
        frame = pd.DataFrame.from_dict(rows, orient="index")[cells].fillna("")
        parts.append(f"**{group}** (scenario {part['scenario'].iloc[0]}):\n\n"
                     + markdown(frame.rename_axis("claim").reset_index()))
    return "\n".join(parts) + f"\n{legend}.\n"


SEEDS_NOTE = ("MAPE: mean over the seeds a predictor ran; [low, high]: the 95% t interval of that mean "
              "(coloc.stats.mean_ci), given where it ran several seeds.")


def predictors_section(summary: pd.DataFrame) -> str:
    """A table per published dataset the run scored (:attr:`coloc.datasets.Dataset.published`: Gavel's, Lucid's,
    the cross-dataset protocol's, in the registry's order); SEEDS_NOTE below them when a predictor ran several
    seeds."""
    present = [d for d in datasets.names() if datasets.get(d).published and (summary["dataset"] == d).any()]
    tables = "\n".join(predictors_table(summary, d) for d in present)
    several = "MAPE_low" in summary.columns and summary["MAPE_low"].notna().any()
    return tables + (f"\n{SEEDS_NOTE}\n" if several else "")


def mape_text(mape: float, low: float = float("nan"), high: float = float("nan")) -> str:
    """"11.36" or, with an interval over seeds, "11.36 [10.80, 11.92]"; "" for no value."""
    if pd.isna(mape):
        return ""
    return f"{mape:.2f} [{low:.2f}, {high:.2f}]" if pd.notna(low) and pd.notna(high) else f"{mape:.2f}"


def predictors_table(summary: pd.DataFrame, dataset: str) -> str:
    """MAPE (%) of each pair predictor under each protocol on `dataset`, mean over seeds with its 95% interval
    where several seeds ran (predictors as rows, the lowest MAPE of the first protocol first)."""
    part = summary[summary["dataset"] == dataset]
    if "setting" in part.columns:
        part = part.assign(predictor=[p if s == "out of fold" else f"{p} ({s})"
                                      for p, s in zip(part["predictor"], part["setting"], strict=True)])
    low, high = (part[c] if c in part.columns else float("nan") for c in ("MAPE_low", "MAPE_high"))
    part = part.assign(text=[mape_text(*v) for v in zip(part["MAPE"], pd.Series(low, index=part.index),
                                                          pd.Series(high, index=part.index), strict=True)])
    order = part.pivot_table(index="predictor", columns="protocol", values="MAPE", aggfunc="first")
    order = order.sort_values(order.columns[0])
    table = part.pivot_table(index="predictor", columns="protocol", values="text", aggfunc="first")
    table = table.reindex(index=order.index, columns=order.columns).fillna("")
    return markdown(table.reset_index().rename(columns={"predictor": f"MAPE % on {dataset}"}))


def scenarios_section(summary: pd.DataFrame) -> str:
    """Per scenario: each policy's mean completion time (h, mean over seeds) at every sweep point, best last point
    first."""
    parts = []
    for scenario, runs in summary.groupby("scenario", sort=True):
        sweep = str(runs["sweep"].iloc[0])
        means = runs.groupby(["policy", "point"])["jct_mean"].mean().unstack("point") / 3600.0
        means = means.sort_values(means.columns[-1])
        seeds = runs["seed"].nunique()
        means.columns = [f"{sweep} {p:g}" for p in means.columns]
        table = means.map(lambda v: f"{v:.3g}").reset_index()
        parts.append(f"**{scenario}** (mean JCT, hours; {seeds} seeds; `{runs['cluster'].iloc[0]}`)\n\n"
                     + markdown(table))
    return "\n".join(parts)


def headlines_section(summary: pd.DataFrame, headlines: dict[str, float]) -> str:
    """One table: each policy's mean completion time (h, mean over seeds) at each scenario's headline point (from
    `headlines`, which must name every scenario of the summary), a column per scenario; policies by their mean rank
    over the columns (best first), blank where a policy did not run in a scenario."""
    columns = {}
    for scenario, runs in summary.groupby("scenario", sort=False):
        points = sorted(float(p) for p in runs["point"].unique())
        if scenario not in headlines:
            raise ValueError(f"scenario {scenario!r}: no headline point given (headlines for {sorted(headlines)}); "
                             f"expected SCENARIO=POINT with POINT among its points {points}")
        point = float(headlines[scenario])
        at = runs[runs["point"] == point]
        if at.empty:
            raise ValueError(f"scenario {scenario!r}: headline point {point!r} not among its points {points}")
        columns[f"{scenario} ({at['sweep'].iloc[0]} {point:g})"] = at.groupby("policy")["jct_mean"].mean() / 3600.0
    table = pd.DataFrame(columns)
    table = table.loc[table.rank().mean(axis=1).sort_values(kind="stable").index]
    table = table.map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
    return markdown(table.rename_axis("policy (mean JCT, h)").reset_index())


def run_headlines(results: str | Path) -> dict[str, float]:
    """{scenario: headline point} the run recorded in ``<results>/headlines.json`` (the ``readme`` rule writes it
    from the run's config); FileNotFoundError or ValueError naming the file and what was expected."""
    path = Path(results) / HEADLINES
    if not path.is_file():
        raise FileNotFoundError(f"{path} missing: the headline point of each scenario is the run's config's; the "
                                f"workflow's readme rule records them there (snakemake {path}), or give them as "
                                f"--headlines SCENARIO=POINT ...")
    try:
        values = json.loads(path.read_text())
        if not isinstance(values, dict):
            raise ValueError("not an object")
        return {str(scenario): float(point) for scenario, point in values.items()}
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}; expected a JSON object {{scenario: headline point}}") from None


def sections(results: str | Path, headlines: dict[str, float] | None = None) -> dict[str, str]:
    """Every section's Markdown from a run's results folder (`headlines`: scenario -> its headline point; None:
    the run's, :func:`run_headlines`)."""
    results = Path(results)
    missing = [str(results / f) for f in INPUTS.values() if not (results / f).is_file()]
    if missing:
        raise FileNotFoundError(f"coloc readme: {missing} missing; expected a finished run's results "
                                f"(snakemake --cores all)")
    summary = pd.read_parquet(results / INPUTS["scenarios"])
    headlines = run_headlines(results) if headlines is None else headlines
    # (the brief's "n/a", where coloc has no counterpart, is text: not read as a missing value, printed "nan")
    return {"claims": claims_section(pd.read_csv(results / INPUTS["claims"], dtype=str, keep_default_na=False)),
            "claims-map": claims_map_section(pd.read_csv(results / INPUTS["claims_map"])),
            "headlines": headlines_section(summary, headlines),
            "predictors": predictors_section(pd.read_csv(results / INPUTS["predictors"])),
            "scenarios": scenarios_section(summary)}


def found(text: str) -> dict[str, str]:
    """{name: body} of the marked sections of a README text."""
    return {m["name"]: m["body"] for m in SECTION.finditer(text)}


def fill(text: str, rendered: dict[str, str]) -> str:
    """`text` with each of its marked sections' body replaced by its rendering; a marked NAME that is not rendered
    is an error naming it."""
    unknown = sorted(set(found(text)) - set(rendered))
    if unknown:
        raise ValueError(f"sections {unknown} are marked but not rendered (rendered: {sorted(rendered)}); expected "
                         f"the marks {MARK.format(name='NAME')} ... {END.format(name='NAME')} of a rendered NAME")
    return SECTION.sub(lambda m: MARK.format(name=m["name"]) + "\n" + rendered[m["name"]] + END.format(name=m["name"]),
                       text)


def unplaced(texts: dict[str, str], rendered: dict[str, str]) -> list[str]:
    """Problems of where the sections are marked across files: a rendered section marked in none, or in two."""
    problems = []
    for name in rendered:
        holders = [path for path, text in texts.items() if name in found(text)]
        if len(holders) != 1:
            problems.append(f"section {name!r} is marked in {holders or 'no file'}; expected exactly one of "
                            f"{list(texts)}")
    return problems


def stale(text: str, rendered: dict[str, str]) -> list[str]:
    """Names of the sections marked in `text` whose body differs from the rendering, wall-clock values left out
    (:func:`checked`)."""
    return sorted(name for name, body in found(text).items()
                  if name not in rendered or checked(name, rendered[name]) != checked(name, body))


def checked(name: str, body: str) -> str:
    """What ``--check`` compares of a section: in the claims table, the coloc value of a claim measured in
    wall-clock time (:func:`coloc.claims.wall_clock_claims`) replaced by :data:`UNCHECKED`."""
    if name != "claims":
        return body
    timed = wall_clock_claims()
    lines = []
    for line in body.splitlines(keepends=True):
        # | paper | claim | paper says | coloc, paper's setting | verdict there | coloc, own setting | verdict |
        # decided by | (bars in a cell are escaped)
        cells = line.split(" | ")
        if len(cells) == 8 and cells[1] in timed:
            cells[3] = cells[5] = UNCHECKED
        lines.append(" | ".join(cells))
    return "".join(lines)


def replace_text(path: str | Path, text: str) -> None:
    """Write `text` to a temporary name unique to this writer beside `path`, with `path`'s permissions, then
    rename it onto `path`: concurrent writers never share a temporary file, and a reader sees one whole text."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        temporary.write_text(text)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def parse_headlines(values) -> dict[str, float]:
    """{scenario: point} from 'scenario=point' texts."""
    out = {}
    for value in values or ():
        scenario, sep, point = value.partition("=")
        try:
            out[scenario] = float(point)
        except ValueError:
            sep = ""
        if not sep or not scenario:
            raise ValueError(f"--headlines {value!r}: expected SCENARIO=POINT, e.g. poisson=1.1")
    return out


def main(argv=None) -> int:
    """``coloc readme``: render a run's sections; write them to a file, fill the documents, or check them."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="coloc readme", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="the run's results folder")
    parser.add_argument("--readme", nargs="+", default=list(DOCUMENTS),
                        help="the files with the marked sections (each section marked in exactly one)")
    parser.add_argument("--headlines", nargs="*", default=None, metavar="SCENARIO=POINT",
                        help=f"each scenario's headline point (default: the run's, <results>/{HEADLINES})")
    parser.add_argument("--sections-out", help="write every rendered section here (Markdown)")
    parser.add_argument("--headlines-out", help="record the headline points used here (JSON; the readme rule "
                                                f"writes <results>/{HEADLINES})")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--fill", action="store_true", help="put the sections into the files")
    action.add_argument("--check", action="store_true", help="exit 1, naming them, if the files' sections differ")
    args = parser.parse_args(argv)
    try:
        headlines = run_headlines(args.results) if args.headlines is None else parse_headlines(args.headlines)
        rendered = sections(args.results, headlines)
        if args.headlines_out:
            Path(args.headlines_out).parent.mkdir(parents=True, exist_ok=True)
            replace_text(args.headlines_out, json.dumps(headlines, indent=1, sort_keys=True) + "\n")
        texts = {path: Path(path).read_text() for path in args.readme} if (args.check or args.fill) else {}
        if args.sections_out:
            out = Path(args.sections_out)
            out.parent.mkdir(parents=True, exist_ok=True)
            replace_text(out, "".join(f"{MARK.format(name=n)}\n{body}{END.format(name=n)}\n\n"
                                      for n, body in rendered.items()))
        problems = unplaced(texts, rendered) if texts else []
        if problems:
            raise ValueError("; ".join(problems))
        if args.check:
            different = {path: stale(text, rendered) for path, text in texts.items()}
            different = {path: names for path, names in different.items() if names}
            for path, names in different.items():
                print(f"coloc readme: {path}: sections {names} differ from the run in {args.results} "
                      f"(coloc readme --fill writes them)", file=sys.stderr)
            if different:
                return 1
            print(f"{', '.join(texts)}: every section equals the run in {args.results} (wall-clock values not "
                  f"compared: {', '.join(sorted(wall_clock_claims()))})")
        elif args.fill:
            for path, text in texts.items():
                replace_text(path, fill(text, rendered))
                print(f"{path}: sections {sorted(found(text))} written from {args.results}")
    except (FileNotFoundError, ValueError) as err:
        print(f"coloc readme: {err}", file=sys.stderr)
        return 2
    return 0
