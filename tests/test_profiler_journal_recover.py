"""The measurement log by hand: a torn last line cut and kept aside, crash debris, a damaged middle refused, the
lock."""
import warnings

import numpy as np
import pytest

from coloc.profiler import journal
from coloc.profiler.errors import ProfilerError


def test_log_resumed_twice_after_a_torn_last_line_stays_readable_and_keeps_the_torn_bytes(tmp_path):
    log = tmp_path / "m.jsonl"
    assert journal.read(log) == [] and journal.recover(log) == []
    journal.append(log, {"key": "a", "x": float("nan"), "y": np.float64(2.5)})
    with open(log, "a") as fh:
        fh.write('{"key": "b", "x"')  # a write cut short by a kill
    with pytest.warns(RuntimeWarning, match=r"m.jsonl:2: skipping a torn last line"):
        assert journal.read(log) == [{"key": "a", "x": None, "y": 2.5}]  # a reader changes nothing
    with pytest.raises(ProfilerError, match="ends with an incomplete line"):
        journal.append(log, {"key": "c"})  # never after half a line
    with journal.locked(log):  # a first resume, as a sweep does it ...
        with pytest.warns(RuntimeWarning, match=r"m.jsonl:2: cut a torn last line \(16 bytes"):
            assert journal.recover(log) == [{"key": "a", "x": None, "y": 2.5}]
        journal.append(log, {"key": "c"})
    with journal.locked(log), warnings.catch_warnings():  # ... and a second one: nothing left to cut
        warnings.simplefilter("error")
        assert [r["key"] for r in journal.recover(log)] == ["a", "c"]
        journal.append(log, {"key": "d"})
        assert [r["key"] for r in journal.read(log)] == ["a", "c", "d"]
    assert (tmp_path / "m.jsonl.torn").read_text() == '{"key": "b", "x"\n'


def test_log_recover_cuts_crash_debris_completes_a_record_missing_its_newline_and_refuses_a_damaged_middle(tmp_path):
    log = tmp_path / "m.jsonl"
    journal.append(log, {"key": "a"})
    log.write_bytes(log.read_bytes() + b"\0" * 7)  # a crash can leave zeros where a write was under way
    with pytest.warns(RuntimeWarning, match="cut a torn last line"):
        assert journal.recover(log) == [{"key": "a"}]
    assert log.read_bytes() == b'{"key": "a"}\n'
    log.write_bytes(log.read_bytes() + b'{"key": "b"}')  # complete but for its newline: kept
    assert journal.recover(log) == [{"key": "a"}, {"key": "b"}] and log.read_bytes().endswith(b'"b"}\n')
    log.write_bytes(b'{"key": "a"}\n{"key": "b", "x\n{"key": "c"}\n')  # a torn line that older code appended after
    for reader in (journal.read, journal.recover):
        with pytest.raises(ProfilerError, match=r"m.jsonl:2: not a JSON record .* Only the last line can be cut"):
            reader(log)
    log.write_bytes(b'{"key": "a"}\n[1, 2]\n{"key": "c"}\n')
    with pytest.raises(ProfilerError, match=r"m.jsonl:2: expected a JSON object with a 'key'"):
        journal.recover(log)


def test_log_lock_stops_a_second_sweep_on_the_same_log(tmp_path):
    log = tmp_path / "m.jsonl"
    with journal.locked(log):
        with pytest.raises(ProfilerError, match="another sweep is writing this log"):
            with journal.locked(log):
                pass
    with journal.locked(log):
        pass
