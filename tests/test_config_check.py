"""coloc.config.check: every config mistake refused before anything runs, one error naming each by key path."""

import copy
from pathlib import Path

import pytest
import yaml

from coloc import config as cfg
from coloc import policies, predict

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
CI = yaml.safe_load((REPO / "config" / "ci.yaml").read_text())


def merged(base: dict, over: dict) -> dict:
    """``over`` merged into a copy of ``base`` the way Snakemake merges a --configfile (nested dicts key by key)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def mistakes(over: dict, base: dict = DEFAULT) -> str:
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(merged(base, over), SCHEMA)
    return str(err.value)


@pytest.mark.parametrize("config", [DEFAULT, merged(DEFAULT, CI)], ids=["default", "ci"])
def test_the_shipped_configs_pass(config):
    cfg.check(config, SCHEMA)


def test_a_misspelled_section_is_refused_with_the_near_name():
    message = mistakes({"simulaton": {"seeds": [0]}})
    assert "config: 1 mistake(s), nothing was run" in message
    assert "simulaton: unknown key (did you mean 'simulation'?); expected one of ['features', 'mirror'," in message


def test_a_misspelled_key_inside_a_trace_spec_is_named_in_the_spec_it_was_meant_for():
    message = mistakes({"simulation": {"trace_specs": {"poisson": {"n_jobz": 5}}}})
    assert "simulation.trace_specs.poisson.n_jobz: unknown key (did you mean 'n_jobs'?)" in message
    assert "source 'philly'" not in message and message.count("\n") == 1


def test_every_mistake_is_listed_in_one_error():
    message = mistakes({"trace": {"seed": -1}, "profiling": {"log": "../measurements.jsonl"},
                        "simulation": {"traces": ["philly", "alibaba"], "policies": ["fifo", "cloc"]}})
    assert "config: 4 mistake(s)" in message
    assert "trace.seed: -1 is less than the minimum of 0" in message
    assert "profiling.log: '../measurements.jsonl' does not match" in message
    assert "simulation.traces[1]: no spec for trace 'alibaba' in simulation.trace_specs (has ['philly', 'poisson'])" in message
    assert f"simulation.policies[1]: unknown policy 'cloc' in 'cloc'; known: {policies.names()}" in message


@pytest.mark.parametrize("log", ["../x.jsonl", "/tmp/x.jsonl", "data/../x.jsonl", "data/.hidden/x", "x.jsonl",
                                 "data/x; rm -rf data"])
def test_the_profiling_log_stays_under_data(log):
    assert "profiling.log:" in mistakes({"profiling": {"log": log}})


def test_policy_names_come_from_the_registry_not_a_hand_kept_pattern():
    policy_items = SCHEMA["properties"]["simulation"]["properties"]["policies"]["items"]
    assert "coloc-fifo" not in policy_items["pattern"]  # no list of names in the schema
    cfg.check(merged(DEFAULT, {"simulation": {"policies": policies.names()}}), SCHEMA)
    assert "unknown policy 'fifoo'" in mistakes({"simulation": {"policies": ["fifoo"]}})


def test_predictor_names_are_checked_against_the_registry_and_the_predictors_stage():
    pair = cfg.predictor_names("pair")
    message = mistakes({"simulation": {"predictor_norm": "egatt", "predictor_util": "egat",
                                       "policies": ["coloc~lgbn", "fifo~egat"]}})
    assert f"simulation.predictor_norm: unknown pair predictor 'egatt'; known: {pair}" in message
    assert f"simulation.predictor_util: unknown util predictor 'egat'; known: {cfg.predictor_names('util')}" in message
    assert f"simulation.policies[0]: unknown pair predictor 'lgbn' in 'coloc~lgbn'; known: {pair}" in message
    assert "simulation.policies[1]: policy 'fifo' reads no pair predictions, so '~egat' would be ignored" in message


def test_a_predictor_the_simulation_reads_must_be_made_by_the_predictors_stage():
    config = merged(DEFAULT, {"simulation": {"policies": ["coloc~linear", "coloc"]}})
    del config["predictors"]["models"]["linear"]
    config["predictors"]["models"]["egat"]["protocols"] = ["random5"]
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    message = str(err.value)
    assert "simulation.policies[0]: pair predictor 'linear' is not among predictors.models" in message
    assert ("simulation.predictor_norm: predictor 'egat' runs only under protocols ['random5'] "
            "(predictors.models.egat.protocols), not simulation.protocol 'lofo'") in message


def test_the_simulation_protocol_must_be_one_the_predictors_stage_runs():
    message = mistakes({"simulation": {"protocol": "lojo"}})
    assert ("simulation.protocol: 'lojo' is not among predictors.protocols ['random5', 'lofo', 'xdevice'], "
            "so no predictions are made under it") in message


def test_model_run_options_name_only_the_stages_seeds_and_protocols():
    message = mistakes({"predictors": {"models": {"egat": {"seeds": [0, 7], "protocols": ["lofoo"]}}}})
    assert "predictors.models.egat.seeds: [7] not among predictors.seeds [0, 1]" in message
    assert "predictors.models.egat.protocols: ['lofoo'] not among predictors.protocols" in message


def test_a_misspelled_model_option_is_refused():
    message = mistakes({"predictors": {"models": {"lgbm": {"n_estimatorz": 3}}}})
    assert "predictors.models.lgbm:" in message and "'n_estimatorz'" in message


def test_wrong_types_are_named_with_the_alternatives():
    message = mistakes({"trace": {"window": "abc"}, "features": {"names": 5}})
    assert "trace.window: 'abc' is none of: null | array" in message
    assert "features.names: 5 is none of: 'all' | array" in message
