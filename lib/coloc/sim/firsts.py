"""A device type's groups of shareable GPUs ordered by their first finish: the least key of each group's order.

Each GpuGroup (coloc.sim.cluster) orders its one-job GPUs by the time the resident would finish alone. A search
that bounds what a GPU costs by its resident's remaining time (coloc's test of whether an offer can pay against
its wait) needs only the groups whose earliest finish is near: `GroupsByFirst` keeps (first key, group number)
for every group with an ordered GPU, sorted, so one bound covers every group after a place in the list. The
groups tell it when their first key changes (a GPU ordered before the first, the first taken out), which of
them hold GPUs not yet ordered (`pending`: their residents were placed in this round, or a co-runner left),
and the greatest key ever ordered (`latest`), which bounds every ordered resident's finish time.
Keeping it costs a bisection in a list as long as the device's groups per change of a first key.
"""
from __future__ import annotations

import bisect
import math


class GroupsByFirst:
    """The groups of one device type by first key. Read only outside coloc.sim.cluster: `entries` (sorted
    (first key, group number)), `groups` (a group by its number), `pending` (numbers of the groups holding GPUs
    outside their order), `latest` (no ordered key is greater)."""

    __slots__ = ("entries", "groups", "pending", "latest")

    def __init__(self):
        self.entries: list[tuple[float, int]] = []
        self.groups: list = []
        self.pending: set[int] = set()
        self.latest = -math.inf

    def register(self, group) -> int:
        """A new group's number (groups are never deleted: the numbers stay)."""
        self.groups.append(group)
        return len(self.groups) - 1

    def moved(self, number: int, old: float | None, new: float | None) -> None:
        """Group `number`'s first key went from `old` to `new` (None: no ordered GPU)."""
        entries = self.entries
        if old is not None:
            del entries[bisect.bisect_left(entries, (old, number))]
        if new is not None:
            bisect.insort(entries, (new, number))

    def ordered(self, key: float) -> None:
        """A key entered a group's order."""
        if key > self.latest:
            self.latest = key
