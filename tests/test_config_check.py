"""coloc.config.check: every config mistake refused before anything runs, one error naming each by key path."""

import copy
from pathlib import Path

import pytest
import yaml

from coloc import config as cfg, policies

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
    assert f"simulaton: unknown key (did you mean 'simulation'?); expected one of {sorted(SCHEMA['properties'])}" in message


def test_a_misspelled_key_inside_a_trace_spec_is_named_in_the_spec_it_was_meant_for():
    message = mistakes({"simulation": {"scenario_specs": {"poisson": {"trace": {"n_jobz": 5}}}}})
    assert "simulation.scenario_specs.poisson.trace.n_jobz: unknown key (did you mean 'n_jobs'?)" in message
    assert "source 'philly'" not in message and message.count("\n") == 1
    message = mistakes({"simulation": {"scenario_specs": {"isacpp-testbed": {"trace": {"group_sise": 2}}}}})
    assert "simulation.scenario_specs.isacpp-testbed.trace.group_sise: unknown key (did you mean 'group_size'?)" in message


def test_every_mistake_is_listed_in_one_error():
    message = mistakes({"trace": {"seed": -1}, "profiling": {"log": "../measurements.jsonl"},
                        "simulation": {"scenarios": ["poisson", "alibaba"],
                                       "scenario_specs": {"poisson": {"policies": ["fifo", "cloc"]}}}})
    assert "config: 4 mistake(s)" in message
    assert "trace.seed: -1 is less than the minimum of 0" in message
    assert "profiling.log: '../measurements.jsonl' does not match" in message
    assert ("simulation.scenarios[1]: no spec for scenario 'alibaba' in simulation.scenario_specs "
            f"(has {sorted(DEFAULT['simulation']['scenario_specs'])})") in message
    assert (f"simulation.scenario_specs.poisson.policies[1]: unknown policy 'cloc' in 'cloc'; "
            f"known: {policies.names()}") in message


@pytest.mark.parametrize("log", ["../x.jsonl", "/tmp/x.jsonl", "data/../x.jsonl", "data/.hidden/x", "x.jsonl",
                                 "data/x; rm -rf data"])
def test_the_profiling_log_stays_under_data(log):
    assert "profiling.log:" in mistakes({"profiling": {"log": log}})


def test_policy_names_come_from_the_registry_not_a_hand_kept_pattern():
    spec = SCHEMA["properties"]["simulation"]["properties"]["scenario_specs"]["additionalProperties"]
    assert "coloc-fifo" not in spec["properties"]["policies"]["items"]["pattern"]  # no list of names in the schema
    cfg.check(merged(DEFAULT, on_poisson(policies=policies.names())), SCHEMA)
    assert "unknown policy 'fifoo'" in mistakes(on_poisson(policies=["fifoo"]))


def on_poisson(**keys) -> dict:
    """A config override of the poisson scenario's keys."""
    return {"simulation": {"scenario_specs": {"poisson": keys}}}


def test_predictor_names_are_checked_against_the_registry_and_the_predictors_stage():
    pair = cfg.predictor_names("pair")
    util = cfg.predictor_names("util")
    message = mistakes(merged({"simulation": {"predictor_norm": "egatt", "predictor_util": "egat"}},
                              on_poisson(policies=["coloc~lgbn", "fifo~egat", "horus~egat", "horus~mean"])))
    where = "simulation.scenario_specs.poisson.policies"
    assert f"simulation.predictor_norm: unknown pair predictor 'egatt'; known: {pair}" in message
    assert f"simulation.predictor_util: unknown util predictor 'egat'; known: {util}" in message
    assert f"{where}[0]: unknown pair predictor 'lgbn' in 'coloc~lgbn'; known: {pair}" in message
    assert f"{where}[1]: policy 'fifo' reads no predictions a '~' can choose, so '~egat' would be ignored" in message
    # horus reads utilization only: its '~' names a utilization predictor
    assert f"{where}[2]: unknown utilization predictor 'egat' in 'horus~egat'; known: {util}" in message
    assert f"{where}[3]" not in message


def test_a_predictor_the_simulation_reads_must_be_made_by_the_predictors_stage():
    config = merged(DEFAULT, on_poisson(policies=["coloc~linear", "coloc", "horus~horus-implied"]))
    del config["predictors"]["models"]["linear"]
    del config["predictors"]["util_models"]["horus-implied"]
    config["predictors"]["models"]["egat"]["protocols"] = ["random5"]
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    message = str(err.value)
    assert "simulation.scenario_specs.poisson.policies[0]: pair predictor 'linear' is not among predictors.models" in message
    assert ".policies[6]: util predictor 'horus-implied' is not among predictors.util_models" in message
    assert ("simulation.predictor_norm: predictor 'egat' runs only under protocols ['random5'] "
            "(predictors.models.egat.protocols), not simulation.protocol 'lofo'") in message


def test_a_policys_at_protocol_is_checked_against_the_stage_and_the_predictor_it_reads():
    config = merged(DEFAULT, on_poisson(policies=["coloc@random5", "coloc@lofo-probe-5", "fifo@random5",
                                                   "isacpp~egat-profiled@xdevice", "isacpp~egat-profiled@random5"]))
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    message = str(err.value)
    assert "coloc@random5" not in message  # egat runs under random5
    assert ("simulation.scenario_specs.poisson.policies[1]: protocol 'lofo-probe-5' of 'coloc@lofo-probe-5' is not among "
            "predictors.protocols") in message
    assert "policies[2]: policy 'fifo' reads no predictions, so '@random5' would be ignored" in message
    assert ("policies[3]: predictor 'egat-profiled' runs only under protocols ['lofo'] "
            "(predictors.models.egat-profiled.protocols), not protocol 'xdevice'") in message
    # on pairs egat-profiled predicts what egat does: the default config runs it under lofo only
    assert ("policies[4]: predictor 'egat-profiled' runs only under protocols ['lofo'] "
            "(predictors.models.egat-profiled.protocols), not protocol 'random5'") in message


def test_the_simulation_protocol_must_be_one_the_predictors_stage_runs():
    message = mistakes({"simulation": {"protocol": "lofo-probe-5"}})
    assert (f"simulation.protocol: 'lofo-probe-5' is not among predictors.protocols {DEFAULT['predictors']['protocols']}, "
            "so no predictions are made under it") in message


def test_model_run_options_name_only_the_stages_seeds_and_protocols():
    message = mistakes({"predictors": {"models": {"egat": {"seeds": [0, 7], "protocols": ["lofoo"]}}}})
    assert "predictors.models.egat.seeds[1]: 7 not among predictors.seeds [0]" in message
    assert "predictors.models.egat.protocols[0]: 'lofoo' not among predictors.protocols" in message


def test_a_misspelled_model_option_is_refused():
    message = mistakes({"predictors": {"models": {"lgbm": {"n_estimatorz": 3}}}})
    assert "predictors.models.lgbm:" in message and "'n_estimatorz'" in message


def test_wrong_types_are_named_with_the_alternatives():
    message = mistakes({"trace": {"window": "abc"}, "features": {"names": 5}})
    assert "trace.window: 'abc' is none of: null | array" in message
    assert "features.names: 5 is none of: 'all' | array" in message


def test_a_scenario_is_checked_against_its_trace_cluster_and_sweep():
    config = merged(DEFAULT, {"simulation": {"scenario_specs": {
        "isacpp-testbed": {"cluster": "k80:4,a100:4", "headline": 7},
        "poisson": {"headline": 1.0}, "philly-contended": {"headline": 16, "cluster": "k80:4,v100:4"}}}})
    specs = config["simulation"]["scenario_specs"]
    specs["poisson"]["sweep"], specs["philly-contended"]["sweep"] = {"interval_s": [1.0]}, {"gpus": [8, 16]}
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    message = str(err.value)
    where = "simulation.scenario_specs"
    assert (f"{where}.isacpp-testbed.cluster: device types ['a100'] in 'k80:4,a100:4' are not in Gavel's data "
            f"(has ['k80', 'p100', 'v100'])") in message
    assert f"{where}.isacpp-testbed.headline: 7 is not one of the sweep's interval_s points [0, 20, 60, 180]" in message
    assert f"{where}.poisson.sweep: key 'interval_s' does not apply to a 'poisson' trace; expected one of ['load', 'gpus']" in message
    assert f"{where}.philly-contended.sweep: sweeping gpus needs a cluster of one device type, not 'k80:4,v100:4'" in message
    # the claims map's coloc setting is the scenario's own run: its cluster must follow the scenario's
    assert ("claims.groups.isacpp.factors.cluster.coloc: 'v100:8,p100:4,k80:4' is not the scenario's own cluster "
            "'k80:4,a100:4'") in message
    assert "config: 5 mistake(s)" in message


def test_a_scenario_sweeps_exactly_one_key():
    message = mistakes(on_poisson(sweep={"gpus": [8]}))  # merged: load and gpus
    assert "simulation.scenario_specs.poisson.sweep:" in message and "has too many properties" in message


def test_the_config_refuses_sets_of_unknown_job_types_repeated_sets_sizes_measured_in_full_and_no_pairs():
    names = ["lm-wikitext2-b5", "squeezenet-cifar10-b32"]
    lm, sq = names
    message = mistakes({"profiling": {"workloads": names, "set_sizes": [2, 3],
                                      "sets": [[lm, sq, "resnet18-cifar10-b16"], [sq, lm, lm], [lm, lm, sq]]}})
    assert "profiling.sets[0]: ['resnet18-cifar10-b16'] not among profiling.workloads" in message
    assert "profiling.sets[2]: the same set as profiling.sets[1]" in message
    assert "profiling.sets[1]: profiling.set_sizes [2, 3] measures every set of 3 already" in message
    message = mistakes({"profiling": {"workloads": names, "set_sizes": [4], "sets": [[lm, lm, sq]]}})
    assert "profiling.set_sizes [4] must include 2" in message
    assert "profiling.sets[0]: " in mistakes({"profiling": {"sets": [[lm, sq]]}})  # the schema: 3 or more
    assert "profiling.sets" in mistakes({"profiling": {"sets": [["Not A Name", lm, lm]]}})


def test_what_the_notebooks_refused_hours_later_is_refused_before_anything_runs():
    """Each passed the check and failed only when its notebook ran: a Philly max_job_gpus (the trace builder
    refuses it), a gpu_mix wider than the cluster, unknown families, the probing scenario's unknown names,
    a scheduling-delay cluster with a device Gavel did not measure."""
    where = "simulation.scenario_specs"
    assert f"{where}.philly-contended.trace.max_job_gpus: unknown key" in mistakes(
        {"simulation": {"scenario_specs": {"philly-contended": {"trace": {"max_job_gpus": 4}}}}})
    message = mistakes({
        "simulation": {"scenario_specs": {
            "philly-contended": {"trace": {"families": ["nosuch"]}},
            "poisson": {"cluster": "v100:4", "trace": {"gpu_mix": {"8": 1}}}}},
        "probing": {"predictor": "nosuch", "new_families": ["nosuch"], "scenario": "nosuch"},
        "scheduling_delay": {"clusters": ["a100:4"]}})
    assert (f"{where}.philly-contended.trace.families: families ['nosuch'] are not among Gavel's job types' "
            f"families ['a3c', 'cyclegan', 'lm',") in message
    assert (f"{where}.poisson.trace.gpu_mix: GPU counts [8] are more than the 4 GPUs of the widest device type in "
            f"'v100:4'") in message
    assert "probing.scenario: no spec for scenario 'nosuch' in simulation.scenario_specs" in message
    assert "probing.new_families: families ['nosuch'] are not among" in message
    assert "probing.predictor: unknown pair predictor 'nosuch'; known: [" in message
    assert "scheduling_delay.clusters[0]: device types ['a100'] in 'a100:4' are not in Gavel's data" in message
    assert "config: 6 mistake(s)" in message


def test_a_gpu_mix_is_checked_against_the_smallest_swept_cluster_and_the_delay_clusters():
    config = merged(DEFAULT, {"simulation": {"scenario_specs": {"poisson": {"headline": 64}}},
                              "scheduling_delay": {"clusters": ["k80:2,v100:2"]}})
    config["simulation"]["scenario_specs"]["poisson"]["sweep"] = {"gpus": [2, 64]}
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    message = str(err.value)
    assert "poisson.trace.gpu_mix: GPU counts [4] are more than the 2 GPUs of the widest device type in 'v100:64 swept to 2 GPUs'" in message
    assert "scheduling_delay.gpu_mix: GPU counts [4] are more than the 2 GPUs of the widest device type in 'k80:2,v100:2'" in message


def test_a_datasets_own_models_and_protocols_are_checked_before_anything_runs():
    message = mistakes({"predictors": {"dataset_models": {"lucid": ["mean", "nosuch"]},
                                       "dataset_protocols": {"lucid": ["random5", "lofo-probe-5"]}}})
    assert "predictors.dataset_models.lucid[1]: 'nosuch' not among predictors.models" in message
    assert "predictors.dataset_protocols.lucid[1]: 'lofo-probe-5' not among predictors.protocols" in message


def lucid_spec(**over) -> dict:
    """The default run's RTX 3090 testbed scenario with `over` set (maps merge, lists replace)."""
    return merged(DEFAULT["simulation"]["scenario_specs"]["isacpp-testbed-3090"], over)


def test_a_scenario_on_lucids_data_is_checked_against_lucids_devices_families_models_and_protocols():
    where = "simulation.scenario_specs.isacpp-testbed-3090"
    message = mistakes({"simulation": {"scenario_specs": {"isacpp-testbed-3090": lucid_spec(
        cluster="v100:8", trace={"families": ["recommendation"]}, predictor_norm="egat")}}})
    assert f"{where}.cluster: device types ['v100'] in 'v100:8' are not in Lucid's data (has ['rtx3090'])" in message
    assert f"{where}.trace.families: families ['recommendation'] are not among Lucid's" in message
    # the predictor the scenario's policies read must be among lucid's own pair models
    assert f"{where}.predictor_norm: pair predictor 'egat' is not among predictors.dataset_models.lucid" in message
    # a Gavel scenario keeps refusing the 3090, and a lucid one takes Lucid's own families
    message = mistakes({"simulation": {"scenario_specs": {"isacpp-testbed": {"cluster": "rtx3090:8"}}}})
    assert "are not in Gavel's data" in message
    cfg.check(merged(DEFAULT, {"simulation": {"scenario_specs": {"isacpp-testbed-3090": lucid_spec(
        trace={"families": ["dcgan", "neumf"]})}}}), SCHEMA)
    # the simulation protocol must be one lucid runs, when a 3090 scenario's policies read predictions
    message = mistakes({"predictors": {"dataset_protocols": {"lucid": ["random5"]}}})
    assert (f"{where}: its policies read lucid's predictions under simulation.protocol 'lofo', which "
            f"predictors.dataset_protocols.lucid ['random5'] does not run") in message
    assert "unknown pair predictor 'nope'" in mistakes(
        {"simulation": {"scenario_specs": {"isacpp-testbed-3090": lucid_spec(predictor_norm="nope")}}})
    assert "dataset" in mistakes({"simulation": {"scenario_specs": {"isacpp-testbed-3090": lucid_spec(
        dataset="philly")}}})
