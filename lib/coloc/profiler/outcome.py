"""What happened to a measurement, and whether a rerun takes its logged record or measures it again.

Every record of the log has an ``outcome``:

* ``ok``: measured; ``feasible`` True.
* ``out_of_memory``: a job could not allocate what it needs (the device's or torch's
  out-of-memory error): the set does not fit; ``feasible`` False. The only infeasible outcome.
* ``timeout``: a job did not finish within ``timeout_s``; ``feasible`` null (unknown).
* ``error``: any other failure (an exception, a worker that died, e.g. by a signal); ``feasible`` null.

A rerun keeps ``ok`` and ``out_of_memory`` records (facts about the set under the settings in
the record's key), keeps a ``timeout`` only while ``timeout_s`` is not longer than the one it
ran under (``settings.timeout_s`` in the record), and measures every ``error`` again.

Records of older logs (version 2 and before) have no ``outcome``: it is read from ``feasible``
and ``error``: feasible -> ok; an error starting ``timeout:`` -> timeout; an out-of-memory
error of torch or Python (see :func:`of_error`) -> out_of_memory; anything else -> error.
A worker killed by SIGKILL is an error, not out of memory: the kernel's OOM killer is one
cause among others, and a rerun finds out.
"""

from __future__ import annotations

from .errors import ProfilerError

OK, OUT_OF_MEMORY, TIMEOUT, ERROR = "ok", "out_of_memory", "timeout", "error"
OUTCOMES = (OK, OUT_OF_MEMORY, TIMEOUT, ERROR)

_OOM_TYPES = ("OutOfMemoryError", "MemoryError")  # torch.OutOfMemoryError (CUDA), Python's MemoryError
_OOM_TEXT = ("out of memory", "can't allocate memory", "alloc_failed")  # torch's CPU allocator, cuBLAS, older CUDA


def of_error(message: str) -> str:
    """``out_of_memory`` for a worker's error report ``"<ExceptionType>: <text>"`` that says so, else ``error``."""
    name, _, text = message.partition(": ")
    if name.endswith(_OOM_TYPES):
        return OUT_OF_MEMORY
    if name.endswith("Error") and any(marker in text.lower() for marker in _OOM_TEXT):
        return OUT_OF_MEMORY
    return ERROR


def of(record: dict) -> str:
    """The record's outcome; for a record without one (an older log), read from ``feasible`` and ``error``."""
    if "outcome" in record:
        if record["outcome"] not in OUTCOMES:
            raise ProfilerError(f"measurement record {record.get('key', '?')!r}: outcome {record['outcome']!r}; "
                                f"expected one of {OUTCOMES}")
        return record["outcome"]
    if record.get("feasible"):
        return OK
    error = record.get("error") or ""
    return TIMEOUT if error.startswith("timeout:") else of_error(error)


def feasible(outcome: str) -> bool | None:
    """True: it ran; False: it did not fit; None: unknown (it failed for another reason)."""
    return {OK: True, OUT_OF_MEMORY: False}.get(outcome)


def reusable(record: dict, timeout_s: float) -> bool:
    """Whether a sweep with this ``timeout_s`` takes the logged record instead of measuring again."""
    outcome = of(record)
    if outcome == TIMEOUT:
        ran_under = (record.get("settings") or {}).get("timeout_s")
        return ran_under is not None and timeout_s <= ran_under
    return outcome in (OK, OUT_OF_MEMORY)
