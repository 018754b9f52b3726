"""The append-only measurement log: one JSON object per line, each flushed and fsynced.

The log is the sweep's resume state: a measurement whose key is in the log is not run again.
A sweep killed while writing can leave a truncated last line; reading skips it (with a
warning) and the next append starts on a fresh line. A lock file keeps two sweeps from
writing one log at once.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

from .errors import ProfilerError


def read(path: str | Path) -> list[dict]:
    """Every complete record of the log (none when the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # the last line, without its newline: a write cut short
                warnings.warn(f"{path}:{number}: skipping a truncated last record ({exc})", RuntimeWarning,
                              stacklevel=2)
                continue
            raise ProfilerError(f"{path}:{number}: not a JSON record ({exc}); "
                                "expected one JSON object per line") from exc
        if not isinstance(record, dict) or "key" not in record:
            raise ProfilerError(f"{path}:{number}: expected a JSON object with a 'key', got {line[:80]!r}")
        records.append(record)
    return records


def append(path: str | Path, record: dict) -> dict:
    """Append one record as a line, flushed and fsynced before returning; the record as read back."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plain = _plain(record)
    line = json.dumps(plain, allow_nan=False, sort_keys=True) + "\n"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = "\n" + line  # the previous write was cut short: start a new line
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return plain


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
