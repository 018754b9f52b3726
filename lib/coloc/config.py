"""The workflow config: scalars given as text on the command line, typed by the schema.

``snakemake --config 'predictors={"workers": 1}'`` hands the workflow the string ``"1"``
inside a nested value, which the schema then rejects. :func:`typed_by_schema` reads such
text as the config file's YAML would, where the schema allows it: as an integer, number,
boolean or null where the schema asks for one; as YAML where the schema says nothing (e.g.
a predictor's options); never where the schema asks for a string (``"null"`` stays text
there unless null is allowed too). Text that is none of these is left for the schema
validation to report.
"""

from __future__ import annotations

import jsonschema
import yaml

_SCALARS = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def typed_by_schema(value, schema: dict):
    """A copy of ``value`` with its text scalars read as YAML where ``schema`` allows it (see above)."""
    schema = schema if isinstance(schema, dict) else {}  # nothing said (or `false`): read as YAML
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return _first_valid(value, schema[key])
    if isinstance(value, dict):
        props, extra = schema.get("properties", {}), schema.get("additionalProperties")
        return {k: typed_by_schema(v, props.get(k, extra)) for k, v in value.items()}
    if isinstance(value, list):
        return [typed_by_schema(v, schema.get("items")) for v in value]
    if isinstance(value, str):
        return _parsed_scalar(value, schema.get("type"))
    return value


def _first_valid(value, branches: list):
    """``value`` typed by the first alternative it then satisfies (unchanged if none)."""
    for branch in branches:
        typed = typed_by_schema(value, branch)
        if jsonschema.Draft202012Validator(branch).is_valid(typed):
            return typed
    return value


def _parsed_scalar(text: str, types):
    types = [types] if isinstance(types, str) else list(types or [])
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(parsed, (dict, list)):
        return text
    if not types:
        return parsed
    if parsed is None and "null" in types:
        return None
    if "string" in types:
        return text
    if isinstance(parsed, str) and "number" in types:  # YAML 1.1 reads 1e-3 (no dot) as text
        try:
            parsed = float(text)
        except ValueError:
            return text
    return parsed if any(_SCALARS[t](parsed) for t in types if t in _SCALARS) else text
