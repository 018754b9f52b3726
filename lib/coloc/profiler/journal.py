"""The append-only measurement log: one JSON object per line, and a log that survives a crash at any byte.

The log is the sweep's resume state: a measurement whose record is in the log is not run again
(see :mod:`coloc.profiler.outcome` for which records a rerun keeps).

* :func:`append` writes each record as one complete line in a single write, then fsyncs; a
  write that fails part way is taken back, so a live sweep never leaves half a line.
* A crash (kill, power loss) during that write can still leave a torn last line: a line
  without its newline, or bytes that are not a JSON record. :func:`recover`, which a sweep
  calls under the lock before it appends, cuts such a last line back to the last complete
  record and keeps the cut bytes in ``<log>.torn``; a record that lacks only its newline is
  complete and gets it. So every later append starts on a line of its own.
* :func:`read` (for readers) skips a torn last line with a warning and changes nothing.
* A damaged line that is not the last is not a crash's trace: it is an error naming file and line.

A lock file keeps two sweeps from writing one log at once.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import ProfilerError


@dataclass
class _Parsed:
    records: list[dict]
    end: int                # bytes of the complete records (each with its newline, blank lines included)
    torn: bytes = b""       # a torn last line (and the blank lines around it): not a record
    torn_line: int = 0      # its line number
    needs_newline: bool = False  # the last record is complete but for its newline


def read(path: str | Path) -> list[dict]:
    """Every complete record of the log (none when the file does not exist); a torn last line is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    parsed = _parse(path, path.read_bytes())
    if parsed.torn:
        warnings.warn(f"{path}:{parsed.torn_line}: skipping a torn last line ({len(parsed.torn)} bytes, a write "
                      "cut short); the next sweep on this log cuts it", RuntimeWarning, stacklevel=2)
    return parsed.records


def recover(path: str | Path) -> list[dict]:
    """Every complete record of the log, after cutting a torn last line (its bytes appended to
    ``<log>.torn``) and completing a last record that lacks only its newline. Call it under
    :func:`locked`, before appending."""
    path = Path(path)
    if not path.exists():
        return []
    parsed = _parse(path, path.read_bytes())
    if parsed.torn:
        torn_path = Path(f"{path}.torn")
        with open(torn_path, "ab") as fh:
            fh.write(parsed.torn + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        _truncate(path, parsed.end)
        warnings.warn(f"{path}:{parsed.torn_line}: cut a torn last line ({len(parsed.torn)} bytes, a write cut "
                      f"short), kept in {torn_path}; the {len(parsed.records)} complete records stay",
                      RuntimeWarning, stacklevel=2)
    elif parsed.needs_newline:
        _write_all(path, b"\n")
    return parsed.records


def append(path: str | Path, record: dict) -> dict:
    """Append one record as a line in a single write, fsynced before returning; the record as read back.

    The log must end with a complete line (:func:`recover` sees to that); a write that fails
    part way is cut back, so the log still ends with a complete record.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plain = _plain(record)
    if "key" not in plain:
        raise ProfilerError(f"{path}: a record needs a 'key', got keys {sorted(plain)}")
    line = (json.dumps(plain, allow_nan=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            raise ProfilerError(f"{path}: the log ends with an incomplete line (a write cut short); "
                                "coloc.profiler.journal.recover(path) cuts it before appending")
        written = 0
        try:
            written = os.write(fd, line)
        finally:
            if written != len(line):
                os.ftruncate(fd, size)  # take back half a line: the log ends on its last complete record
        if written != len(line):
            raise ProfilerError(f"{path}: wrote {written} of the {len(line)} bytes of record {plain['key']!r} "
                                "(disk full?); the log is as it was before")
        os.fsync(fd)
    finally:
        os.close(fd)
    return plain


def _parse(path: Path, data: bytes) -> _Parsed:
    """The records of ``data``; only the last non-blank line may be torn, a bad line before it is an error."""
    lines = data.split(b"\n")  # the last item: the bytes after the last newline (b"" when the file ends with one)
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    records, end = [], 0
    for index, raw in enumerate(lines):
        complete = index < len(lines) - 1  # followed by its newline
        if not raw.strip():
            if complete:
                end += len(raw) + 1
            continue
        record, problem = _decode(raw)
        if problem is None:
            records.append(record)
            end += len(raw) + complete
            if not complete:
                return _Parsed(records, end, needs_newline=True)
            continue
        if index == last:
            return _Parsed(records, end, torn=data[end:], torn_line=index + 1)
        raise ProfilerError(f"{path}:{index + 1}: {problem}; expected one JSON object with a 'key' per line. "
                            "Only the last line can be cut short by a crash; a damaged line before others (e.g. "
                            "left by coloc before version 3 of the log) must be moved out by hand, e.g. to "
                            f"{path}.torn")
    if end < len(data):  # blanks after the last newline
        return _Parsed(records, end, torn=data[end:], torn_line=len(lines))
    return _Parsed(records, end)


def _decode(raw: bytes) -> tuple[dict | None, str | None]:
    """The record of one line, or what is wrong with it."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"not a JSON record ({exc})"
    if not isinstance(record, dict) or "key" not in record:
        return None, f"expected a JSON object with a 'key', got {raw[:80]!r}"
    return record, None


def _truncate(path: Path, size: int) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        if os.write(fd, data) != len(data):
            raise ProfilerError(f"{path}: could not append {len(data)} bytes")
        os.fsync(fd)
    finally:
        os.close(fd)


def _plain(value):
    """JSON-safe copy: NaN and infinities become null, numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@contextmanager
def locked(path: str | Path):
    """Hold an exclusive lock on ``<log>.lock`` for the block; a second sweep on the log fails fast."""
    lock_path = Path(f"{path}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise ProfilerError(f"{path}: another sweep is writing this log (lock {lock_path} is held)") from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
