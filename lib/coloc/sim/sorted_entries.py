"""A sorted list kept in chunks, so that inserting or removing anywhere costs O(log n + chunk) and not O(n).

One plain sorted list moves every later item on each insert or removal: at load above 1 the queue grows to
tens of thousands of jobs and removing its head (FIFO order) moves them all, each time. Here the items sit in
sorted chunks of at most 2 x CHUNK items, with each chunk's last item kept in `_lasts` to find the chunk by
bisection; a chunk that grows past 2 x CHUNK is split, an empty one dropped.
"""
from __future__ import annotations

import bisect
from itertools import chain

CHUNK = 512


class SortedEntries:
    """Distinct, comparable items in sorted order: insert, remove, first, first after an item, iterate."""

    __slots__ = ("_chunks", "_lasts", "_len")

    def __init__(self):
        self._chunks: list[list] = []
        self._lasts: list = []   # each chunk's last (largest) item
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self):
        return chain.from_iterable(self._chunks)

    def insert(self, item) -> None:
        chunks, lasts = self._chunks, self._lasts
        if not chunks:
            chunks.append([item])
            lasts.append(item)
        else:
            at = min(bisect.bisect_left(lasts, item), len(chunks) - 1)  # past every last: into the last chunk
            chunk = chunks[at]
            bisect.insort(chunk, item)
            lasts[at] = chunk[-1]
            if len(chunk) > 2 * CHUNK:
                chunks.insert(at + 1, chunk[CHUNK:])
                del chunk[CHUNK:]
                lasts.insert(at, chunk[-1])
        self._len += 1

    def remove(self, item) -> None:
        """Take out `item`; KeyError if it is not here."""
        lasts = self._lasts
        at = bisect.bisect_left(lasts, item)
        chunk = self._chunks[at] if at < len(lasts) else ()
        i = bisect.bisect_left(chunk, item)
        if i == len(chunk) or chunk[i] != item:
            raise KeyError(item)
        del chunk[i]
        if chunk:
            lasts[at] = chunk[-1]
        else:
            del self._chunks[at], lasts[at]
        self._len -= 1

    def first(self):
        """The least item; None when empty."""
        return self._chunks[0][0] if self._chunks else None

    def head(self, k: int) -> list:
        """The `k` least items (all if fewer), in order."""
        items: list = []
        for chunk in self._chunks:
            if len(items) + len(chunk) >= k:
                items += chunk[:k - len(items)]
                break
            items += chunk
        return items

    def first_after(self, item):
        """The least item greater than `item` (None: the least of all); None if there is none."""
        if item is None:
            return self.first()
        at = bisect.bisect_right(self._lasts, item)
        if at == len(self._lasts):
            return None
        chunk = self._chunks[at]
        return chunk[bisect.bisect_right(chunk, item)]
