"""Command-line config values typed by the workflow's schema (coloc.config)."""

from pathlib import Path

import jsonschema
import yaml

from coloc.config import typed_by_schema

SCHEMA = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.schema.yaml").read_text())
CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())


def with_text(value):
    """What `snakemake --config` hands over for a nested value: every scalar as text."""
    if isinstance(value, dict):
        return {k: with_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [with_text(v) for v in value]
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def test_the_whole_config_given_as_text_comes_back_typed():
    text = with_text(CONFIG)
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(text)  # as snakemake hands it over
    assert typed_by_schema(text, SCHEMA) == CONFIG


def test_scalars_follow_the_schema_type_and_strings_stay_strings():
    schema = {"type": "object", "properties": {
        "n": {"type": "integer"}, "x": {"type": "number"}, "flag": {"type": "boolean"},
        "name": {"type": "string"}, "maybe": {"type": ["integer", "null"]},
        "either": {"oneOf": [{"const": "all"}, {"type": "array", "items": {"type": "integer"}}]}}}
    given = {"n": "3", "x": "2.5", "flag": "true", "name": "007", "maybe": "null", "either": ["1", "2"]}
    assert typed_by_schema(given, schema) == {"n": 3, "x": 2.5, "flag": True, "name": "007", "maybe": None,
                                              "either": [1, 2]}
    assert typed_by_schema({"x": "1e-3"}, schema) == {"x": 0.001}  # YAML 1.1 alone would keep this as text
    assert typed_by_schema({"either": "all"}, schema) == {"either": "all"}


def test_text_that_is_not_the_schema_type_is_left_for_validation_to_report():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}
    assert typed_by_schema({"n": "many", "x": "1.5.2"}, schema) == {"n": "many", "x": "1.5.2"}
    assert typed_by_schema({"n": "1e3"}, schema) == {"n": "1e3"}
    assert typed_by_schema({"n": "2.5"}, schema) == {"n": "2.5"}  # a float is no integer
