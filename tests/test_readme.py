"""The README's result tables come from a run's outputs: rendering, filling, and catching a number edited by hand."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from workflow_run import planned, snakemake_command

from coloc import readme

REPO = Path(__file__).resolve().parents[1]


def results_folder(tmp_path: Path) -> Path:
    """A made-up finished run: the three files the sections are rendered from."""
    results = tmp_path / "results"
    (results / "predictors").mkdir(parents=True)
    (results / "sim").mkdir()
    pd.DataFrame([{"paper": "ISACPP", "claim": "lower makespan vs Volcano", "paper_value": "-29.6%",
                   "paper_setting": "-35% [-40, -30]", "paper_setting_verdict": "reproduced",
                   "coloc_value": "-12.5% [-20, -5]", "verdict": "same direction, smaller",
                   "decided_by": "protocol (same direction, smaller when protocol is lofo)"},
                  {"paper": "ISACPP", "claim": "lower makespan vs Liquid", "paper_value": "-34.9%",
                   "paper_setting": "n/a", "paper_setting_verdict": "not comparable",
                   "coloc_value": "n/a", "verdict": "not comparable", "decided_by": ""},
                  {"paper": "ISACPP", "claim": "scheduling delay at 100 queued jobs", "paper_value": "35.4 s",
                   "paper_setting": "0.0118 s [0.00645, 0.03]", "paper_setting_verdict": "not comparable",
                   "coloc_value": "0.0118 s [0.00645, 0.03]", "verdict": "not comparable", "decided_by": ""}]).to_csv(
        results / "claims_brief.csv", index=False)
    pd.DataFrame([{"group": "isacpp", "scenario": "isacpp-testbed", "claim": "lower makespan vs Volcano", "cell": cell,
                   "coloc_value": value, "verdict": verdict}
                  for cell, value, verdict in (("paper", -35.0, "reproduced"),
                                               ("protocol=lofo", -12.5, "same direction, smaller"))]
                 + [{"group": "isacpp", "scenario": "isacpp-testbed", "claim": "makespan vs exclusive fifo",
                     "cell": "paper", "coloc_value": 3.0, "verdict": "coloc's finding"}]).to_csv(
        results / "claims_map.csv", index=False)
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
    (results / "headlines.json").write_text('{"poisson": 0.9}\n')  # the run's config's headline: not the last point
    return results


def a_readme(names) -> str:
    return "# x\n\n" + "".join(f"{readme.MARK.format(name=n)}\nold\n{readme.END.format(name=n)}\n\ntext\n" for n in names)


def test_sections_render_the_runs_numbers(tmp_path):
    rendered = readme.sections(results_folder(tmp_path / "a"))
    assert set(rendered) == {"claims", "claims-map", "headlines", "predictors", "scenarios"}
    assert ("| ISACPP | lower makespan vs Volcano | -29.6% | -35% [-40, -30] | reproduced | -12.5% [-20, -5] | "
            "same direction, smaller | protocol (same direction, smaller when protocol is lofo) |") in rendered["claims"]
    assert "| ISACPP | lower makespan vs Liquid | -34.9% | n/a | not comparable | n/a | not comparable |  |" \
        in rendered["claims"]
    # the map: a table per group, a column per cell; coloc's own findings are left out
    assert "| claim | paper | protocol=lofo |\n|---|---|---|\n| lower makespan vs Volcano | -35% R | -12.5% S |" \
        in rendered["claims-map"] and "exclusive fifo" not in rendered["claims-map"]
    assert "| blend | 23.00 | 5.91 |" in rendered["predictors"]  # lofo, random5 columns; best first
    assert "| MAPE % on lucid | lojo |\n|---|---|\n| lgbm | 4.25 |" in rendered["predictors"]  # a table per dataset
    assert "user-a100" not in rendered["predictors"]  # the README's datasets only
    # coloc at load 1.1: 1.5 x 1.1 x mean(1, 1.1) = 1.7325 h -> 1.73
    assert "| coloc | 1.42 | 1.73 |" in rendered["scenarios"] and "(mean JCT, hours; 2 seeds; `v100:64`)" \
        in rendered["scenarios"]
    # without headlines given, the run's (headlines.json), not the last point: coloc 1.5 x 0.9 x 1.05 = 1.4175 h
    assert rendered["headlines"].splitlines()[:4] == ["| policy (mean JCT, h) | poisson (load 0.9) |", "|---|---|",
                                                      "| coloc | 1.42 |", "| fifo | 1.89 |"]
    assert readme.sections(results_folder(tmp_path / "b"), {"poisson": 1.1})["headlines"].splitlines()[2:4] == [
        "| coloc | 1.73 |", "| fifo | 2.31 |"]  # given headlines win


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
    table = readme.headlines_section(both, {"poisson": 0.9, "testbed": 1.1 * 100}).splitlines()
    assert table[0] == "| policy (mean JCT, h) | poisson (load 0.9) | testbed (interval_s 110) |"
    assert table[2:] == ["| coloc | 1.42 |  |", "| fifo | 1.89 | 2.31 |"]  # fifo at 0.9: 2 x 0.9 x 1.05
    with pytest.raises(ValueError, match=r"scenario 'poisson': headline point 2.0 not among its points \[0.9, 1.1\]"):
        readme.headlines_section(summary, {"poisson": 2.0})
    with pytest.raises(ValueError, match=r"scenario 'testbed': no headline point given "
                                         r"\(headlines for \['poisson'\]\)"):
        readme.headlines_section(both, {"poisson": 0.9})  # never a last point silently
    with pytest.raises(ValueError, match=r"--headlines 'poisson:1.1': expected SCENARIO=POINT"):
        readme.parse_headlines(["poisson:1.1"])


def test_fill_then_check_and_a_number_edited_by_hand_is_caught(tmp_path):
    results = results_folder(tmp_path)
    path = tmp_path / "README.md"
    path.write_text(a_readme(["claims", "claims-map", "predictors", "scenarios", "headlines"]))
    run = [sys.executable, "-m", "coloc.cli", "readme", "--results", str(results), "--readme", str(path)]
    assert subprocess.run(run + ["--check"], capture_output=True, text=True).returncode == 1  # "old" everywhere
    assert subprocess.run(run + ["--fill"], capture_output=True, text=True).returncode == 0
    checked = subprocess.run(run + ["--check"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    path.write_text(path.read_text().replace("1.73", "1.63", 1))  # a number typed in (the scenarios' table)
    edited = subprocess.run(run + ["--check"], capture_output=True, text=True)
    assert edited.returncode == 1 and "sections ['scenarios'] differ" in edited.stderr
    assert path.read_text().count("text\n") == 5  # the prose between sections is left as it was
    out = tmp_path / "sections.md"  # writing the sections alone needs no README (the CI run's working folder has none)
    alone = [sys.executable, "-m", "coloc.cli", "readme", "--results", str(results), "--readme", str(tmp_path / "no.md"),
             "--sections-out", str(out)]
    assert subprocess.run(alone, capture_output=True, text=True).returncode == 0 and "results:claims" in out.read_text()


def test_marks_and_renderings_must_match_by_name(tmp_path):
    rendered = readme.sections(results_folder(tmp_path))
    with pytest.raises(ValueError, match=r"sections \['nosuch'\] are marked but not rendered"):
        readme.fill(a_readme(["claims", "nosuch"]), rendered)
    assert "old" in readme.fill(a_readme(["claims"]) + "old\n", rendered)  # a file may hold some sections only
    texts = {"README.md": a_readme(["claims", "headlines"]),
             "docs/results.md": a_readme(["claims", "claims-map", "predictors"])}
    assert readme.unplaced(texts, rendered) == [
        "section 'claims' is marked in ['README.md', 'docs/results.md']; expected exactly one of "
        "['README.md', 'docs/results.md']",
        "section 'scenarios' is marked in no file; expected exactly one of ['README.md', 'docs/results.md']"]
    with pytest.raises(FileNotFoundError, match="claims_brief.csv"):
        readme.sections(tmp_path / "nothing")


def test_the_readme_and_the_results_page_mark_every_section_the_run_writes_once():
    texts = {d: (REPO / d).read_text() for d in readme.DOCUMENTS}
    assert set(readme.found(texts["README.md"])) == {"claims", "headlines"}
    assert set(readme.found(texts["docs/results.md"])) == {"claims-map", "predictors", "scenarios"}
    assert readme.unplaced(texts, dict.fromkeys(["claims", "headlines", "predictors", "scenarios"], "")) == []


def test_the_readmes_report_command_writes_a_temporary_name_then_moves_it():
    """Snakemake writes report.html in place: a report killed mid-write would leave a 0-byte report.html. The
    README's command writes another name and moves it only when whole."""
    text = (REPO / "README.md").read_text()
    assert "snakemake --report report.tmp.html && mv report.tmp.html report.html" in text
    assert "snakemake --report report.html" not in text


def readme_command(results: Path, path: Path, *args) -> list[str]:
    return [sys.executable, "-m", "coloc.cli", "readme", "--results", str(results), "--readme", str(path), *args]


def test_without_headlines_the_command_reads_the_runs_and_refuses_a_run_that_recorded_none(tmp_path):
    """`coloc readme --fill` / `--check` without --headlines read each scenario's last point: the README's headline
    table was rewritten at the wrong point and a correct README was called different. They read the run's now."""
    results = results_folder(tmp_path)
    path = tmp_path / "README.md"
    path.write_text(a_readme(["claims", "claims-map", "predictors", "scenarios", "headlines"]))
    recorded = tmp_path / "recorded.json"  # what the readme rule does: the config's headlines given and recorded
    made = subprocess.run(readme_command(results, path, "--fill", "--headlines", "poisson=0.9", "--headlines-out",
                                         str(recorded)), capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert json.loads(recorded.read_text()) == {"poisson": 0.9}
    assert "| poisson (load 0.9) |" in path.read_text() and "| coloc | 1.42 |" in path.read_text()
    checked = subprocess.run(readme_command(results, path, "--check"), capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr  # the documented command, no options: the run's headlines
    (results / "headlines.json").unlink()
    refused = subprocess.run(readme_command(results, path, "--check"), capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.startswith(
        f"coloc readme: {results / 'headlines.json'} missing: the headline point of each scenario is the run's "
        f"config's; the workflow's readme rule records them there"), refused.stderr


def test_check_leaves_the_wall_clock_scheduling_delay_out_and_says_so(tmp_path):
    """The scheduling delay is wall-clock time: a run on another machine writes another value, and --check called
    the README different. It compares every other cell."""
    results = results_folder(tmp_path)
    path = tmp_path / "README.md"
    path.write_text(a_readme(["claims", "claims-map", "predictors", "scenarios", "headlines"]))
    assert subprocess.run(readme_command(results, path, "--fill"), capture_output=True, text=True).returncode == 0
    filled = path.read_text()
    other_machine = filled.replace("| 0.0118 s [0.00645, 0.03] |", "| 0.0231 s [0.011, 0.035] |")
    assert other_machine != filled
    path.write_text(other_machine)
    checked = subprocess.run(readme_command(results, path, "--check"), capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "(wall-clock values not compared: scheduling delay at 100 queued jobs)" in checked.stdout
    path.write_text(other_machine.replace("| 35.4 s |", "| 35.5 s |"))  # the paper's value beside it is checked
    assert subprocess.run(readme_command(results, path, "--check"), capture_output=True, text=True).returncode == 1
    path.write_text(filled.replace("| -12.5% [-20, -5] |", "| -12.6% [-20, -5] |"))  # and every other claim
    edited = subprocess.run(readme_command(results, path, "--check"), capture_output=True, text=True)
    assert edited.returncode == 1 and "sections ['claims'] differ" in edited.stderr
    assert readme.wall_clock_claims() == {"scheduling delay at 100 queued jobs"}


def test_the_readme_states_what_check_leaves_out():
    text = (REPO / "README.md").read_text()
    assert "`coloc readme --check` compares every number of these tables but the scheduling delay" in text


def test_concurrent_fills_each_write_a_whole_readme(tmp_path):
    """Two `coloc readme --fill` at once failed one in four with README.md.partial missing: they shared one
    temporary name. Four processes fill the same README 15 times each at once: every fill exits 0, the README is
    whole, its mode kept and no temporary file is left."""
    results = results_folder(tmp_path)
    path = tmp_path / "README.md"
    path.write_text(a_readme(["claims", "claims-map", "predictors", "scenarios", "headlines"]))
    path.chmod(0o644)
    env = dict(os.environ, PYTHONPATH=str(REPO / "lib"))
    script = ("import sys, time\nfrom coloc import readme\ntime.sleep(max(0.0, float(sys.argv[1]) - time.time()))\n"
              "sys.exit(max(readme.main(sys.argv[2:]) for _ in range(15)))\n")
    start = time.time() + 4.0  # every process imported, then all fill at once
    processes = [subprocess.Popen([sys.executable, "-c", script, str(start), "--results", str(results), "--readme",
                                   str(path), "--fill"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(4)]
    outcomes = [(p.wait(timeout=300), p.stderr.read()) for p in processes]
    assert [code for code, _ in outcomes] == [0] * 4, outcomes
    assert subprocess.run(readme_command(results, path, "--check"), capture_output=True, text=True).returncode == 0
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "results"]


def test_the_readme_rules_params_do_not_hold_the_clones_location(tmp_path):
    """A clone moved with its run reran the readme rule: its params held the documents' absolute paths. They are
    relative to the run's working directory now: a dry run in a copy of the tree plans the same command."""
    clone = tmp_path / "moved" / "coloc"
    for name in ("Snakefile", "environment.yml", "README.md"):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, clone / name)
    for part in ("workflow", "config", "notebooks", "lib", "docs"):
        shutil.copytree(REPO / part, clone / part)
    command = [*snakemake_command("-n", "-p", "results/readme.md")]
    command[command.index(str(REPO / "Snakefile"))] = str(clone / "Snakefile")
    env = dict(os.environ, PYTHONPATH=str(clone / "lib"))
    env.pop("COLOC_DATA_MIRROR", None)
    done = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shell, = [job["shell"] for job in planned(done.stdout) if job["rule"] == "readme"]
    assert " --readme README.md docs/results.md --headlines " in shell, shell
    assert str(tmp_path) not in shell and str(REPO) not in shell
