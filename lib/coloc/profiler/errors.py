"""The profiler's error type."""


class ProfilerError(RuntimeError):
    """A profiling request that cannot be met; the message says what was tried and what was expected."""
