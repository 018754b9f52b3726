"""A policy entry ('<policy>[(<param>=<value>,...)][~<predictor>][@<protocol>]') is parsed once, carries the
parameters a policy declares to its constructor, and names them in every table (coloc.policies.entry)."""
import copy
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from sim_cases import ABC, tables

from coloc import config as cfg, policies
from coloc.policies import base
from coloc.policies.entry import LABEL_CHARS, PATTERN, PolicyEntry
from coloc.studies import experiment, scenarios

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.mark.parametrize("text", ["fifo", "coloc~lgbm", "coloc@random5", "coloc~lgbm@random5", "coloc-fifo",
                                  "coloc(order=fifo)", "coloc(order=fifo,risk=0.5)~lgbm@random5",
                                  "coloc(wait_rule=false,lookahead=null,min_combined=1e-05,max_jobs_per_gpu=-3)",
                                  "isacpp@profiled-pairs"])
def test_a_canonical_entry_reads_back_as_written(text):
    entry = PolicyEntry.parse(text)
    assert entry.label == str(entry) == text
    assert PolicyEntry.parse(entry.label) == entry
    assert re.fullmatch(PATTERN, text) and re.fullmatch(LABEL_CHARS, text)


def test_parameter_values_are_read_as_a_yaml_config_reads_a_plain_scalar():
    entry = PolicyEntry.parse("coloc(order=fifo,risk=0.5,wait_rule=false,lookahead=null,max_jobs_per_gpu=3)~lgbm")
    assert entry == PolicyEntry("coloc", (("order", "fifo"), ("risk", 0.5), ("wait_rule", False),
                                          ("lookahead", None), ("max_jobs_per_gpu", 3)), "lgbm", "")
    assert type(entry.param_dict()["max_jobs_per_gpu"]) is int and entry.param_dict()["wait_rule"] is False
    # another spelling of the same number reads as the same value, written back one way (the config asks for that)
    assert PolicyEntry.parse("coloc(risk=1e-3)").label == "coloc(risk=0.001)"
    assert PolicyEntry.parse("coloc(risk=5.)").label == "coloc(risk=5.0)"


def test_the_tilde_names_the_pair_predictor_or_on_a_utilization_reader_its_utilization_predictor():
    assert PolicyEntry.parse("coloc~lgbm").predictors("egat", "horus") == ("lgbm", "horus")
    assert PolicyEntry.parse("isacpp").predictors("egat", "horus") == ("egat", "horus")
    assert PolicyEntry.parse("isacpp~blend").predictors("egat", "horus") == ("blend", "horus")  # reads both: pairs
    assert PolicyEntry.parse("horus~horus-implied").predictors("egat", "horus") == ("egat", "horus-implied")
    assert PolicyEntry.parse("horus~horus-implied@random5").predictors("egat", "horus") == ("egat", "horus-implied")
    assert PolicyEntry.parse("coloc(order=fifo)~lgbm@random5").predictors("egat", "horus") == ("lgbm", "horus")


def test_an_at_suffix_names_the_protocol_of_the_predictions_read():
    assert PolicyEntry.parse("coloc-online@random5").protocol_or("lofo") == "random5"
    assert PolicyEntry.parse("coloc~lgbm").protocol_or("lofo") == "lofo"
    assert PolicyEntry.parse("coloc(order=fifo)@lojo").protocol == "lojo"


@pytest.mark.parametrize("text, expected", [
    ("coloc@", "expected '<policy>[(<param>=<value>,...)][~<predictor>][@<protocol>]'"),
    ("coloc~", "expected '<policy>"),
    ("coloc~lgbm(order=fifo)", "expected '<policy>"),  # parameters follow the name
    ("coloc(order=fifo", "expected '<policy>"),
    ("coloc()", "parameter ''; expected <name>=<value>"),
    ("coloc(order)", "parameter 'order'; expected <name>=<value>"),
    ("coloc(order=fifo, risk=1)", "parameter ' risk=1'; expected <name>=<value>"),
    ("coloc(order=fifo,order=sjf)", "parameter name 'order'; expected a name ([A-Za-z_][A-Za-z0-9_]*), each once"),
    ("coloc(1x=2)", "parameter '1x=2'; expected <name>=<value>"),
])
def test_a_malformed_entry_is_refused_naming_it_and_what_was_expected(text, expected):
    with pytest.raises(ValueError, match=f"policy entry '{re.escape(text)}'|policy entry 'coloc'") as err:
        PolicyEntry.parse(text)
    assert expected in str(err.value)


def test_an_entry_that_would_not_read_back_as_itself_cannot_be_made():
    with pytest.raises(ValueError, match="parameter risk=inf; expected true/false, null"):
        PolicyEntry("coloc", (("risk", float("inf")),))
    with pytest.raises(ValueError, match="parameter order='2'; expected"):  # the text '2' would read back as 2
        PolicyEntry("coloc", (("order", "2"),))
    with pytest.raises(ValueError, match="policy entry predictor 'a b'"):
        PolicyEntry("coloc", (), "a b")


def test_the_schema_pattern_is_the_parsers():
    spec = SCHEMA["properties"]["simulation"]["properties"]["scenario_specs"]["additionalProperties"]
    assert spec["properties"]["policies"]["items"]["pattern"] == PATTERN


def test_coloc_fifo_is_a_preset_of_coloc_with_fifo_order():
    fifo, plain = policies.get("coloc-fifo"), policies.get("coloc")
    assert type(fifo) is type(plain) and (fifo.order, plain.order) == ("fifo", "sjf")
    assert fifo.name == "coloc-fifo" and policies.info("coloc-fifo") == policies.info("coloc")
    assert "order" in policies.parameters("coloc") and "order" not in policies.parameters("coloc-fifo")
    assert policies.parameter_problems("coloc-fifo", {"order": "sjf"}) == [
        "policy 'coloc-fifo' is a preset that sets order='fifo'; a parameter it sets cannot be given"]
    assert experiment.make_policy("coloc-fifo(risk=0.5)", None).risk == 0.5


def test_a_declaration_the_constructor_does_not_take_or_a_bad_preset_is_refused_at_registration(monkeypatch):
    policies.names()
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(base, "_PRESETS", dict(base._PRESETS))

    class Odd(base.Policy):
        parameters = {"width": int}

        def __init__(self, depth: int = 1):
            self.depth = depth

    with pytest.raises(ValueError, match=r"policy 'odd' declares parameter 'width', which its constructor "
                                         r"Odd\(depth: int = 1\) does not take"):
        base.register("odd")(Odd)

    class Vague(base.Policy):
        parameters = {"width": "wide"}

        def __init__(self, width="wide"):
            self.width = width

    with pytest.raises(ValueError, match="parameter 'width' declared as 'wide'; expected a type"):
        base.register("vague")(Vague)
    with pytest.raises(ValueError, match="preset 'coloc-wide': policy 'coloc-wide' has no parameter 'width'"):
        base.register("coloc-wide", width=3)(type(policies.get("coloc")))
    with pytest.raises(ValueError, match="preset 'coloc-odd': policy 'coloc-odd': parameter 'order' = 'odd'; "
                                         r"expected one of \['sjf', 'fifo'\]"):
        base.register("coloc-odd", order="odd")(type(policies.get("coloc")))


def test_a_policy_entry_with_parameters_it_does_not_declare_is_not_built():
    with pytest.raises(ValueError, match=re.escape("policy entry 'coloc(ordre=fifo)': policy 'coloc' has no "
                                                   "parameter 'ordre'; it takes: order (one of ['sjf', 'fifo']), "
                                                   "risk (a number)")):
        experiment.make_policy("coloc(ordre=fifo)", None)
    with pytest.raises(ValueError, match="parameter 'wait_rule' = 1; expected true or false"):
        experiment.make_policy("coloc(wait_rule=1)", None)
    with pytest.raises(ValueError, match="parameter 'lookahead' = 0.5; expected an integer or null"):
        experiment.make_policy("coloc(lookahead=0.5)", None)
    assert experiment.make_policy("coloc(lookahead=null,risk=2)", None).lookahead is None


# A toy policy with one declared parameter, in a module of its own: whole GPUs, one job each, in the order its
# parameter says (oldest first, or newest first).
TOY_POLICY = '''
"""Test helper: a policy with a declared parameter, in a module of its own."""
from coloc.policies.base import Policy, fill_idle, register


@register("zz-order")
class ZzOrder(Policy):
    shares_gpus = False
    parameters = {"newest_first": bool}

    def __init__(self, newest_first: bool = False):
        self.newest_first = newest_first

    def queue_key(self, job):
        return (-job.submit_time, -job.job_id) if self.newest_first else (job.submit_time, job.job_id)

    def schedule(self, view):
        fill_idle(view)
'''


@pytest.fixture
def toy_policy_module(policy_module):
    """The toy policy's module in the package's search path (a temporary folder), removed afterwards."""
    policy_module("zz_order_policy", textwrap.dedent(TOY_POLICY))
    return "zz-order"


def with_policies(*entries) -> dict:
    out = copy.deepcopy(DEFAULT)
    out["simulation"]["scenario_specs"]["poisson"]["policies"] = ["fifo", *entries]
    return out


def test_the_config_check_takes_a_toy_policys_declared_parameters_and_refuses_others(toy_policy_module):
    cfg.check(with_policies("zz-order", "zz-order(newest_first=true)"), SCHEMA)
    where = "simulation.scenario_specs.poisson.policies"
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(with_policies("zz-order(newest=true)", "zz-order(newest_first=3)", "zz-order(newest_first=True)",
                                "coloc(order=lifo)"), SCHEMA)
    message = str(err.value)
    assert "config: 4 mistake(s)" in message
    assert (f"{where}[1]: policy 'zz-order' has no parameter 'newest'; it takes: newest_first (true or false) "
            f"(in 'zz-order(newest=true)')") in message
    assert (f"{where}[2]: policy 'zz-order': parameter 'newest_first' = 3; expected true or false "
            f"(in 'zz-order(newest_first=3)')") in message
    assert (f"{where}[3]: policy 'zz-order': parameter 'newest_first' = 'True'; expected true or false "
            f"(in 'zz-order(newest_first=True)')") in message  # YAML's plain True is text here: no spaces, lower case
    assert (f"{where}[4]: policy 'coloc': parameter 'order' = 'lifo'; expected one of ['sjf', 'fifo'] "
            f"(in 'coloc(order=lifo)')") in message


def test_the_config_check_asks_for_the_canonical_label(toy_policy_module):
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(with_policies("coloc(risk=1e-3)"), SCHEMA)
    assert ("simulation.scenario_specs.poisson.policies[1]: 'coloc(risk=1e-3)' is written 'coloc(risk=0.001)' in its "
            "canonical form, the label of its runs; write it so") in str(err.value)
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(with_policies("zz-order(newest_first = true)"), SCHEMA)
    assert ("simulation.scenario_specs.poisson.policies[1]: 'zz-order(newest_first = true)' does not match"
            in str(err.value))


def test_a_toy_policys_parameter_reaches_its_runs_and_names_them(toy_policy_module):
    """Six jobs arrive at once on one GPU: the parameter decides the order they run in, and the label names it."""
    solo, pairs = tables(ABC)
    spec = {"trace": {"source": "testbed", "n_jobs": 6, "group_size": 6, "median_duration_s": 100.0},
            "cluster": "v100:1", "gpus_per_node": 1, "policies": ["zz-order", "zz-order(newest_first=true)"],
            "seeds": [0], "sweep": {"interval_s": [0]}, "headline": 0}
    settings = {"reference_device": "v100", "max_jobs_per_gpu": 2, "restart_cost_s": 30.0, "protocol": "lofo",
                "predictor_norm": "p", "predictor_util": "h", "util_bin_s": 100.0}
    started = {}
    for policy in spec["policies"]:
        tables_ = scenarios.run_policy("t", policy, spec, settings, solo, pairs, None, log=lambda _: None)
        jobs, summary = tables_["jobs"], tables_["summary"]
        assert set(jobs["policy"]) == set(summary["policy"]) == {policy}
        started[policy] = list(jobs.sort_values("start_time")["job_id"])
    assert started["zz-order"] == [0, 1, 2, 3, 4, 5]
    assert started["zz-order(newest_first=true)"] == [5, 4, 3, 2, 1, 0]
