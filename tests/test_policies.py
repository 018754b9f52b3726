"""Each policy's own rule on cases small enough to check by hand, and all of them on a small trace."""
import pytest
from sim_cases import ABC, predictions, tables, trace, truth_abc

from coloc import policies
from coloc.policies.stages import isacpp_score, pair_finish_times, run_stages
from coloc.sim import ClusterSpec, GroundTruth, Simulator, simulate, traces
from coloc.sim.predictions import Predictions
from coloc.studies.experiment import make_policy

ONE, TWO = ClusterSpec((("v100", 1),)), ClusterSpec((("v100", 2),))
PREDS = predictions(ABC, utils={"a": 0.3, "b": 0.5, "c": 0.6})


def by_id(result, column="jct"):
    return dict(zip(result.jobs["job_id"], result.jobs[column], strict=True))


def test_registry_lists_every_policy_and_rejects_unknown_names():
    assert {"fifo", "sjf", "tiresias", "gandiva", "horus", "isacpp", "oracle", "coloc"} <= set(policies.names())
    with pytest.raises(KeyError, match="unknown policy 'nope'"):
        policies.get("nope")
    assert policies.get("horus", lookahead=2).lookahead == 2
    # sjf knows durations (as coloc and ISACPP do), not the co-location truth: a baseline, not labelled a bound
    assert policies.get("sjf").kind == "baseline" and policies.get("oracle", truth=truth_abc()).kind == "oracle"


def test_predictive_policy_without_predictions_fails_clearly():
    with pytest.raises(ValueError, match="needs \\['norm'\\] predictions"):
        simulate(trace([(1, 0.0, 1.0, 1, "a")]), truth_abc(), policies.get("isacpp"), ONE)


@pytest.mark.parametrize("name", policies.names())
def test_every_policy_finishes_a_small_trace_with_invariants(name):
    jobs = traces.poisson(120, ["a", "b", "c"], seed=5, load=1.5, total_gpus=4, median_duration_s=200,
                          gpu_mix={1: 5, 2: 1, 4: 1})
    truth = truth_abc()
    result = simulate(jobs, truth, make_policy(name, truth), ClusterSpec((("v100", 4),), gpus_per_node=2),
                      PREDS, restart_cost_s=3.0, check_every=1)
    assert len(result.jobs) == 120 and (result.jobs["jct"] >= result.jobs["duration"] - 1e-6).all()


def test_sjf_runs_the_shortest_waiting_job_first():
    rows = [(1, 0.0, 100.0, 1, "a"), (2, 1.0, 50.0, 1, "a"), (3, 2.0, 10.0, 1, "a")]
    assert by_id(simulate(trace(rows), truth_abc(), policies.get("sjf"), ONE), "start_time") == {1: 0, 2: 110, 3: 100}
    assert by_id(simulate(trace(rows), truth_abc(), policies.get("fifo"), ONE), "start_time") == {1: 0, 2: 100, 3: 150}


def test_fifo_backfills_unless_told_not_to():
    rows = [(1, 0.0, 100.0, 1, "a"), (2, 1.0, 10.0, 2, "a"), (3, 2.0, 10.0, 1, "a")]
    assert by_id(simulate(trace(rows), truth_abc(), policies.get("fifo"), TWO), "start_time")[3] == 2.0
    strict = simulate(trace(rows), truth_abc(), policies.get("fifo", backfill=False), TWO)
    assert by_id(strict, "start_time") == {1: 0.0, 2: 100.0, 3: 110.0}
    # the Horus reference's fifo: its head blocks, as a policy of its own (the claims map's baseline variant)
    blocking = simulate(trace(rows), truth_abc(), policies.get("fifo-blocking"), TWO)
    assert by_id(blocking, "start_time") == {1: 0.0, 2: 100.0, 3: 110.0}


def test_tiresias_prefers_least_attained_service():
    rows = [(1, 0.0, 500.0, 1, "a"), (2, 100.0, 500.0, 1, "b"), (3, 150.0, 20.0, 1, "c")]
    result = simulate(trace(rows), truth_abc(), policies.get("tiresias", thresholds=(50.0,), period_s=10.0), ONE)
    # 1 runs to 100 (then level 1); 2 preempts it and reaches level 1 at 150, when 3 (level 0) preempts it;
    # 3 ends at 170; then level 1 in arrival order: 1 (400 s left) to 570, 2 (450 s left) to 1020.
    assert by_id(result, "finish_time") == {1: 570.0, 2: 1020.0, 3: 170.0}
    assert result.stats["preemptions"] == 2


def test_gandiva_unpacks_a_bad_pair_and_remembers_it():
    # b with c is bad (0.3 + 0.4 < 1): packed at t=10, observed after 60 s, the newer job is suspended.
    rows = [(1, 0.0, 1000.0, 1, "b"), (2, 10.0, 100.0, 1, "c")]
    policy = policies.get("gandiva", period_s=10.0, observe_s=60.0)
    result = simulate(trace(rows), truth_abc(), policy, ONE)
    assert result.stats["preemptions"] == 1
    assert 60.0 <= by_id(result, "colocated_time")[2] <= 80.0
    assert ("v100", ("b", "c")) in policy._bad
    # with a free GPU later, it migrates instead: job 3 holds GPU 1 until t=50
    rows = [(1, 0.0, 1000.0, 1, "b"), (3, 0.0, 50.0, 1, "a"), (2, 10.0, 100.0, 1, "c")]
    result = simulate(trace(rows), truth_abc(), policies.get("gandiva", period_s=10.0, observe_s=60.0), TWO)
    assert result.stats["migrations"] == 1 and result.stats["preemptions"] == 0


def test_gandiva_keeps_a_good_pair():
    rows = [(1, 0.0, 300.0, 1, "c"), (2, 10.0, 100.0, 1, "c")]  # 0.9 + 0.9 >= 1
    result = simulate(trace(rows), truth_abc(), policies.get("gandiva", period_s=10.0), ONE)
    assert result.stats["preemptions"] == result.stats["migrations"] == 0
    assert by_id(result, "colocated_time")[2] == pytest.approx(100 / 0.9)


def test_isacpp_picks_the_gpu_of_least_interference():
    # GPU 0 runs b, GPU 1 runs c; a new a suffers less next to c (0.8 vs 0.5): it goes to GPU 1.
    rows = [(1, 0.0, 500.0, 1, "b"), (2, 0.0, 500.0, 1, "c"), (3, 5.0, 100.0, 1, "a")]
    result = simulate(trace(rows), truth_abc(), policies.get("isacpp"), TWO, PREDS)
    assert by_id(result, "colocated_time")[1] == 0.0 and by_id(result, "colocated_time")[2] > 0


def test_isacpp_scores_every_predicted_resource_when_the_predictions_carry_them():
    """The same start as above, but a's (and c's) predicted utilization next to each other is a tenth of their solo
    use (as solo next to b): the paper's contention, solo over co-located use, is 10 there, so the per-resource score
    sends a to b's GPU, where the throughput-scaled form (from norms alone) sent it to c's."""
    rows = [(1, 0.0, 500.0, 1, "b"), (2, 0.0, 500.0, 1, "c"), (3, 5.0, 100.0, 1, "a")]
    ratio = {("a", "c"): 0.1, ("c", "a"): 0.1}
    resources = {("v100", w, o): (ratio.get((w, o), 1.0),) for w in "abc" for o in "abc"}
    with_resources = Predictions(predictions(ABC)._norm, resources=resources, resource_names=("gpu_util",))
    isacpp = policies.get("isacpp")
    result = simulate(trace(rows), truth_abc(), isacpp, TWO, with_resources)
    assert by_id(result, "colocated_time")[1] > 0 and by_id(result, "colocated_time")[2] == 0.0
    assert isacpp.summary_fields() == {"isacpp_score_form": "per-resource"}
    two = policies.get("isacpp")
    simulate(trace(rows), truth_abc(), two, TWO, PREDS)
    assert two.summary_fields() == {"isacpp_score_form": "throughput-scaled"}


def test_isacpp_pair_formula_matches_the_staged_score():
    rows = [(1, 0.0, 300.0, 1, "b"), (2, 0.0, 80.0, 1, "a")]
    sim = Simulator(trace(rows), truth_abc(), policies.get("isacpp"), ONE, PREDS)
    view = sim.view
    sim.policy.reset(view)
    for job in (sim.jobs[1], sim.jobs[2]):
        job.state = "queued"
        view.queue.push(job)
    view.place(sim.jobs[1], (0,))
    sim._refresh_rates()
    view.now = 40.0
    new = sim.jobs[2]
    policy, old = sim.policy, sim.jobs[1]
    names, remaining = ["a", "b"], [80.0, old.remaining_at(40.0) / old.speed]
    staged = isacpp_score(remaining, lambda i, k: PREDS.norm("v100", names[i], names[k]),
                          lambda i, active, factors: policy.contention("v100", names[i], [names[1 - i]], factors[i]))
    closed, gpu = policy._best_lone(view, policy._lone_pair("v100", "a", "b"), 80.0,
                                    view.cluster.shareable["v100"][("b",)])
    assert closed == pytest.approx(staged) and gpu == 0
    assert policy.gpu_score(view, new, "v100", 0) == closed


def test_stages_match_the_pair_formula_and_three_jobs_by_hand():
    finish, stages = run_stages([100.0, 40.0], lambda i, k: (0.5, 0.8)[i])
    assert finish == pytest.approx(list(pair_finish_times(100.0, 40.0, 0.5, 0.8)))
    assert finish == pytest.approx([100 - 25 + 50, 50.0]) and len(stages) == 2
    finish, _ = run_stages([10.0, 10.0, 10.0], lambda i, k: 0.5)
    assert finish == pytest.approx([40.0, 40.0, 40.0])


def test_coloc_packs_only_pairs_that_gain_throughput():
    # a with c: 0.8 + 0.9 >= 1, packed.
    good = simulate(trace([(1, 0.0, 1000.0, 1, "a"), (2, 10.0, 100.0, 1, "c")]), truth_abc(),
                    policies.get("coloc"), ONE, PREDS)
    assert by_id(good, "colocated_time")[2] > 0
    # b with c: 0.4 + 0.3 < 1, the new job waits.
    bad = simulate(trace([(1, 0.0, 30.0, 1, "b"), (2, 10.0, 100.0, 1, "c")]), truth_abc(),
                   policies.get("coloc"), ONE, PREDS)
    assert by_id(bad, "colocated_time")[2] == 0 and by_id(bad, "start_time")[2] == 30.0


def test_coloc_forms_a_losing_pair_only_when_the_wait_is_long():
    # b with c loses throughput (0.4 + 0.3), but b holds the GPU for 100,000 s: a 100 s c job packed
    # ends after 333 s and costs b 233 s, far less than waiting 99,990 s.
    rows = [(1, 0.0, 100_000.0, 1, "b"), (2, 10.0, 100.0, 1, "c")]
    result = simulate(trace(rows), truth_abc(), policies.get("coloc"), ONE, PREDS)
    assert by_id(result, "jct")[2] == pytest.approx(100 / 0.3)
    without = simulate(trace(rows), truth_abc(), policies.get("coloc", wait_rule=False), ONE, PREDS)
    assert by_id(without, "start_time")[2] == 100_000.0


def test_coloc_picks_the_gpu_that_adds_least_completion_time():
    # Two GPUs run c: job 1 for 900 s, job 2 for 60 s. A new c (100 s) at t=10, c with c at 0.9 each.
    # Next to job 1 it adds 100/0.9 + (100/0.9 + 800) - 100 - 890 = 22.2 s; next to job 2 (50 s left)
    # 50/0.9 + (50/0.9 + 50) - 100 - 50 = 11.1 s: it joins job 2.
    rows = [(1, 0.0, 900.0, 1, "c"), (2, 0.0, 60.0, 1, "c"), (3, 10.0, 100.0, 1, "c")]
    result = simulate(trace(rows), truth_abc(), policies.get("coloc"), TWO, PREDS)
    assert by_id(result, "colocated_time")[1] == 0.0 and by_id(result, "colocated_time")[2] > 0


def test_coloc_risk_term_avoids_uncertain_pairs():
    # a with b: 0.5 + 0.8 = 1.3 gains throughput, but minus one spread (0.4 each) it is 0.5: refused.
    rows = [(1, 0.0, 200.0, 1, "a"), (2, 10.0, 100.0, 1, "b")]
    unsure = predictions(ABC, stds={("a", "b"): (0.4, 0.4)})
    assert by_id(simulate(trace(rows), truth_abc(), policies.get("coloc", risk=0.0), ONE, unsure),
                 "colocated_time")[2] > 0
    assert by_id(simulate(trace(rows), truth_abc(), policies.get("coloc", risk=1.0), ONE, unsure),
                 "colocated_time")[2] == 0


def test_oracle_sees_the_truth_when_predictions_are_wrong():
    # Deliberately wrong test predictions: they call the bad pair (b, c) nearly free.
    wrong = predictions({**ABC, ("b", "c"): (0.95, 0.95)})
    rows = [(1, 0.0, 300.0, 1, "b"), (2, 10.0, 100.0, 1, "c")]
    fooled = simulate(trace(rows), truth_abc(), policies.get("coloc"), ONE, wrong)
    truth = truth_abc()
    oracle = simulate(trace(rows), truth, policies.get("oracle", truth=truth), ONE, wrong)
    assert by_id(fooled, "colocated_time")[2] > 0 and by_id(oracle, "colocated_time")[2] == 0


def test_policies_respect_infeasible_pairs():
    solo, pairs = tables({("a", "a"): (0.9, 0.9), ("b", "b"): (0.9, 0.9)}, infeasible=(("a", "b"),))
    truth = GroundTruth(solo, pairs, "v100")
    preds = predictions({("a", "a"): (0.9, 0.9), ("b", "b"): (0.9, 0.9)}, utils={"a": 0.1, "b": 0.1})
    rows = [(1, 0.0, 100.0, 1, "a"), (2, 1.0, 100.0, 1, "b")]
    for name in ("gandiva", "horus", "isacpp", "coloc", "oracle"):
        result = simulate(trace(rows), truth, make_policy(name, truth), ONE, preds)
        assert by_id(result, "start_time")[2] == 100.0, name
