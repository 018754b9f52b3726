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
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

MARK = "<!-- results:{name} (written by the run: coloc readme; do not edit) -->"
END = "<!-- /results:{name} -->"
SECTION = re.compile(r"<!-- results:(?P<name>[a-z0-9-]+) \(written by the run: coloc readme; do not edit\) -->\n"
                     r"(?P<body>.*?)<!-- /results:(?P=name) -->", re.S)
INPUTS = {"claims": "claims_brief.csv", "claims_map": "claims_map.csv", "predictors": "predictors/summary.csv",
          "scenarios": "sim/summary.parquet"}
VERDICT_MARKS = {"reproduced": "R", "same direction, smaller": "S", "not reproduced": "N", "not comparable": "NC",
                 "coloc's finding": "F"}
DOCUMENTS = ("README.md", "docs/results.md")  # the files holding the sections (each section in one of them)


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
    table = brief.rename(columns={"paper_value": "paper says", "paper_setting": "coloc, paper's setting",
                                  "paper_setting_verdict": "verdict there", "coloc_value": "coloc, own setting",
                                  "decided_by": "decided by"})
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


PREDICTOR_DATASETS = ("gavel", "lucid", "gavel-lucid")  # the datasets of the README's predictor tables, in order


def predictors_section(summary: pd.DataFrame) -> str:
    """A table per dataset of PREDICTOR_DATASETS the run scored (Gavel's, Lucid's, the cross-dataset protocol's)."""
    present = [d for d in PREDICTOR_DATASETS if (summary["dataset"] == d).any()]
    return "\n".join(predictors_table(summary, d) for d in present)


def predictors_table(summary: pd.DataFrame, dataset: str) -> str:
    """MAPE (%) of each pair predictor under each protocol on `dataset`, mean over seeds (predictors as rows)."""
    part = summary[summary["dataset"] == dataset]
    if "setting" in part.columns:
        part = part.assign(predictor=[p if s == "out of fold" else f"{p} ({s})"
                                      for p, s in zip(part["predictor"], part["setting"])])
    table = part.pivot_table(index="predictor", columns="protocol", values="MAPE", aggfunc="first")
    table = table.sort_values(table.columns[0]).map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
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


def headlines_section(summary: pd.DataFrame, headlines: dict[str, float] | None = None) -> str:
    """One table: each policy's mean completion time (h, mean over seeds) at each scenario's headline point (the
    `headlines` given, else its last point), a column per scenario; policies by their mean rank over the columns
    (best first), blank where a policy did not run in a scenario."""
    columns = {}
    for scenario, runs in summary.groupby("scenario", sort=False):
        points = sorted(float(p) for p in runs["point"].unique())
        point = (headlines or {}).get(scenario, points[-1])
        at = runs[runs["point"] == point]
        if at.empty:
            raise ValueError(f"scenario {scenario!r}: headline point {point!r} not among its points {points}")
        columns[f"{scenario} ({at['sweep'].iloc[0]} {point:g})"] = at.groupby("policy")["jct_mean"].mean() / 3600.0
    table = pd.DataFrame(columns)
    table = table.loc[table.rank().mean(axis=1).sort_values(kind="stable").index]
    table = table.map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
    return markdown(table.rename_axis("policy (mean JCT, h)").reset_index())


def sections(results: str | Path, headlines: dict[str, float] | None = None) -> dict[str, str]:
    """Every section's Markdown from a run's results folder (`headlines`: scenario -> its headline point)."""
    results = Path(results)
    missing = [str(results / f) for f in INPUTS.values() if not (results / f).is_file()]
    if missing:
        raise FileNotFoundError(f"coloc readme: {missing} missing; expected a finished run's results "
                                f"(snakemake --cores all)")
    summary = pd.read_parquet(results / INPUTS["scenarios"])
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
    """Names of the sections marked in `text` whose body differs from the rendering."""
    return sorted(name for name, body in found(text).items() if rendered.get(name) != body)


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
    import os
    import sys

    parser = argparse.ArgumentParser(prog="coloc readme", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="the run's results folder")
    parser.add_argument("--readme", nargs="+", default=list(DOCUMENTS),
                        help="the files with the marked sections (each section marked in exactly one)")
    parser.add_argument("--headlines", nargs="*", default=(), metavar="SCENARIO=POINT",
                        help="each scenario's headline point (default: its last point)")
    parser.add_argument("--sections-out", help="write every rendered section here (Markdown)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--fill", action="store_true", help="put the sections into the files")
    action.add_argument("--check", action="store_true", help="exit 1, naming them, if the files' sections differ")
    args = parser.parse_args(argv)
    try:
        rendered = sections(args.results, parse_headlines(args.headlines))
        texts = {path: Path(path).read_text() for path in args.readme} if (args.check or args.fill) else {}
        if args.sections_out:
            out = Path(args.sections_out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("".join(f"{MARK.format(name=n)}\n{body}{END.format(name=n)}\n\n" for n, body in rendered.items()))
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
            print(f"{', '.join(texts)}: every section equals the run in {args.results}")
        elif args.fill:
            for path, text in texts.items():
                filled = fill(text, rendered)
                temporary = Path(f"{path}.partial")
                temporary.write_text(filled)
                os.replace(temporary, path)
                print(f"{path}: sections {sorted(found(text))} written from {args.results}")
    except (FileNotFoundError, ValueError) as err:
        print(f"coloc readme: {err}", file=sys.stderr)
        return 2
    return 0
