"""The README's result tables, written from a run's outputs, never typed in.

Each table of measured results in README.md sits between two markers,

    <!-- results:NAME (written by the run: coloc readme; do not edit) -->
    ...
    <!-- /results:NAME -->

and :func:`sections` renders every NAME from a finished run's files under ``results/`` (the claims table, the
predictors' scores, each scenario's mean completion times). The workflow's ``readme`` rule writes the sections
to ``results/readme.md`` and, in the default run (config ``readme.fill: true``), puts them into README.md, so
after ``snakemake --cores all`` the README holds that run's numbers. ``coloc readme --check`` says which
sections of a README differ from a run's files (exit 1), so a number edited by hand is caught.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

MARK = "<!-- results:{name} (written by the run: coloc readme; do not edit) -->"
END = "<!-- /results:{name} -->"
SECTION = re.compile(r"<!-- results:(?P<name>[a-z0-9-]+) \(written by the run: coloc readme; do not edit\) -->\n"
                     r"(?P<body>.*?)<!-- /results:(?P=name) -->", re.S)
INPUTS = {"claims": "claims_brief.csv", "predictors": "predictors/summary.csv", "scenarios": "sim/summary.parquet"}
SCENARIO_POLICIES = 14  # at most this many policies per scenario table (best mean JCT first)


def markdown(frame: pd.DataFrame) -> str:
    """A Markdown table of `frame` (its values as text, bars in them escaped)."""
    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def claims_section(brief: pd.DataFrame) -> str:
    """The claims table: paper, claim, the paper's value, coloc's with its interval, the verdict."""
    table = brief.rename(columns={"paper_value": "paper says", "coloc_value": "coloc (95% interval)"})
    return markdown(table[["paper", "claim", "paper says", "coloc (95% interval)", "verdict"]])


def predictors_section(summary: pd.DataFrame, dataset: str = "gavel") -> str:
    """MAPE (%) of each pair predictor under each protocol on `dataset`, mean over seeds (predictors as rows)."""
    part = summary[summary["dataset"] == dataset]
    if "setting" in part.columns:
        part = part.assign(predictor=[p if s == "out of fold" else f"{p} ({s})"
                                      for p, s in zip(part["predictor"], part["setting"])])
    table = part.pivot_table(index="predictor", columns="protocol", values="MAPE", aggfunc="first")
    table = table.sort_values(table.columns[0]).map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    return markdown(table.reset_index().rename(columns={"predictor": f"MAPE % on {dataset}"}))


def scenarios_section(summary: pd.DataFrame) -> str:
    """Per scenario: each policy's mean completion time (h, mean over seeds) at every sweep point."""
    parts = []
    for scenario, runs in summary.groupby("scenario", sort=True):
        sweep = str(runs["sweep"].iloc[0])
        means = runs.groupby(["policy", "point"])["jct_mean"].mean().unstack("point") / 3600.0
        means = means.sort_values(means.columns[-1]).head(SCENARIO_POLICIES)
        seeds = runs["seed"].nunique()
        means.columns = [f"{sweep} {p:g}" for p in means.columns]
        table = means.map(lambda v: f"{v:.3g}").reset_index()
        parts.append(f"**{scenario}** (mean JCT, hours; {seeds} seeds; `{runs['cluster'].iloc[0]}`)\n\n"
                     + markdown(table))
    return "\n".join(parts)


def sections(results: str | Path) -> dict[str, str]:
    """Every section's Markdown from a run's results folder."""
    results = Path(results)
    missing = [str(results / f) for f in INPUTS.values() if not (results / f).is_file()]
    if missing:
        raise FileNotFoundError(f"coloc readme: {missing} missing; expected a finished run's results "
                                f"(snakemake --cores all)")
    # (the brief's "n/a", where coloc has no counterpart, is text: not read as a missing value, printed "nan")
    return {"claims": claims_section(pd.read_csv(results / INPUTS["claims"], dtype=str, keep_default_na=False)),
            "predictors": predictors_section(pd.read_csv(results / INPUTS["predictors"])),
            "scenarios": scenarios_section(pd.read_parquet(results / INPUTS["scenarios"]))}


def found(text: str) -> dict[str, str]:
    """{name: body} of the marked sections of a README text."""
    return {m["name"]: m["body"] for m in SECTION.finditer(text)}


def fill(text: str, rendered: dict[str, str]) -> str:
    """`text` with each marked section's body replaced by its rendering; a marked NAME that is not rendered, or a
    rendering with no marks in the text, is an error naming it."""
    names = set(found(text))
    if names != set(rendered):
        raise ValueError(f"README sections {sorted(names)} and rendered sections {sorted(rendered)} differ; "
                         f"expected the marks {MARK.format(name='NAME')} ... {END.format(name='NAME')} for each")
    return SECTION.sub(lambda m: MARK.format(name=m["name"]) + "\n" + rendered[m["name"]] + END.format(name=m["name"]),
                       text)


def stale(text: str, rendered: dict[str, str]) -> list[str]:
    """Names of the sections whose body in `text` differs from the rendering (or that are missing there)."""
    bodies = found(text)
    return sorted(name for name, body in rendered.items() if bodies.get(name) != body)


def main(argv=None) -> int:
    """``coloc readme``: render a run's sections; write them to a file, fill README.md, or check it."""
    import argparse
    import os
    import sys

    parser = argparse.ArgumentParser(prog="coloc readme", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="the run's results folder")
    parser.add_argument("--readme", default="README.md", help="the README with the marked sections")
    parser.add_argument("--sections-out", help="write every rendered section here (Markdown)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--fill", action="store_true", help="put the sections into the README")
    action.add_argument("--check", action="store_true", help="exit 1, naming them, if the README's sections differ")
    args = parser.parse_args(argv)
    try:
        rendered = sections(args.results)
        text = Path(args.readme).read_text() if (args.check or args.fill) else ""  # (only these read it)
        if args.sections_out:
            out = Path(args.sections_out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("".join(f"{MARK.format(name=n)}\n{body}{END.format(name=n)}\n\n" for n, body in rendered.items()))
        if args.check:
            different = stale(text, rendered)
            if different:
                print(f"coloc readme: {args.readme}: sections {different} differ from the run in {args.results} "
                      f"(coloc readme --fill writes them)", file=sys.stderr)
                return 1
            print(f"{args.readme}: every section equals the run in {args.results}")
        elif args.fill:
            filled = fill(text, rendered)
            temporary = Path(f"{args.readme}.partial")
            temporary.write_text(filled)
            os.replace(temporary, args.readme)
            print(f"{args.readme}: sections {sorted(rendered)} written from {args.results}")
    except (FileNotFoundError, ValueError) as err:
        print(f"coloc readme: {err}", file=sys.stderr)
        return 2
    return 0
