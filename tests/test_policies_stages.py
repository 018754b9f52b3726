"""ISACPP's multi-stage interference score (coloc.policies.stages) against hand-computed values.

The rule (self-cream/ISACPP, scheduler/ISACPP/server.py): contention in a shared stage = sum over resources
of solo / predicted co-located use; weight of a stage = its length / the job's predicted co-located remaining
time (its finish time); the alone stage counts 0; a resident counts only the stages it shares with the new
job; score = the new job's interference + the residents' mean.

The example: three jobs on one GPU, the new job first, solo remaining times 2, 4, 6 s. Job i's normalized
throughput next to any one co-runner is n_i; next to two, n_i^2 (pairwise values multiply). Two settings
feed different pair norms: ISACPP's, the E-GGAT's output with the measured pair slowdowns as edges
(here n = 0.5, 0.5, 0.8), and coloc's, with predicted edges (here n = 0.8, 0.4, 0.5).

Measured-edge setting, stages by hand:
  stage 1, jobs {0,1,2}: factors 0.25, 0.25, 0.64; time to finish 2/0.25 = 8, 4/0.25 = 16, 6/0.64 = 9.375
           -> length 8; left 0, 4 - 0.25*8 = 2, 6 - 0.64*8 = 0.88.
  stage 2, jobs {1,2}: factors 0.5, 0.8; to finish 2/0.5 = 4, 0.88/0.8 = 1.1 -> length 1.1; left 1.45, 0.
  stage 3, job {1} alone: length 1.45.
  Finish times (predicted co-located remaining times): 8, 8 + 1.1 + 1.45 = 10.55, 8 + 1.1 = 9.1.
Predicted-edge setting:
  stage 1, {0,1,2}: factors 0.64, 0.16, 0.25; to finish 3.125, 25, 24 -> 3.125; left 0, 3.5, 5.21875.
  stage 2, {1,2}: factors 0.4, 0.5; to finish 8.75, 10.4375 -> 8.75; left 0, 0.84375.
  stage 3, {2} alone: 0.84375. Finish times 3.125, 11.875, 12.71875.
"""

import pytest

from coloc.policies.stages import (
    isacpp_interference,
    isacpp_score,
    pair_score,
    resource_contention,
    run_stages,
    throughput_contention,
)

REMAINING = [2.0, 4.0, 6.0]
MEASURED = [0.5, 0.5, 0.8]    # norms from the E-GGAT with measured edges (ISACPP's setting)
PREDICTED = [0.8, 0.4, 0.5]   # norms from the E-GGAT with predicted edges (coloc's setting)


def norms(values):
    return lambda i, k: values[i]


def throughput(i, active, factors):
    return throughput_contention(factors[i])


def test_the_examples_have_the_hand_computed_stages():
    finish, stages = run_stages(REMAINING, norms(MEASURED))
    assert [s[1] for s in stages] == [(0, 1, 2), (1, 2), (1,)]
    assert [s[0] for s in stages] == pytest.approx([8.0, 1.1, 1.45])
    assert finish == pytest.approx([8.0, 10.55, 9.1])
    finish, stages = run_stages(REMAINING, norms(PREDICTED))
    assert [s[1] for s in stages] == [(0, 1, 2), (1, 2), (2,)]
    assert [s[0] for s in stages] == pytest.approx([3.125, 8.75, 0.84375])
    assert finish == pytest.approx([3.125, 11.875, 12.71875])


def test_isacpp_score_with_measured_edges_by_hand():
    # throughput-scaled contention 1 + 2 / factor: stage 1: 1 + 8 = 9, 9, 1 + 2/0.64 = 4.125
    # new job: 8/8 x 9 = 9
    # resident 1: stage 1 only (the new job ends there): 8/10.55 x 9 = 6.8246445
    # resident 2: 8/9.1 x 4.125 = 3.6263736
    # score: 9 + (6.8246445 + 3.6263736) / 2 = 14.2255091
    assert isacpp_interference(REMAINING, norms(MEASURED), throughput) == pytest.approx([9.0, 6.8246445, 3.6263736])
    assert isacpp_score(REMAINING, norms(MEASURED), throughput) == pytest.approx(14.2255091)


def test_isacpp_score_with_predicted_edges_by_hand():
    # stage 1 contention: 1 + 2/0.64 = 4.125, 1 + 2/0.16 = 13.5, 1 + 2/0.25 = 9
    # new job: 3.125/3.125 x 4.125 = 4.125
    # resident 1: 3.125/11.875 x 13.5 = 3.5526316; resident 2: 3.125/12.71875 x 9 = 2.2113022
    # score: 4.125 + (3.5526316 + 2.2113022) / 2 = 7.0069669
    assert isacpp_score(REMAINING, norms(PREDICTED), throughput) == pytest.approx(7.0069669)


def test_per_resource_contention_sums_solo_over_co_located_use():
    # co-located over solo use next to one co-runner: memory 1.0, PCIe 0.5, utilization 0.8 -> 1 + 2 + 1.25 = 4.25;
    # next to two, the ratios multiply: 1 + 4 + 1.5625 = 6.5625
    assert resource_contention([(1.0, 0.5, 0.8)]) == pytest.approx(4.25)
    assert resource_contention([(1.0, 0.5, 0.8), (1.0, 0.5, 0.8)]) == pytest.approx(6.5625)
    with pytest.raises(ValueError, match="one length"):
        resource_contention([(1.0, 0.5), (1.0,)])


def test_per_resource_score_by_hand():
    # every job's ratios (1.0, 0.5, 0.8) next to each co-runner: stage 1 (two co-runners) contention 6.5625 for all
    # new job: 8/8 x 6.5625; resident 1: 8/10.55 x 6.5625 = 4.9763033; resident 2: 8/9.1 x 6.5625 = 5.7692308
    # score: 6.5625 + (4.9763033 + 5.7692308) / 2 = 11.9352670
    def contention(i, active, factors):
        return resource_contention([(1.0, 0.5, 0.8)] * (len(active) - 1))
    assert isacpp_score(REMAINING, norms(MEASURED), contention) == pytest.approx(11.9352670)


def test_co_located_use_below_solo_use_raises_the_score():
    # ISACPP's ratio is solo over co-located: a job that uses less of a resource when co-located (it is starved
    # of it) contends more. Halving job 0's co-located utilization raises the score.
    def contention_with(util_ratio):
        def contention(i, active, factors):
            return resource_contention([(1.0, 1.0, util_ratio if i == 0 else 1.0)] * (len(active) - 1))
        return contention
    same = isacpp_score(REMAINING, norms(MEASURED), contention_with(1.0))
    starved = isacpp_score(REMAINING, norms(MEASURED), contention_with(0.5))
    assert starved > same
    # new job's contention in stage 1: 1 + 1 + 1/0.25 = 6 against 3, weight 1: the score rises by exactly 3
    assert starved - same == pytest.approx(3.0)
    assert throughput_contention(0.5) > throughput_contention(1.0)  # the adaptation: less throughput, more contention


def test_a_lone_job_and_an_idle_gpu_score_exactly_zero():
    assert isacpp_score([5.0], norms([0.5]), throughput) == 0.0
    assert isacpp_interference([5.0], norms([0.5]), throughput) == [0.0]


def test_a_residents_interference_stops_at_the_first_end_of_it_and_the_new_job():
    # measured example: resident 1 shares stage 2 with resident 2 after the new job ended; that stage is not its
    # interference: 8/10.55 x 9 only, not + 1.1/10.55 x (1 + 2/0.5)
    inter = isacpp_interference(REMAINING, norms(MEASURED), throughput)
    assert inter[1] == pytest.approx(8 / 10.55 * 9)
    assert inter[1] != pytest.approx(8 / 10.55 * 9 + 1.1 / 10.55 * 5)
    # the new job outlives resident 1 of norm 0.5 next to it: resident 1's only stage is its own, it counts whole
    inter = isacpp_interference([10.0, 1.0], norms([0.5, 0.5]), throughput)
    assert inter[1] == pytest.approx(5.0)  # 2/2 x (1 + 2/0.5)


def test_the_last_stage_alone_counts_zero_but_its_time_is_in_the_weight():
    # new job: solo 10, next to a resident of solo 1 (both at 0.5): stage 1 of 2 s, then the new job alone for
    # 10 - 0.5*2 = 9 s; finish time 11. Interference 2/11 x (1 + 2/0.5) = 10/11: the alone 9 s add nothing to the
    # sum, yet divide it (they are in the predicted co-located remaining time).
    inter = isacpp_interference([10.0, 1.0], norms([0.5, 0.5]), throughput)
    assert inter[0] == pytest.approx(10 / 11)


def test_pair_score_is_the_staged_score_of_two_jobs():
    cases = [(10.0, 1.0, 0.5, 0.5), (1.0, 10.0, 0.7, 0.4), (3.0, 3.0, 0.6, 0.6), (2.0, 5.0, 1.1, 0.9)]
    for t_new, t_old, n_new, n_old in cases:
        c_new, c_old = throughput_contention(n_new), throughput_contention(n_old)
        staged = isacpp_score([t_new, t_old], norms([n_new, n_old]), throughput)
        assert pair_score(t_new, t_old, n_new, n_old, c_new, c_old) == pytest.approx(staged)
