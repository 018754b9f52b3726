"""Property-based tests of the config check (Hypothesis): random wrong types and unknown keys are refused by name.

Starting from the shipped config/config.yaml, one value anywhere in it is replaced by one of
another JSON type, or one unknown key is added to a section whose keys are fixed; the check
must refuse it with a ConfigError naming that key path.
"""

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from coloc import config as cfg

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
SETTINGS = settings(max_examples=80, deadline=None, derandomize=True)
FREE_FORM = ("models", "util_models")  # predictors.<these>.<model>: options the model checks, not the schema


def locations(value, path=()):
    """Every (path, value) in the config, sections and lists included, except inside models' options."""
    yield path, value
    if len(path) >= 3 and path[0] == "predictors" and path[1] in FREE_FORM:
        return
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from locations(child, (*path, key))


LOCATIONS = [(path, value) for path, value in locations(DEFAULT) if path]
CATEGORIES = {
    "null": st.none(), "boolean": st.booleans(), "number": st.integers() | st.floats(allow_nan=False),
    "string": st.text(max_size=6), "array": st.lists(st.text(max_size=3), max_size=2),
    "object": st.dictionaries(st.text(min_size=1, max_size=3), st.integers(), max_size=2),
}


def category(value) -> str:
    if value is None or isinstance(value, bool):
        return "null" if value is None else "boolean"
    return {int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def replaced(config, path, new):
    out = copy.deepcopy(config)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


@st.composite
def wrong_type(draw):
    path, value = draw(st.sampled_from(LOCATIONS))
    other = draw(st.sampled_from(sorted(set(CATEGORIES) - {category(value)})))
    return path, draw(CATEGORIES[other])


@SETTINGS
@given(wrong_type())
def test_a_value_of_another_type_anywhere_is_refused_by_its_key_path(change):
    path, new = change
    config = replaced(DEFAULT, path, new)
    if jsonschema.Draft202012Validator(SCHEMA).is_valid(config):
        return  # the field allows this type too (e.g. null or a list, an int for a number)
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    message = str(err.value)  # the key's path, or an item's inside it (a list where a list is allowed)
    assert f"\n  {cfg.key_path(path)}: " in message or f"\n  {cfg.key_path(path)}[" in message


def fixed_sections(config, schema, path=()):
    """(path, allowed keys) of every section of the config whose schema allows no other keys."""
    if not isinstance(config, dict):
        return
    branches = schema.get("oneOf", [schema])
    branch = next((b for b in branches if b.get("properties", {}).get("source", {}).get("const")
                   in (None, config.get("source"))), branches[0])
    if branch.get("additionalProperties") is False:
        yield path, set(branch.get("properties", {}))
    for key, child in config.items():
        sub = branch.get("properties", {}).get(key, branch.get("additionalProperties"))
        if isinstance(sub, dict):
            yield from fixed_sections(child, sub, (*path, key))


SECTIONS = list(fixed_sections(DEFAULT, SCHEMA))


def test_the_sections_with_fixed_keys_are_the_config_sections():
    paths = {".".join(p) for p, _ in SECTIONS}
    specs = "simulation.scenario_specs"
    assert {"", "trace", "features", "profiling", "predictors", "simulation", "sources.philly_trace",
            f"{specs}.isacpp-testbed", f"{specs}.isacpp-testbed.trace", f"{specs}.isacpp-testbed.sweep",
            f"{specs}.philly-contended.trace", f"{specs}.poisson.trace"} <= paths


@SETTINGS
@given(st.sampled_from(SECTIONS), st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,11}", fullmatch=True))
def test_an_unknown_key_in_any_fixed_section_is_refused_by_name(section, key):
    path, allowed = section
    if key in allowed:
        return
    config = replaced(DEFAULT, (*path, key), 1) if path else {**DEFAULT, key: 1}
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    assert f"\n  {cfg.key_path([*path, key])}: unknown key" in str(err.value)


SPECS = ("simulation", "scenario_specs")
BOUNDED = {  # key path: (lowest accepted, highest accepted), as config/config.schema.yaml bounds them
    ("simulation", "util_bin_s"): (60, 1e7),
    (*SPECS, "isacpp-testbed", "util_bin_s"): (60, 1e7),
    (*SPECS, "poisson", "trace", "median_duration_s"): (1, 1e6),
    (*SPECS, "poisson", "trace", "duration_sigma"): (0, 4),
    (*SPECS, "poisson", "trace", "load"): (0.01, 1000),
    (*SPECS, "poisson", "trace", "n_jobs"): (1, 5_000_000),
    (*SPECS, "poisson", "sweep", "load", 0): (0.01, 1000),
    (*SPECS, "poisson", "seeds", 0): (0, 2 ** 32 - 1),
    (*SPECS, "isacpp-testbed", "trace", "median_duration_s"): (1, 1e6),
    (*SPECS, "isacpp-testbed", "sweep", "interval_s", 0): (0, 1e6),
    (*SPECS, "philly-contended", "trace", "load"): (0.01, 1000),
    ("scheduling_delay", "median_duration_s"): (1, 1e6),
    ("scheduling_delay", "duration_sigma"): (0, 4),
    ("scheduling_delay", "seeds", 0): (0, 2 ** 32 - 1),
    ("scheduling_delay", "queued_jobs", 0): (1, 100_000),
}


@st.composite
def out_of_range(draw):
    path = draw(st.sampled_from(sorted(BOUNDED, key=str)))
    low, high = BOUNDED[path]
    integer = path[-1] == "n_jobs" or path[-2] in ("seeds", "queued_jobs")
    if integer:
        value = draw(st.integers(high + 1, 2 ** 80) | st.integers(-2 ** 80, low - 1))
    else:
        value = draw(st.floats(high, 1e300, exclude_min=True) | st.floats(-1e300, low, exclude_max=True))
    return path, value


@SETTINGS
@given(out_of_range())
def test_a_value_out_of_its_range_is_refused_by_its_key_path(change):
    """Extreme numbers ran for minutes, ran out of memory or lost float precision hours later: refused first."""
    path, new = change
    config = replaced(DEFAULT, path, new)
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    assert f"\n  {cfg.key_path(path)}: " in str(err.value), str(err.value)


@pytest.mark.parametrize("path", sorted(BOUNDED, key=str))
def test_the_bounds_themselves_are_accepted(path):
    for value in BOUNDED[path]:
        config = replaced(DEFAULT, path, value)
        if path[-1] == "interval_s" or path[-2] == "interval_s":
            config = replaced(config, (*SPECS, "isacpp-testbed", "headline"), value)
        if path[-2:] == ("load", 0):
            config = replaced(config, (*SPECS, "poisson", "headline"), value)
        cfg.check(config, SCHEMA)


# Predictor options that size a model or its training (each model's `limits`, LightGBM's LIGHTGBM_LIMITS): a model
# path in predictors.models, the option, (least, most) accepted, where the option goes.
OPTION_LIMITS = [
    ("egat", "hidden", 1, 2048), ("egat", "heads", 1, 8), ("egat", "layers", 1, 8), ("egat", "batch_size", 1, 512),
    ("egat", "max_epochs", 1, 10_000), ("egat", "patience", 1, 10_000), ("egat-profiled", "hidden", 1, 2048),
    ("completion", "iterations", 1, 10_000), ("blend", "grid", 1, 100), ("blend", "inner_k", 2, 20),
    ("lgbm", "params.n_estimators", 1, 100_000), ("lgbm", "params.num_iterations", 1, 100_000),
    ("lgbm-enc", "params.num_leaves", 2, 131_072), ("horus", "map_params.n_estimators", 1, 100_000),
]


def with_option(model: str, option: str, value) -> dict:
    config = copy.deepcopy(DEFAULT)
    options = config["predictors"]["models"][model]
    *nest, key = option.split(".")
    for part in nest:
        options = options.setdefault(part, {})
    options[key] = value
    return config


@SETTINGS
@given(st.sampled_from(OPTION_LIMITS), st.data())
def test_a_predictor_option_out_of_its_range_is_refused_by_model_and_option(limit, data):
    """hidden 1e8 asked for 8e16 bytes hours into a run, n_estimators 1e9 would train for days: refused first."""
    model, option, low, high = limit
    value = data.draw(st.integers(high + 1, 2 ** 70) | st.integers(-2 ** 70, low - 1)
                      | st.floats(allow_nan=False, allow_infinity=False))  # a float is no integer
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(with_option(model, option, value), SCHEMA)
    key = option.rpartition(".")[2]
    assert f"\n  predictors.models.{model}: pair predictor {model!r}: " in str(err.value)
    assert f"option {key} {value!r}; expected an integer from {low} to {high}" in str(err.value)


@pytest.mark.parametrize("limit", OPTION_LIMITS, ids=lambda limit: f"{limit[0]}.{limit[1]}")
def test_a_predictor_options_bounds_are_accepted(limit):
    model, option, low, high = limit
    for value in (low, high):
        cfg.check(with_option(model, option, value), SCHEMA)


@SETTINGS
@given(st.integers(0, 10 ** 7), st.integers(0, 10 ** 7))
def test_a_trace_window_that_keeps_nothing_is_refused(start, length):
    """[100, 5] passed the check and failed in data_tables."""
    config = replaced(DEFAULT, ("trace", "window"), [start + length, start])
    with pytest.raises(cfg.ConfigError, match=rf"\n  trace.window: start {start + length} is not before end {start}"):
        cfg.check(config, SCHEMA)
    length = min(length, 1728000)  # the scenario starts at 1728000 s
    config = replaced(DEFAULT, (*SPECS, "philly-contended", "trace", "end_s"), 1728000 - length)
    with pytest.raises(cfg.ConfigError, match=r"\n  simulation.scenario_specs.philly-contended.trace: start_s 1728000 "
                                              rf"is not before end_s {1728000 - length}"):
        cfg.check(config, SCHEMA)


@SETTINGS
@given(st.integers(1_000_001, 10 ** 15), st.sampled_from(["poisson", "philly-contended", "delay"]))
def test_a_cluster_of_more_gpus_than_the_simulator_is_bounded_for_is_refused(gpus, where):
    """v100:1000000000000 passed the check and ended in a MemoryError with an empty message."""
    path = ("scheduling_delay", "clusters", 1) if where == "delay" else (*SPECS, where, "cluster")
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(replaced(DEFAULT, path, f"v100:{gpus}"), SCHEMA)
    assert (f"\n  {cfg.key_path(path)}: 'v100:{gpus}' has {gpus} GPUs; expected at most 1000000 in all"
            in str(err.value))
