"""The measurement log survives a crash at any byte (Hypothesis): a small log of sweep records,
written with the journal API, cut at a random byte, then resumed twice the way a sweep resumes
(under the lock: recover, then append one record). The log must stay readable, keep every record
that was complete before the cut, and keep the cut bytes in ``<log>.torn``."""

import tempfile
import warnings
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings, strategies as st

from coloc.profiler import journal

DEVICE = "cpu:Intel(R) Xeon(R) Processor x2"
SETTINGS_RAN = {"batch_size": None, "cpus": [0, 1], "device": DEVICE, "faults": [], "min_iters": 2, "mps": False,
                "omp_wait_policy": "PASSIVE", "reduced": False, "sample_interval_s": 0.2, "seed": 0, "threads": 2,
                "timeout_s": 120, "torch_device": "cpu", "warmup_iters": 1, "warmup_s": 0.5, "window_s": 3.0}


def sweep_record(workloads, repeat, throughputs, outcome="ok", error=None):
    """A record as coloc.profiler.measure writes it (fields and sizes of a real CPU measurement)."""
    jobs = [{"slot": slot, "workload": w, "pid": 5153 + slot} for slot, w in enumerate(workloads)]
    if outcome == "ok":
        for job, tput in zip(jobs, throughputs, strict=True):
            job.update(cpu_s=3.56, cpu_util=59.1, elapsed_s=3.01, iterations=round(3.01 * tput),
                       max_rss_bytes=548147200, rss_bytes=519454720.0, throughput=tput, warmup_iters=6,
                       warmup_s=0.56, window_end=218.54, window_start=215.53)
    return {"key": f"{DEVICE}|{'+'.join(workloads)}|r{repeat}|4c340cc13777", "version": 3, "device": DEVICE,
            "device_kind": "cpu", "workloads": list(workloads), "kind": "solo" if len(workloads) == 1 else "pair",
            "repeat": repeat, "outcome": outcome, "feasible": {"ok": True, "out_of_memory": False}.get(outcome),
            "error": error, "failed_workload": None if outcome == "ok" else workloads[0],
            "failed_phase": None if outcome == "ok" else "window", "jobs": jobs,
            "device_metrics": {"cpu_busy_pct": 78.77, "other_cpu_pct": 19.95} if outcome == "ok" else {},
            "window_overlap": 1.0 if outcome == "ok" else None, "settings": SETTINGS_RAN, "host": "vm",
            "started_utc": "2026-12-01T14:40:51+00:00", "wall_s": 3.671,
            "timeline_s": {"end": 3.671, "ready": 0.082, "windows_done": 3.659}}


def written_log() -> tuple[bytes, list[dict]]:
    """The bytes of a three-record log written by journal.append, and the records as read back."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "measurements.jsonl"
        records = [journal.append(path, sweep_record(["lm-wikitext2-b5"], 0, [10.62])),
                   journal.append(path, sweep_record(["lm-wikitext2-b5", "recommendation-ml20m-b512"], 0,
                                                     [7.28, 1.56])),
                   journal.append(path, sweep_record(["recommendation-ml20m-b512"], 0, [], "timeout",
                                                     "timeout: recommendation-ml20m-b512 did not finish its window "
                                                     "within 120 s"))]
        return path.read_bytes(), records


LOG, RECORDS = written_log()
NEWLINES = [i for i, byte in enumerate(LOG) if byte == ord("\n")]  # where each record's line ends
AROUND_NEWLINES = sorted({max(0, n + d) for n in NEWLINES for d in (-1, 0, 1)} - {len(LOG) + 1})


def resume(path: Path, record: dict) -> dict:
    """What a sweep does on a log: take the lock, recover it, append a measurement."""
    with journal.locked(path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "cut a torn last line": said, and tested elsewhere
            journal.recover(path)
        return journal.append(path, record)


def at_every_line_end(test):
    """Besides the random cuts: the first and last byte, and either side of every newline."""
    for position in AROUND_NEWLINES + [0, len(LOG)]:
        test = example(cut=position)(test)
    return test


@at_every_line_end
@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(LOG)))
def test_a_log_cut_at_any_byte_and_resumed_twice_stays_readable_and_loses_no_complete_record(tmp_path, cut):
    # a record is complete once its line is there; only its newline may be missing
    complete = [record for record, newline in zip(RECORDS, NEWLINES, strict=True) if cut >= newline]
    end = NEWLINES[len(complete) - 1] + 1 if complete else 0
    torn = LOG[end:cut]  # the bytes of a record cut short (empty when the cut is at a line's end)
    new = [sweep_record(["squeezenet-cifar10-b32"], r, [6.76]) for r in (0, 1)]
    path, torn_path = tmp_path / "measurements.jsonl", tmp_path / "measurements.jsonl.torn"
    torn_path.unlink(missing_ok=True)  # the folder is the test's, shared by its examples
    path.write_bytes(LOG[:cut])
    appended = [resume(path, new[0]), resume(path, new[1])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn line left to skip
        assert journal.read(path) == complete + appended
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == len(complete) + 2
    if torn:
        assert torn_path.read_bytes() == torn + b"\n"  # what was cut away is kept
    else:
        assert not torn_path.exists()
