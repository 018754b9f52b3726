"""The Fenwick tree's prefix sums and search equal plain sums over a list, through growth and removals."""
import random

from coloc.policies.fenwick import Fenwick


def first_above_by_scanning(counts, target):
    summed = 0
    for position, count in enumerate(counts):
        summed += count
        if summed > target:
            return position
    return None


def test_prefix_sums_and_search_equal_scanning_a_list_as_it_grows_and_shrinks():
    rng = random.Random(7)
    tree, counts = Fenwick(capacity=4), []
    for _ in range(3000):
        position = rng.randrange(0, 700)
        if position >= len(counts):
            counts.extend([0] * (position + 1 - len(counts)))
        delta = rng.choice([1, 2, 4]) if counts[position] == 0 or rng.random() < 0.6 else -counts[position]
        counts[position] += delta
        tree.add(position, delta)
        probe = rng.randrange(0, len(counts) + 3)
        assert tree.before(probe) == sum(counts[:probe])
        target = rng.randrange(-1, sum(counts) + 2)
        assert tree.first_above(target) == first_above_by_scanning(counts, target)
    assert tree.total == sum(counts)


def test_search_skips_positions_counted_zero():
    tree = Fenwick(capacity=8)
    for position, count in ((2, 4), (5, 1), (40, 2)):  # 40: beyond the first capacity, the tree grows
        tree.add(position, count)
    assert [tree.first_above(t) for t in (0, 3, 4, 5, 6, 7)] == [2, 2, 5, 40, 40, None]
    assert tree.before(3) == 4 and tree.before(41) == 7 and tree.before(10 ** 6) == 7
