"""ISACPP's multi-stage interference score (coloc.policies.stages): both forms against hand-computed values.

The example: three jobs on one GPU, solo remaining times 2, 4, 6 s. Job i's normalized throughput
next to any one co-runner is n_i = 0.5, 0.5, 0.8; next to two, n_i^2 (pairwise values multiply).

Stages, computed by hand:
  stage 1, jobs {0,1,2}: factors 0.25, 0.25, 0.64; time to finish 2/0.25 = 8, 4/0.25 = 16,
           6/0.64 = 9.375 -> length 8; left 0, 4 - 0.25*8 = 2, 6 - 0.64*8 = 0.88.
  stage 2, jobs {1,2}: factors 0.5, 0.8; to finish 2/0.5 = 4, 0.88/0.8 = 1.1 -> length 1.1;
           left 2 - 0.5*1.1 = 1.45, 0.
  stage 3, job {1}: factor 1, length 1.45.
Weights length / remaining: job 0: 8/2 = 4; job 1: 8/4 = 2, 1.1/4 = 0.275, 1.45/4 = 0.3625;
job 2: 8/6 = 4/3, 1.1/6.
"""

import pytest

from coloc.policies.stages import per_resource_score, run_stages, two_resource_score

REMAINING = [2.0, 4.0, 6.0]
NORM = [0.5, 0.5, 0.8]


def pair_norm(i, k):
    return NORM[i]


def test_the_example_has_the_hand_computed_stages():
    finish, stages = run_stages(REMAINING, pair_norm)
    assert [s[1] for s in stages] == [(0, 1, 2), (1, 2), (1,)]
    assert [s[0] for s in stages] == pytest.approx([8.0, 1.1, 1.45])
    assert finish == pytest.approx([8.0, 10.55, 9.1])


def test_two_resource_score_time_only():
    # contention 1 / factor.
    # job 0: 4 x 4 = 16
    # job 1: 2 x 4 + 0.275 x 2 + 0.3625 x 1 = 8.9125
    # job 2: 4/3 x 1/0.64 + 1.1/6 x 1/0.8 = 2.0833333 + 0.2291667 = 2.3125
    # score: 16 + (8.9125 + 2.3125) / 2 = 21.6125
    assert two_resource_score(REMAINING, pair_norm) == pytest.approx(21.6125)


def test_two_resource_score_with_utilization():
    # solo utilizations 0.3, 0.5, 0.4; contention 1 / factor + max(1, the stage's summed utilization)
    # stage 1: sum 1.2 -> job 0: 4 + 1.2 = 5.2; job 1: 5.2; job 2: 1.5625 + 1.2 = 2.7625
    # stage 2: sum 0.9 -> 1 -> job 1: 2 + 1 = 3; job 2: 1.25 + 1 = 2.25
    # stage 3: sum 0.5 -> 1 -> job 1: 1 + 1 = 2
    # job 0: 4 x 5.2 = 20.8
    # job 1: 2 x 5.2 + 0.275 x 3 + 0.3625 x 2 = 10.4 + 0.825 + 0.725 = 11.95
    # job 2: 4/3 x 2.7625 + 1.1/6 x 2.25 = 3.6833333 + 0.4125 = 4.0958333
    # score: 20.8 + (11.95 + 4.0958333) / 2 = 28.8229167
    assert two_resource_score(REMAINING, pair_norm, [0.3, 0.5, 0.4]) == pytest.approx(28.82291667)


def test_per_resource_score_sums_co_located_over_solo_use_of_every_resource():
    # job i's co-located over solo use next to one co-runner: memory 1.1, 1.2, 1.0; utilization 0.8, 0.9, 0.5
    # (next to two: squared); contention 1 / factor + memory ratio + utilization ratio
    # stage 1: job 0: 4 + 1.21 + 0.64 = 5.85; job 1: 4 + 1.44 + 0.81 = 6.25; job 2: 1.5625 + 1 + 0.25 = 2.8125
    # stage 2: job 1: 2 + 1.2 + 0.9 = 4.1; job 2: 1.25 + 1 + 0.5 = 2.75
    # stage 3: job 1 alone: 1 + 1 + 1 = 3
    # job 0: 4 x 5.85 = 23.4
    # job 1: 2 x 6.25 + 0.275 x 4.1 + 0.3625 x 3 = 12.5 + 1.1275 + 1.0875 = 14.715
    # job 2: 4/3 x 2.8125 + 1.1/6 x 2.75 = 3.75 + 0.5041667 = 4.2541667
    # score: 23.4 + (14.715 + 4.2541667) / 2 = 32.8845833
    mem, util = [1.1, 1.2, 1.0], [0.8, 0.9, 0.5]
    score = per_resource_score(REMAINING, pair_norm, lambda i, k: (mem[i], util[i]), n_resources=2)
    assert score == pytest.approx(32.88458333)


def test_per_resource_score_without_resources_is_the_time_only_score():
    assert per_resource_score(REMAINING, pair_norm, lambda i, k: (), n_resources=0) == pytest.approx(21.6125)


def test_a_lone_job_scores_its_own_interference():
    # one stage of 2 s, weight 1: time 1 + two resources at their solo use (1 + 1) = 3
    assert per_resource_score([2.0], pair_norm, lambda i, k: (0.5, 0.5), n_resources=2) == pytest.approx(3.0)
    assert two_resource_score([2.0], pair_norm, [0.4]) == pytest.approx(2.0)


def test_per_resource_score_refuses_ratios_of_the_wrong_length():
    with pytest.raises(ValueError, match="expected 2"):
        per_resource_score(REMAINING, pair_norm, lambda i, k: (1.0,), n_resources=2)
