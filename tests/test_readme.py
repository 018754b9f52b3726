"""The README's result tables come from a run's outputs: rendering, filling, and catching a number edited by hand."""
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from coloc import readme

REPO = Path(__file__).resolve().parents[1]


def results_folder(tmp_path: Path) -> Path:
    """A made-up finished run: the three files the sections are rendered from."""
    results = tmp_path / "results"
    (results / "predictors").mkdir(parents=True)
    (results / "sim").mkdir()
    pd.DataFrame([{"paper": "ISACPP", "claim": "lower makespan vs Volcano (predicted edges)", "paper_value": "-29.6%",
                   "coloc_value": "-12.5% [-20, -5]", "verdict": "same direction, smaller"},
                  {"paper": "ISACPP", "claim": "lower makespan vs Liquid (predicted edges)", "paper_value": "-34.9%",
                   "coloc_value": "n/a", "verdict": "not comparable"}]).to_csv(
        results / "claims_brief.csv", index=False)
    pd.DataFrame([{"dataset": "gavel", "protocol": p, "predictor": m, "MAPE": v, "setting": "out of fold"}
                  for p, m, v in (("random5", "blend", 5.91), ("lofo", "blend", 23.0), ("random5", "mean", 29.5),
                                  ("lofo", "mean", 29.3))]
                 + [{"dataset": "lucid", "protocol": "lojo", "predictor": "lgbm", "MAPE": 4.25, "setting": "out of fold"},
                    {"dataset": "user-a100", "protocol": "lofo", "predictor": "lgbm", "MAPE": 9.9, "setting": "out of fold"}]
                 ).to_csv(results / "predictors" / "summary.csv", index=False)
    pd.DataFrame([{"scenario": "poisson", "policy": pol, "seed": seed, "sweep": "load", "point": load,
                   "cluster": "v100:64", "jct_mean": 3600.0 * base * load * (1 + 0.1 * seed)}
                  for pol, base in (("fifo", 2.0), ("coloc", 1.5)) for seed in (0, 1) for load in (0.9, 1.1)]
                 ).to_parquet(results / "sim" / "summary.parquet")
    return results


def a_readme(names) -> str:
    return "# x\n\n" + "".join(f"{readme.MARK.format(name=n)}\nold\n{readme.END.format(name=n)}\n\ntext\n" for n in names)


def test_sections_render_the_runs_numbers(tmp_path):
    rendered = readme.sections(results_folder(tmp_path))
    assert set(rendered) == {"claims", "headlines", "predictors", "scenarios"}
    assert "| ISACPP | lower makespan vs Volcano (predicted edges) | -29.6% | -12.5% [-20, -5] | same direction, smaller |" \
        in rendered["claims"]
    assert "| ISACPP | lower makespan vs Liquid (predicted edges) | -34.9% | n/a | not comparable |" in rendered["claims"]
    assert "| blend | 23.00 | 5.91 |" in rendered["predictors"]  # lofo, random5 columns; best first
    assert "| MAPE % on lucid | lojo |\n|---|---|\n| lgbm | 4.25 |" in rendered["predictors"]  # a table per dataset
    assert "user-a100" not in rendered["predictors"]  # the README's datasets only
    # coloc at load 1.1: 1.5 x 1.1 x mean(1, 1.1) = 1.7325 h -> 1.73
    assert "| coloc | 1.42 | 1.73 |" in rendered["scenarios"] and "(mean JCT, hours; 2 seeds; `v100:64`)" \
        in rendered["scenarios"]
    # without headlines given, a scenario's last point; best first
    assert rendered["headlines"].splitlines()[:4] == ["| policy (mean JCT, h) | poisson (load 1.1) |", "|---|---|",
                                                      "| coloc | 1.73 |", "| fifo | 2.31 |"]


def test_a_predictor_run_with_several_seeds_shows_its_interval_and_the_note_says_what_it_is():
    summary = pd.DataFrame([
        {"dataset": "gavel", "protocol": "random5", "predictor": "egat", "MAPE": 11.0, "MAPE_low": 10.104,
         "MAPE_high": 11.896, "setting": "out of fold"},
        {"dataset": "gavel", "protocol": "lofo", "predictor": "egat", "MAPE": 26.0, "MAPE_low": None, "MAPE_high": None,
         "setting": "out of fold"},
        {"dataset": "gavel", "protocol": "random5", "predictor": "lgbm", "MAPE": 9.0, "MAPE_low": None,
         "MAPE_high": None, "setting": "out of fold"}])
    text = readme.predictors_section(summary)
    assert "| egat | 26.00 | 11.00 [10.10, 11.90] |" in text and "| lgbm |  | 9.00 |" in text
    assert text.endswith(readme.SEEDS_NOTE + "\n")
    one_seed = readme.predictors_section(summary.assign(MAPE_low=None, MAPE_high=None))
    assert "[" not in one_seed and readme.SEEDS_NOTE not in one_seed


def test_the_headline_table_reads_each_scenarios_headline_point_and_leaves_a_policy_it_lacks_blank(tmp_path):
    summary = pd.read_parquet(results_folder(tmp_path) / "sim" / "summary.parquet")
    other = summary[summary["policy"] == "fifo"].assign(scenario="testbed", sweep="interval_s")
    both = pd.concat([summary, other.assign(point=other["point"] * 100)])
    table = readme.headlines_section(both, {"poisson": 0.9}).splitlines()
    assert table[0] == "| policy (mean JCT, h) | poisson (load 0.9) | testbed (interval_s 110) |"
    assert table[2:] == ["| coloc | 1.42 |  |", "| fifo | 1.89 | 2.31 |"]  # fifo at 0.9: 2 x 0.9 x 1.05
    with pytest.raises(ValueError, match=r"scenario 'poisson': headline point 2.0 not among its points \[0.9, 1.1\]"):
        readme.headlines_section(summary, {"poisson": 2.0})
    with pytest.raises(ValueError, match=r"--headlines 'poisson:1.1': expected SCENARIO=POINT"):
        readme.parse_headlines(["poisson:1.1"])


def test_fill_then_check_and_a_number_edited_by_hand_is_caught(tmp_path):
    results = results_folder(tmp_path)
    path = tmp_path / "README.md"
    path.write_text(a_readme(["claims", "predictors", "scenarios", "headlines"]))
    run = [sys.executable, "-m", "coloc.cli", "readme", "--results", str(results), "--readme", str(path)]
    assert subprocess.run(run + ["--check"], capture_output=True, text=True).returncode == 1  # "old" everywhere
    assert subprocess.run(run + ["--fill"], capture_output=True, text=True).returncode == 0
    checked = subprocess.run(run + ["--check"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    path.write_text(path.read_text().replace("1.73", "1.63", 1))  # a number typed in (the scenarios' table)
    edited = subprocess.run(run + ["--check"], capture_output=True, text=True)
    assert edited.returncode == 1 and "sections ['scenarios'] differ" in edited.stderr
    assert path.read_text().count("text\n") == 4  # the prose between sections is left as it was
    out = tmp_path / "sections.md"  # writing the sections alone needs no README (the CI run's working folder has none)
    alone = [sys.executable, "-m", "coloc.cli", "readme", "--results", str(results), "--readme", str(tmp_path / "no.md"),
             "--sections-out", str(out)]
    assert subprocess.run(alone, capture_output=True, text=True).returncode == 0 and "results:claims" in out.read_text()


def test_marks_and_renderings_must_match_by_name(tmp_path):
    rendered = readme.sections(results_folder(tmp_path))
    with pytest.raises(ValueError, match=r"sections \['nosuch'\] are marked but not rendered"):
        readme.fill(a_readme(["claims", "nosuch"]), rendered)
    assert "old" in readme.fill(a_readme(["claims"]) + "old\n", rendered)  # a file may hold some sections only
    texts = {"README.md": a_readme(["claims", "headlines"]), "docs/results.md": a_readme(["claims", "predictors"])}
    assert readme.unplaced(texts, rendered) == [
        "section 'claims' is marked in ['README.md', 'docs/results.md']; expected exactly one of "
        "['README.md', 'docs/results.md']",
        "section 'scenarios' is marked in no file; expected exactly one of ['README.md', 'docs/results.md']"]
    with pytest.raises(FileNotFoundError, match="claims_brief.csv"):
        readme.sections(tmp_path / "nothing")


def test_the_readme_and_the_results_page_mark_every_section_the_run_writes_once():
    texts = {d: (REPO / d).read_text() for d in readme.DOCUMENTS}
    assert set(readme.found(texts["README.md"])) == {"claims", "headlines"}
    assert set(readme.found(texts["docs/results.md"])) == {"predictors", "scenarios"}
    assert readme.unplaced(texts, dict.fromkeys(["claims", "headlines", "predictors", "scenarios"], "")) == []


def test_the_readmes_report_command_writes_a_temporary_name_then_moves_it():
    """Snakemake writes report.html in place: a report killed mid-write would leave a 0-byte report.html. The
    README's command writes another name and moves it only when whole."""
    text = (REPO / "README.md").read_text()
    assert "snakemake --report report.tmp.html && mv report.tmp.html report.html" in text
    assert "snakemake --report report.html" not in text
