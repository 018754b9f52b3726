"""scripts/gpu_dataset.py, the GPU machine's measurement run, exercised on the CPU through the same code."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from coloc import datasets

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_dataset.py"
TYPES = ["resnet18-cifar10-b16", "squeezenet-cifar10-b32"]


def run_script(out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(out), "--workloads", *TYPES,
               "--repeats", "1", "--warmup-s", "0.1", "--window-s", "0.3", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)


@pytest.mark.slow
def test_writes_tables_and_provenance_then_resumes_without_measuring_again(tmp_path):
    run_script(tmp_path)
    solo, pairs = pd.read_parquet(tmp_path / "solo.parquet"), pd.read_parquet(tmp_path / "pairs.parquet")
    assert sorted(solo["workload"]) == TYPES and (solo["throughput"] > 0).all()
    # every pair, the self-pairs included, with both jobs' normalized throughput
    assert len(pairs) == 3 and pairs[["norm_a", "norm_b"]].notna().all().all()
    assert pd.read_csv(tmp_path / "pairs.csv")["workload_a"].tolist() == pairs["workload_a"].tolist()
    # the CSV tables are a user data source of the pipeline as they are (config datasets.user); a CPU measured on a
    # loaded machine can time a co-located job above 1.5x its solo speed, which the loader refuses by row and column
    if (pairs[["norm_a", "norm_b"]] <= 1.5).all().all():
        user_solo, user_pairs = datasets.load_user(tmp_path / "pairs.csv", tmp_path / "solo.csv")
        assert len(user_pairs) == 3 and sorted(user_solo["workload"]) == TYPES
    else:
        with pytest.raises(datasets.DataError, match=r"pairs.csv: row \d+ .*expected a normalized throughput in"):
            datasets.load_user(tmp_path / "pairs.csv", tmp_path / "solo.csv")
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    assert provenance["device"] == solo["device"].iloc[0] and provenance["torch"].startswith("2.13.0")
    assert provenance["rounds_done"] == 1 and provenance["measurements_planned"] == 5
    assert provenance["settings"]["window_s"] == 0.3 and provenance["workloads"] == TYPES

    log = (tmp_path / "measurements.jsonl").read_text().splitlines()
    assert len(log) == 5
    run_script(tmp_path)  # the log holds every measurement: nothing is measured again
    assert (tmp_path / "measurements.jsonl").read_text().splitlines() == log


def test_an_unknown_job_type_stops_before_measuring(tmp_path):
    with pytest.raises(subprocess.CalledProcessError) as failed:
        subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(tmp_path),
                        "--workloads", "resnet18-cifar10-b16", "no-such-model"], capture_output=True, text=True,
                       timeout=120, check=True)
    assert "no-such-model" in failed.value.stderr and "coloc.workloads.names()" in failed.value.stderr
    assert not (tmp_path / "measurements.jsonl").exists()
