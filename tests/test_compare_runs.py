"""scripts/compare_runs.py: two runs' outputs compared file by file."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_runs.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def make(root: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    return root


def test_equal_runs_agree_and_a_changed_byte_or_a_missing_file_is_named(tmp_path):
    same = {"results/a.csv": b"x,1\n", "figures/f.png": b"\x89PNG", "README.md": b"# r\n",
            "data/processed/s.parquet": b"PAR1"}
    a = make(tmp_path / "a", same)
    b = make(tmp_path / "b", same)
    agreed = run(a, b)
    assert agreed.returncode == 0 and "3 files compared" in agreed.stdout and "byte-identical" in agreed.stdout
    make(b, {"results/a.csv": b"x,2\n", "data/processed/t.parquet": b"PAR1", "README.md": b"# other\n"})
    differed = run(a, b)
    assert differed.returncode == 1
    assert differed.stdout.splitlines()[1:] == ["only in the second run: data/processed/t.parquet",
                                                 "differs: results/a.csv"]


def test_wall_clock_outputs_are_left_out_only_when_asked(tmp_path):
    a = make(tmp_path / "a", {"results/sim/scheduling_delay.parquet": b"1"})
    b = make(tmp_path / "b", {"results/sim/scheduling_delay.parquet": b"2"})
    assert run(a, b).returncode == 1
    allowed = run(a, b, "--allow-wall-clock")
    assert allowed.returncode == 0 and "results/sim/scheduling_delay.parquet left out: wall-clock" in allowed.stdout


def test_a_folder_without_outputs_is_refused_by_name(tmp_path):
    make(tmp_path / "a", {"results/a.csv": b"1"})
    (tmp_path / "empty").mkdir()
    refused = run(tmp_path / "a", tmp_path / "empty")
    assert refused.returncode == 2 and "empty: no run outputs here" in refused.stderr


def test_a_table_that_differs_only_in_its_wall_clock_columns_agrees_only_when_asked(tmp_path):
    import pandas as pd

    summary = pd.DataFrame({"policy": ["coloc", "fifo"], "jct_mean": [1.5, 2.0], "sim_wall_s": [0.3, 0.4]})
    for name, wall in (("a", 0.3), ("b", 0.9)):
        (tmp_path / name / "results" / "notebooks").mkdir(parents=True)
        summary.assign(sim_wall_s=[wall, 0.4]).to_parquet(tmp_path / name / "results" / "summary.parquet")
        (tmp_path / name / "results" / "notebooks" / "log.ipynb").write_text(name)  # a rule's log: never compared
    assert run(tmp_path / "a", tmp_path / "b").stdout.splitlines()[1:] == ["differs: results/summary.parquet"]
    allowed = run(tmp_path / "a", tmp_path / "b", "--allow-wall-clock")
    assert allowed.returncode == 0
    assert "equal but for wall-clock values: results/summary.parquet" in allowed.stdout
    summary.assign(jct_mean=[1.5, 2.5]).to_parquet(tmp_path / "b" / "results" / "summary.parquet")
    assert run(tmp_path / "a", tmp_path / "b", "--allow-wall-clock").returncode == 1


def test_a_figure_that_differs_is_named_with_or_without_the_wall_clock_rule(tmp_path):
    a = make(tmp_path / "a", {"figures/f.png": b"\x89PNG\r\n\x1a\n1"})
    b = make(tmp_path / "b", {"figures/f.png": b"\x89PNG\r\n\x1a\n2"})
    for flags in ((), ("--allow-wall-clock",)):
        compared = run(a, b, *flags)
        assert (compared.returncode, compared.stdout.splitlines()[-1]) == (1, "differs: figures/f.png")


def test_the_scheduling_delay_claim_row_is_left_out_of_text_and_tables_only_when_asked(tmp_path):
    rows = {"a": "| ISACPP | scheduling delay at 100 queued jobs | 0.0074 s |", "b": "| ISACPP | scheduling delay at "
            "100 queued jobs | 0.0071 s |"}
    for name, row in rows.items():
        make(tmp_path / name, {"results/readme.md": f"| claim |\n{row}\n| ok |\n".encode(),
                               "results/claims.csv": f"claim,value\nscheduling delay at 100,{row[-9:]}\nx,1\n".encode()})
    assert run(tmp_path / "a", tmp_path / "b").returncode == 1
    allowed = run(tmp_path / "a", tmp_path / "b", "--allow-wall-clock")
    assert allowed.returncode == 0 and allowed.stdout.count("equal but for wall-clock values") == 2
    make(tmp_path / "b", {"results/readme.md": f"| claim |\n{rows['b']}\n| changed |\n".encode()})
    assert run(tmp_path / "a", tmp_path / "b", "--allow-wall-clock").stdout.splitlines()[-1] == \
        "differs: results/readme.md"
