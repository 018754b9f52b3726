"""coloc.sim.firsts: a device type's groups sorted by their first key, and the greatest key ever ordered."""
import math

from coloc.sim.firsts import GroupsByFirst


def test_groups_stay_sorted_by_first_key_as_their_first_keys_move():
    firsts = GroupsByFirst()
    assert [firsts.register("g0"), firsts.register("g1"), firsts.register("g2")] == [0, 1, 2]
    firsts.moved(0, None, 50.0)
    firsts.moved(1, None, 20.0)
    firsts.moved(2, None, 50.0)
    assert firsts.entries == [(20.0, 1), (50.0, 0), (50.0, 2)]
    firsts.moved(1, 20.0, 70.0)  # its first resident left: the next one finishes at 70
    firsts.moved(2, 50.0, None)  # no ordered GPU left
    assert firsts.entries == [(50.0, 0), (70.0, 1)] and firsts.groups[1] == "g1"


def test_the_latest_key_is_the_greatest_ever_ordered():
    firsts = GroupsByFirst()
    assert firsts.latest == -math.inf
    for key in (30.0, 10.0, 45.0, 20.0):
        firsts.ordered(key)
    assert firsts.latest == 45.0
