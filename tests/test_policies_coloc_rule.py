"""coloc's rule of when to share (cost against the wait and the queue) and coloc-online's refinement, by hand."""
import pytest
from sim_cases import ABC, predictions, tables, trace, truth_abc

from coloc import policies
from coloc.sim import ClusterSpec, GroundTruth, simulate

ONE = ClusterSpec((("v100", 1),))
EXACT = predictions(ABC)


def by_id(result, column):
    return dict(zip(result.jobs["job_id"], result.jobs[column], strict=True))


def oracle():
    truth = truth_abc()
    return truth, policies.get("oracle", truth=truth)


def test_with_a_short_queue_the_oracle_waits_rather_than_pair_a_gaining_set_that_costs_more_than_the_wait():
    # a (100 s) runs; b (1000 s) arrives at 10. a with b gains throughput (0.5 + 0.8 = 1.3) but packed it adds
    # (2 - 1.3) x min(1000 / 0.8, 90 / 0.5) = 126 s of completion time, more than b's 90 s wait: b waits.
    truth, policy = oracle()
    rows = [(1, 0.0, 100.0, 1, "a"), (2, 10.0, 1000.0, 1, "b")]
    result = simulate(trace(rows), truth, policy, ONE)
    assert by_id(result, "start_time")[2] == 100.0 and by_id(result, "colocated_time")[2] == 0.0
    # the sum of completion times is the 36 s lower that the rule predicts
    packed = simulate(trace(rows), truth, policies.get("coloc", wait_rule=False), ONE, EXACT)
    assert by_id(packed, "colocated_time")[2] > 0
    assert packed.jobs["jct"].sum() - result.jobs["jct"].sum() == pytest.approx(126.0 - 90.0)


def test_with_a_long_queue_the_same_set_pays_for_the_jobs_behind():
    # the same a and b, five 5000 s b jobs queued behind: the 0.3 x 180 s of GPU time the pair saves is worth
    # 5 queued jobs per GPU x 54 s, more than the 126 s it adds: b is packed.
    truth, policy = oracle()
    rows = [(1, 0.0, 100.0, 1, "a"), (2, 10.0, 1000.0, 1, "b")] + [(k, 10.0, 5000.0, 1, "b") for k in range(3, 8)]
    result = simulate(trace(rows), truth, policy, ONE)
    assert by_id(result, "start_time")[2] == 10.0 and by_id(result, "colocated_time")[2] > 0


WRONG = predictions({**ABC, ("b", "c"): (0.95, 0.95)})  # calls the bad pair (truth 0.4, 0.3) nearly free


def test_online_splits_a_pair_observed_to_be_bad_and_does_not_form_it_again():
    # b runs 2000 s; c (1000 s) arrives at 10 and is packed (predicted 0.95 + 0.95). At the first round (every
    # 120 s from 0) after 120 s together, t = 240, the pair is observed at 0.4 + 0.3: staying adds 1.3 x 931 / 0.3
    # = 4034 s, more than c's restart and wait for b alone (30 + 1898 s): c is preempted. A second c arriving at 500 s is not packed
    # next to b either: both wait for b to end.
    rows = [(1, 0.0, 2000.0, 1, "b"), (2, 10.0, 1000.0, 1, "c"), (3, 500.0, 1000.0, 1, "c")]
    online = simulate(trace(rows), truth_abc(), policies.get("coloc-online"), ONE, WRONG, restart_cost_s=30.0)
    plain = simulate(trace(rows), truth_abc(), policies.get("coloc"), ONE, WRONG, restart_cost_s=30.0)
    assert by_id(online, "preemptions")[2] == 1
    assert by_id(online, "colocated_time")[2] == pytest.approx(230.0)
    end_b = by_id(online, "finish_time")[1]
    assert by_id(online, "start_time")[3] >= end_b and end_b == pytest.approx(240.0 + 2000.0 - 10.0 - 0.4 * 230.0)
    assert by_id(plain, "colocated_time")[2] > 1000.0  # the plain rule never learns
    assert online.jobs["jct"].mean() < plain.jobs["jct"].mean()


def test_online_is_coloc_where_every_prediction_is_right():
    rows = [(1, 0.0, 2000.0, 1, "b"), (2, 10.0, 1000.0, 1, "c"), (3, 500.0, 300.0, 1, "a"),
            (4, 600.0, 900.0, 1, "c")]
    online = simulate(trace(rows), truth_abc(), policies.get("coloc-online", period_s=None), ONE, EXACT)
    plain = simulate(trace(rows), truth_abc(), policies.get("coloc"), ONE, EXACT)
    assert online.jobs["finish_time"].tolist() == plain.jobs["finish_time"].tolist()


def test_online_refinement_moves_related_pairs_and_shrinks_their_spread():
    # seen: a next to b at half its prediction. An unseen pair with job a (a next to c) is moved down too, by the
    # job effect, and its spread shrinks; a pair with neither a as job nor b as co-runner (c next to a) is moved
    # only by family effects (here none: one-letter names have no family of their own... the same family for all)
    policy = policies.get("coloc-online")
    policy._preds = predictions(ABC, stds={("a", "c"): (0.2, 0.2)})
    policy._seen = {("v100", "a", "b"): 0.25}
    policy._refit()
    assert policy._belief("v100", "a", "b") == (0.25, 0.0)
    mean, std = policy._belief("v100", "a", "c")
    assert mean < 0.8 and std < 0.2


def test_online_decisions_are_reproducible():
    from coloc.sim import traces
    jobs = traces.poisson(150, ["a", "b", "c"], seed=3, load=1.6, total_gpus=2, median_duration_s=300,
                          gpu_mix={1: 1})
    runs = [simulate(jobs, truth_abc(), policies.get("coloc-online"), ClusterSpec((("v100", 2),)), WRONG,
                     restart_cost_s=30.0, check_every=1).jobs for _ in range(2)]
    assert runs[0].equals(runs[1])


def test_online_split_reads_no_factor_of_a_set_younger_than_its_window():
    # GPU 0: b (5000 s) from 0, c (369 s) packed next to it at 10 (b with c predicted 0.95 + 0.95, truth 0.4 + 0.3).
    # GPU 1: d (5000 s) from 0, e (600 s) packed next to it at 100 (predicted 0.95 + 0.95, truth 0.3 + 0.3).
    # a arrives at 200 (queued: both GPUs full): the round observes b with c (190 s together) and weighs splitting
    # c off. Staying adds (1 + 0.5 x 0.3) x 312 / 0.3 = 1508 s. Splitting costs c its restart (30 s) and its wait
    # until the first running job ends. e has run next to d for 100 s only, less than the 120 s window: no real
    # scheduler has measured its 0.3 yet. Read anyway, e would end 570 / 0.3 = 1900 s on, the wait more than the
    # cost of staying (no split); at e's predicted factor (above 0.6 after the refit) it ends within 975 s: c is split.
    norms = {**ABC, ("d", "d"): (0.9, 0.9), ("d", "e"): (0.3, 0.3), ("e", "e"): (0.9, 0.9)}
    solo, pairs = tables(norms)
    truth = GroundTruth(solo, pairs, "v100")
    said = predictions({**norms, ("b", "c"): (0.95, 0.95), ("d", "e"): (0.95, 0.95)})
    rows = [(1, 0.0, 5000.0, 1, "b"), (2, 0.0, 5000.0, 1, "d"), (3, 10.0, 369.0, 1, "c"), (4, 100.0, 600.0, 1, "e"),
            (5, 200.0, 10000.0, 1, "a")]
    online = simulate(trace(rows), truth, policies.get("coloc-online", period_s=None),
                      ClusterSpec((("v100", 2),)), said, restart_cost_s=30.0)
    assert by_id(online, "colocated_time")[4] > 0 and by_id(online, "start_time")[4] == 100.0
    assert by_id(online, "preemptions")[3] == 1
