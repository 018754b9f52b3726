"""A growable Fenwick tree (binary indexed tree) of integer counts: prefix sums and search in O(log n)."""
from __future__ import annotations


class Fenwick:
    """Counts at positions 0, 1, 2, ...; the capacity doubles when a position beyond it is added."""

    def __init__(self, capacity: int = 1024):
        self._size = 1 << max(1, (capacity - 1).bit_length())
        self._tree = [0] * (self._size + 1)
        self.total = 0

    def add(self, position: int, delta: int) -> None:
        """Count `delta` more at `position` (>= 0)."""
        if position >= self._size:
            self._grow(position)
        i, tree, size = position + 1, self._tree, self._size
        while i <= size:
            tree[i] += delta
            i += i & -i
        self.total += delta

    def before(self, position: int) -> int:
        """Sum of the counts at positions < `position`."""
        i, tree, total = min(position, self._size), self._tree, 0
        while i > 0:
            total += tree[i]
            i &= i - 1
        return total

    def first_above(self, target: int) -> int | None:
        """The least position p whose counts at positions <= p sum to more than `target`; None if none does."""
        if self.total <= target:
            return None
        tree, at, step = self._tree, 0, self._size
        while step:
            nxt = at + step
            if tree[nxt] <= target:  # (nxt <= size always: size is a power of two)
                target -= tree[nxt]
                at = nxt
            step >>= 1
        return at  # position at (0-based) is the one at which the sum first exceeds the target

    def _grow(self, position: int) -> None:
        size, tree = self._size, self._tree
        for i in range(size, 0, -1):  # each node gives its sum back to its parent: the counts themselves
            parent = i + (i & -i)
            if parent <= size:
                tree[parent] -= tree[i]
        while size <= position:
            size *= 2
        tree.extend([0] * (size - self._size))
        for i in range(1, size + 1):  # linear build: each node passes its sum to its parent
            parent = i + (i & -i)
            if parent <= size:
                tree[parent] += tree[i]
        self._size = size
