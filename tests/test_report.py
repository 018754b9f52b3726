"""The Snakemake report of the CI run: every figure and table the run made is in it, with its caption, grouped by
stage, and the claims table is on its first page."""

import json
import re
import subprocess
import sys

import pytest

from coloc.claims import VERDICTS
from workflow_run import CI_CONFIG, REPO

pytestmark = pytest.mark.slow  # builds the report of the CI run (the run itself takes minutes)


def report_variable(html: str, name: str):
    """The JSON value the report's page assigns to ``var <name> = ...;`` (results, categories, workflow_desc)."""
    for match in re.finditer(rf"^\s*var {name} = (.+);$", html, re.MULTILINE):  # bundled scripts use the names too
        try:
            return json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
    raise AssertionError(f"report.html: no 'var {name} = <JSON>;' line")


@pytest.fixture(scope="module")
def report(ci_run, tmp_path_factory):
    """(folder of the CI run, report.html's text) after `snakemake --report` on the finished CI run."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "1",
                             "--configfile", str(CI_CONFIG), "--report", str(out)],
                            cwd=ci_run, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return ci_run, out.read_text()


def test_every_figure_and_table_of_the_run_is_in_the_report_with_a_caption(report):
    ci_run, html = report
    results = report_variable(html, "results")
    made = sorted(str(p.relative_to(ci_run)) for p in (ci_run / "figures").rglob("*.png"))
    made += sorted(str(p.relative_to(ci_run)) for p in (ci_run / "results").rglob("*.csv"))
    assert len(made) > 10
    missing = [path for path in made if path not in results]
    assert not missing, f"made by the run but not in the report: {missing}"
    for path in made:
        entry = results[path]
        assert entry["data_uri"].startswith("data:"), path  # embedded, not a link to a missing file
        assert len(re.sub("<[^>]+>", "", entry["caption"]).strip()) > 80, f"{path}: caption missing or a stub"
        assert "Config keys" in entry["caption"], f"{path}: the caption names no config keys"


def test_results_are_grouped_by_stage_and_the_claims_come_first(report):
    _, html = report
    categories = report_variable(html, "categories")
    names = sorted(categories)
    assert names[0] == "1 Claims", names
    assert {"2 Data", "5 Predictors", "6 Simulation"} <= set(names)
    assert len(categories["6 Simulation"]) >= 1  # subcategories: one per scenario


def test_the_first_page_renders_the_claims_table(report):
    ci_run, html = report
    page = report_variable(html, "workflow_desc")
    claims = (ci_run / "results" / "claims.csv").read_text().splitlines()
    assert "<table" in page and "paper_value" in page and "verdict" in page
    rows = re.findall(r"<tr>", page)
    assert len(rows) >= len(claims)  # the header and one row per claim
    assert any(verdict in page for verdict in VERDICTS)
