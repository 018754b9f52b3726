"""coloc-probe: a job of an unseen family pays k x probe window of GPU time before it trains."""
import pytest
from sim_cases import ABC, Scripted, predictions, trace, truth_abc

from coloc import policies
from coloc.sim import ClusterSpec, SimulationError, simulate

SPEC = ClusterSpec((("v100", 2),), gpus_per_node=2)
EXACT = predictions(ABC)


def run(policy, rows, spec=SPEC):
    return simulate(trace(rows), truth_abc(), policy, spec, EXACT)


def test_a_new_family_job_pays_its_probes_once_and_a_seen_one_does_not():
    rows = [(0, 0.0, 100.0, 1, "a"), (1, 0.0, 100.0, 1, "b")]
    policy = policies.get("coloc-probe", probes=3, probe_s=10.0, new_families=["a"])
    result = run(policy, rows)
    jct = result.jobs.set_index("workload")["jct"]
    assert jct["a"] == pytest.approx(130.0)   # 3 probes x 10 s before 100 s of training, alone on its GPU
    assert jct["b"] == pytest.approx(100.0)
    assert result.stats["probe_gpu_s"] == pytest.approx(30.0)


def test_probes_charged_on_a_shared_gpu_run_at_the_shared_speed():
    # one GPU: a (new) and b share it from t=0; a runs at 0.5, b at 0.8 of solo speed
    rows = [(0, 0.0, 100.0, 1, "a"), (1, 0.0, 100.0, 1, "b")]
    spec = ClusterSpec((("v100", 1),), gpus_per_node=1)
    plain = run(policies.get("coloc", min_combined=0.0), rows, spec).jobs.set_index("workload")["jct"]
    probed = run(policies.get("coloc-probe", probes=2, probe_s=10.0, new_families=["a"], min_combined=0.0),
                 rows, spec).jobs.set_index("workload")["jct"]
    # b ends at 100 / 0.8 = 125 s in both; by then a has done 62.5 s of its 100 (plain) or 120 (probed)
    assert plain["b"] == probed["b"] == pytest.approx(125.0)
    assert plain["a"] == pytest.approx(125.0 + 37.5)
    assert probed["a"] == pytest.approx(125.0 + 57.5)


@pytest.mark.parametrize("params", [{"probes": 0, "new_families": ["a"]}, {"probes": 2, "new_families": []}])
def test_without_probes_or_new_families_it_is_coloc(params):
    rows = [(i, 5.0 * i, 50.0 + 10 * i, 1, "abc"[i % 3]) for i in range(12)]
    plain = run(policies.get("coloc"), rows).jobs.drop(columns="policy")
    probe = run(policies.get("coloc-probe", **params), rows)
    assert probe.stats["probe_gpu_s"] == 0.0
    assert probe.jobs.drop(columns="policy").equals(plain)


@pytest.mark.parametrize("bad", [{"probes": -1}, {"probes": 1.5}, {"probe_s": -2.0}, {"new_families": "lm"}])
def test_bad_parameters_are_named(bad):
    with pytest.raises(ValueError, match=f"coloc-probe: {next(iter(bad))}="):
        policies.get("coloc-probe", **bad)


class ProbesLate(Scripted):
    """Test helper: places job 0 at once, then tries to charge it probes in a later round."""

    def schedule(self, view):
        super().schedule(view)
        if view.now > 0 and view.running:
            view.probe(next(iter(view.running.values())), 5.0)


def test_the_view_refuses_probes_for_a_job_not_placed_in_this_round():
    rows = [(0, 0.0, 100.0, 1, "a"), (1, 10.0, 100.0, 1, "b")]
    with pytest.raises(SimulationError, match="job 0 probed .*expected a job placed in this round"):
        run(ProbesLate({0: (0,), 1: (1,)}), rows)
