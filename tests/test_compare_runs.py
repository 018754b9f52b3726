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
