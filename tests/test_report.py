"""The Snakemake report of the CI run: every figure and table the run made is in it, with its caption, grouped by
stage; its front page fits one screen and points to the claims table, a page of its own that a reader reaches in a
real browser (headless Chromium)."""

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import chromium
import pandas as pd
import pytest
from workflow_run import CI_CONFIG, REPO

from coloc.claims import VERDICTS

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


def test_the_claims_page_holds_every_claim_of_the_run(report):
    ci_run, html = report
    page = report_variable(html, "results")["results/claims.html"]
    assert page["data_uri"].startswith("data:text/html") and page["mime_type"] == "text/html"
    text = base64.b64decode(page["data_uri"].split(",", 1)[1]).decode()
    brief = (ci_run / "results" / "claims_brief.csv").read_text().splitlines()
    assert text.count("<tr") == len(brief)  # the header and one row per claim
    assert "<th>verdict</th>" in text and any(verdict in text for verdict in VERDICTS)
    desc = report_variable(html, "workflow_desc")
    assert "Open <strong>1 Claims</strong> in the menu, then" in desc and "claims.html" in desc


SCREEN = (1280, 800)
JS_RECT = "(e => e && JSON.stringify(e.getBoundingClientRect()))({})"
JS_WITH_TEXT = "[...document.querySelectorAll('{tags}')].find(e => e.textContent.trim().startsWith({text!r}))"
JS_LINK = "[...document.querySelectorAll('a')].find(e => e.textContent.trim() === {text!r})"  # a menu item


def rect(page, tags: str, text: str) -> dict | None:
    found = page.evaluate(JS_RECT.format(JS_WITH_TEXT.format(tags=tags, text=text)))
    return json.loads(found) if found else None


def on_screen(box: dict | None, height: int) -> bool:
    return box is not None and box["top"] >= 0 and box["bottom"] <= height and box["height"] > 0


@pytest.mark.skipif(chromium.executable() is None, reason="no chromium on PATH (Debian: apt-get install -y chromium)")
def test_a_reader_sees_the_front_page_from_its_top_and_reaches_the_first_claim_in_a_browser(report, tmp_path):
    """The report centres its front page in a box one screen high: a front page holding the whole claims table
    opened partway down it, its heading and first claims above the top, where no scrolling reaches. In headless
    Chromium at 1280x800: the front page's heading, the claims heading and its pointer are on screen; the menu's
    1 Claims, then results/claims.html's view button, opens the table in a frame at the top of the screen; the page
    in that frame shows its heading and the first claim on screen. Screenshots: $COLOC_REPORT_SHOTS (when set), else
    tmp_path."""
    ci_run, html = report
    shots = Path(os.environ.get("COLOC_REPORT_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    report_path = tmp_path / "report.html"
    report_path.write_text(html)
    width, height = SCREEN
    with chromium.Browser() as browser:
        front = browser.page(report_path.as_uri(), width, height)
        front.wait_for("document.body.innerText.includes('Claims of the papers')")
        front.screenshot(shots / "front.png")
        for tags, text in (("h1,h2", "coloc: interference-aware GPU sharing"), ("h1,h2,h3", "Claims of the papers"),
                           ("p", "Open 1 Claims in the menu")):
            assert on_screen(rect(front, tags, text), height), (text, rect(front, tags, text))
        front.evaluate(JS_LINK.format(text="1 Claims") + ".click()")
        row = ("[...document.querySelectorAll('tr')]"
               ".find(r => r.cells[0] && r.cells[0].textContent.trim() === 'results/claims.html')")
        front.wait_for(f"!!{row}")
        front.evaluate(f"{row}.querySelector('a').click()")
        front.wait_for("!!document.querySelector('iframe')")
        front.screenshot(shots / "claims_in_the_report.png")
        frame = json.loads(front.evaluate(JS_RECT.format("document.querySelector('iframe')")))
        assert frame["top"] == 0 and frame["height"] >= height - 1, frame  # the frame fills the screen from the top
        claims_page = report_variable(html, "results")["results/claims.html"]["data_uri"]
        first = pd.read_csv(ci_run / "results" / "claims_brief.csv", dtype=str, keep_default_na=False).iloc[0]
        inner = browser.page(claims_page, frame["width"], height)  # the frame's document at the frame's size
        inner.screenshot(shots / "claims_page.png")
        assert on_screen(rect(inner, "h1", "Claims of the papers"), height)
        cells = inner.evaluate("[...document.querySelector('tbody tr').cells].map(c => c.textContent.trim())")
        assert cells[:2] == [first["paper"], first["claim"]], cells  # the first row is the first claim
        first_row = json.loads(inner.evaluate(JS_RECT.format("document.querySelector('tbody tr')")))
        assert on_screen(first_row, height), first_row
