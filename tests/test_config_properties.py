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
from hypothesis import given, settings
from hypothesis import strategies as st

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
