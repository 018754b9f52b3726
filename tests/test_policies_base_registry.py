"""Policies are registered once, by their decorator, and found by importing every module of the package."""
import sys
import textwrap

import pandas as pd
import pytest
from sim_cases import ABC, predictions, tables

from coloc import policies
from coloc.policies import base
from coloc.studies import experiment

NEW_POLICY = '''
"""Test helper: a policy in a module of its own, found with no other edit."""
from coloc.policies.base import Policy, fill_idle, register


@register("zz-probe")
class ZzProbe(Policy):
    kind = "predictive"
    needs = ("norm",)
    optional = ("util",)

    def schedule(self, view):
        fill_idle(view)
'''


@pytest.fixture
def new_policy_module(policy_module):
    """A new module in the package's search path (a temporary folder), removed afterwards."""
    return policy_module("zz_probe_policy", textwrap.dedent(NEW_POLICY))


def test_a_policy_in_a_new_module_is_found_with_no_other_edit(new_policy_module):
    assert new_policy_module not in sys.modules
    assert "zz-probe" in policies.names()
    assert policies.info("zz-probe") == {"kind": "predictive", "needs": ("norm",), "optional": ("util",)}
    assert experiment.prediction_files("zz-probe~lgbm") == ["predictions", "utilization"]
    # and it runs, through the same entry point as the workflow's simulate rule
    solo, pairs = tables(ABC)
    table = pd.DataFrame({"job_id": range(20), "submit_time": [10.0 * i for i in range(20)], "duration": 100.0,
                          "num_gpus": 1, "workload": "a", "cluster": "c"})
    config = experiment.RunConfig("t", "zz-probe", 0, "v100:2", 1.0, predictor_norm="hand")
    _, jobs, summary = experiment.run(config, {"source": "philly", "assign": "uniform"}, solo, pairs, table,
                                      predictions(ABC))
    assert len(jobs) == 20 and summary["kind"].iloc[0] == "predictive"


def test_every_policy_declares_a_known_kind_and_needs():
    for name in policies.names():
        declared = policies.info(name)
        assert declared["kind"] in policies.KINDS
        assert set(declared["needs"]) | set(declared["optional"]) <= set(policies.NEEDS)
    assert policies.prediction_needs("isacpp") == ("norm",)  # its contention is solo over co-located use: no solo util
    assert policies.prediction_needs("horus") == ("util",)
    assert policies.prediction_needs("oracle") == policies.prediction_needs("fifo") == ()
    assert experiment.prediction_files("coloc~blend") == ["predictions"]
    with pytest.raises(KeyError, match="unknown policy 'nope'; known: \\["):
        policies.info("nope")


def test_a_registration_with_an_unknown_kind_or_need_is_refused(monkeypatch):
    policies.names()
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))

    class Odd(base.Policy):
        needs = ("durations",)

    with pytest.raises(ValueError, match="policy 'odd': kind 'baseline' and needs \\['durations'\\]"):
        base.register("odd")(Odd)
    with pytest.raises(ValueError, match="registered twice"):
        base.register("fifo")(base.Policy)
