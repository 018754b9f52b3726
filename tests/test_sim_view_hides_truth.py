"""A policy cannot reach the measured pairs: nothing reachable from its SchedulerView leads to them."""
import gc
import types

import pandas as pd
import pytest
from sim_cases import ABC, predictions, tables, truth_abc

from coloc import policies
from coloc.sim import ClusterSpec, GroundTruth, Simulator, traces
from coloc.sim.view import Profile, SchedulerView
from coloc.studies.experiment import make_policy

SPEC = ClusterSpec((("v100", 2),), gpus_per_node=2)
# predictions deliberately unlike the truth (every value 0.05 lower), so a truth value found is the truth's
WRONG = predictions({pair: (a - 0.05, b - 0.05) for pair, (a, b) in ABC.items()},
                    stds={("a", "b"): (0.1, 0.1)}, utils={"a": 0.3, "b": 0.5, "c": 0.6})


def reachable(root, limit: int = 200_000) -> list:
    """Every object reachable from `root` by references (attributes, containers, bound methods'
    __self__, closure cells, defaults), not through classes, modules or a function's globals:
    those are code shared by every run, not state handed to the policy."""
    seen, stack, out = {id(root)}, [root], []
    while stack:
        obj = stack.pop()
        out.append(obj)
        if isinstance(obj, (type, types.ModuleType)):
            continue
        if isinstance(obj, types.FunctionType):
            refs = [obj.__closure__, obj.__defaults__, obj.__kwdefaults__, obj.__dict__]
        else:
            refs = gc.get_referents(obj)
        for ref in refs:
            if ref is not None and id(ref) not in seen:
                seen.add(id(ref))
                stack.append(ref)
        assert len(seen) < limit, "object graph larger than the bound; raise the limit"
    return out


class Probe:
    """Test helper: runs a policy and, at the first round with jobs queued and running, walks its view."""

    def __init__(self, inner):
        self.inner, self.name, self.found = inner, inner.name, None
        self.queue_key, self.period_s = inner.queue_key, inner.period_s

    def reset(self, view):
        self.inner.reset(view)

    def schedule(self, view):
        self.inner.schedule(view)
        if self.found is None and view.queue and view.running:
            self.found = reachable(view)


def walk_mid_run(name: str):
    truth = truth_abc()
    jobs = traces.poisson(60, ["a", "b", "c"], seed=3, load=2.0, total_gpus=2, median_duration_s=100)
    probe = Probe(make_policy(name, truth))
    sim = Simulator(jobs, truth, probe, SPEC, WRONG, restart_cost_s=2.0)
    observed, factor = set(), SchedulerView.observed_factor

    def logged(view, job):  # what the policy measured of a job that ran: (device, job, co-runner) of a pair
        here = view.cluster.residents[job.gpus[0]]
        if len(here) == 2:
            observed.add((job.device, job.workload, next(j for j in here if j is not job).workload))
        return factor(view, job)

    SchedulerView.observed_factor = logged  # (on the class: nothing the walk follows holds the closure)
    try:
        sim.run()
    finally:
        SchedulerView.observed_factor = factor
    assert probe.found is not None, f"{name}: no round had jobs queued and running"
    sim.observed = observed
    return truth, sim, probe.found


def truth_values_in(found, truth: GroundTruth) -> list:
    """(key, value) items of reachable dicts that are measured pair norms."""
    norms = truth.pair_norms()
    return [(k, v) for obj in found if isinstance(obj, dict) for k, v in obj.items()
            if isinstance(v, float) and isinstance(k, tuple) and norms.get(k) == v]


@pytest.mark.parametrize("name", [n for n in policies.names() if "truth" not in policies.info(n)["needs"]])
def test_nothing_reachable_from_the_view_leads_to_the_truth(name):
    truth, sim, found = walk_mid_run(name)
    assert not [o for o in found if isinstance(o, (GroundTruth, Simulator))]
    assert not [o for o in found if o is sim._factor_cache or o is truth._norm]
    # a measured value may be held only for a pair the policy ran and measured itself (view.observed_factor)
    assert [(k, v) for k, v in truth_values_in(found, truth) if k not in sim.observed] == []
    # the walk did see the state a policy works with
    view = sim.view
    assert all(any(o is x for o in found) for x in (view.cluster, view.queue, view.profile, WRONG))


def test_the_walk_finds_the_truth_from_the_simulator():
    """Positive control: the same walk from the Simulator reaches the truth and its pair norms."""
    truth, sim, _ = walk_mid_run("fifo")
    found = reachable(sim)
    assert any(o is truth for o in found) and truth_values_in(found, truth)


def test_the_view_has_no_truth_and_no_simulator():
    _, sim, _ = walk_mid_run("isacpp")
    with pytest.raises(AttributeError):
        _ = sim.view.truth
    assert not any(isinstance(v, (GroundTruth, Simulator)) for v in vars(sim.view).values())


def test_the_oracle_is_given_the_truth_explicitly_and_nothing_else():
    with pytest.raises(ValueError, match="'oracle' .*upper bound.* give truth="):
        policies.get("oracle")
    assert policies.info("oracle") == {"kind": "oracle", "needs": ("truth",), "optional": ()}
    truth, sim, found = walk_mid_run("oracle")
    assert not [o for o in found if isinstance(o, Simulator)]
    assert not any(o is truth for o in found)  # it holds a copy of the pairs, labelled ORACLE
    with pytest.raises(TypeError):
        policies.get("coloc", truth=truth)  # no other policy takes the truth


def test_the_packing_label_reaches_the_view_from_the_solo_table():
    """Lucid's label (solo profiling, known before a job shares a GPU) is a fact of the view; None where absent."""
    truth = truth_abc()
    profile = Profile.of(truth)
    view = SchedulerView(ClusterSpec((("v100", 1),)), profile, None, lambda job: (job.job_id,))
    assert [view.packing_label("v100", w) for w in "abc"] == [1, 2, 0]
    assert view.packing_label("v100", "zz") is None and view.packing_label("k80", "a") is None
    solo, pairs = tables(ABC)
    assert GroundTruth(solo, pairs, "v100").packing_labels() == {}
    bad = solo.assign(lucid_label=[0, 3, 1])
    with pytest.raises(ValueError, match=r"solo table row 1: lucid_label of \('v100', 'b'\) is 3"):
        GroundTruth(bad, pairs, "v100")
    mixed = solo.assign(lucid_label=pd.array([0, None, 1], dtype="Int64"))  # a mixed table: a row without one
    assert GroundTruth(mixed, pairs, "v100").packing_labels() == {("v100", "a"): 0, ("v100", "c"): 1}
