"""SortedEntries keeps the order a plain sorted list keeps, through inserts, removals and chunk splits."""
import bisect
import random

import pytest

from coloc.sim import sorted_entries
from coloc.sim.sorted_entries import SortedEntries


@pytest.mark.parametrize("seed", range(4))
def test_it_matches_a_sorted_list_through_random_inserts_and_removals(seed, monkeypatch):
    monkeypatch.setattr(sorted_entries, "CHUNK", 4)  # small chunks: many splits and empty chunks dropped
    rng = random.Random(seed)
    kept, plain = SortedEntries(), []
    for step in range(3000):
        if plain and rng.random() < 0.45:
            item = plain[0] if rng.random() < 0.3 else rng.choice(plain)  # the head often, as a FIFO queue does
            kept.remove(item)
            plain.remove(item)
        else:
            item = (rng.randrange(3), rng.random(), step)
            kept.insert(item)
            bisect.insort(plain, item)
        assert len(kept) == len(plain) and bool(kept) == bool(plain)
        assert kept.first() == (plain[0] if plain else None)
        probe = (rng.randrange(3), rng.random(), -1) if rng.random() < 0.5 else rng.choice(plain or [None])
        after = bisect.bisect_right(plain, probe) if probe is not None else 0
        assert kept.first_after(probe) == (plain[after] if after < len(plain) else None)
        k = rng.randrange(12)
        assert kept.head(k) == plain[:k]
    assert list(kept) == plain
    assert max(map(len, kept._chunks)) <= 8 and all(kept._chunks)


def test_removing_an_item_not_there_names_it():
    kept = SortedEntries()
    kept.insert((0, 1.0, 7))
    with pytest.raises(KeyError, match="0, 2.0, 8"):
        kept.remove((0, 2.0, 8))
    with pytest.raises(KeyError):
        SortedEntries().remove((0, 1.0, 7))
