"""The workflow config: typed by the schema, then checked before anything runs.

:func:`check` refuses a config with mistakes in one :class:`ConfigError` naming each by key
path: every schema violation, and the cross-checks between sections (policy and predictor
names against their registries, the simulation's protocol and predictors against those the
predictors stage makes, every trace with a spec).

``snakemake --config 'predictors={"workers": 1}'`` hands the workflow the string ``"1"``
inside a nested value, which the schema then rejects. :func:`typed_by_schema` reads such
text as the config file's YAML would, where the schema allows it: as an integer, number,
boolean or null where the schema asks for one; as YAML where the schema says nothing (e.g.
a predictor's options); never where the schema asks for a string (``"null"`` stays text
there unless null is allowed too). Text that is none of these is left for the schema
validation to report.
"""

from __future__ import annotations

import difflib

import jsonschema
import yaml

from coloc import datasets

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


# ---------------------------------------------------------------------------- checks before anything runs


class ConfigError(ValueError):
    """The workflow config has mistakes; the message lists every one by key path."""


MAX_VALUES = 100_000  # values in a config, written out; the shipped ones have under 600


def check_size(config, limit: int = MAX_VALUES) -> None:
    """Refuse a config of more than ``limit`` values counted as written out (each use of a YAML alias counts its
    values again), before anything walks it: 1.4 KB of aliases expands to 1e9 values."""
    stack, count = [config], 0
    while stack:
        value = stack.pop()
        count += 1
        if count > limit:
            raise ConfigError(f"config: more than {limit} values once YAML aliases are expanded (the shipped configs "
                              f"have under 600); nothing was run. Write the values out, without anchors or aliases")
        stack.extend(value.values() if isinstance(value, dict) else value if isinstance(value, list) else ())


def check(config: dict, schema: dict) -> None:
    """Refuse a config with mistakes, listing every one by key path in one :class:`ConfigError`.

    The schema's (every violation, not only the first; an unknown key is named with the keys
    allowed there), and the cross-checks of :func:`cross_problems`, run where the sections they
    read (``simulation``, ``predictors``, ``probing``, ``scheduling_delay``, ``claims``) pass the schema.
    """
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(config),
                    key=lambda e: [str(p) for p in e.absolute_path])
    problems = [line for error in errors for line in _lines(error)]
    read = {"simulation", "predictors", "probing", "scheduling_delay", "claims"}  # the sections the cross-checks read
    if not {error.absolute_path[0] for error in errors if error.absolute_path} & read:
        problems += cross_problems(config)
    if problems:
        raise ConfigError(f"config: {len(problems)} mistake(s), nothing was run:\n  " + "\n  ".join(problems))


def key_path(parts) -> str:
    """A location in the config as text: ``simulation.policies[2]``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _lines(error: jsonschema.ValidationError) -> list[str]:
    """One error of the schema as lines naming the key path (an unknown key: one line each)."""
    where = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        lines = []
        for key in sorted(set(error.instance) - set(allowed), key=str):
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            lines.append(f"{key_path([*where, key])}: unknown key{hint}; expected one of {allowed}")
        return lines
    if error.validator in ("oneOf", "anyOf") and error.context:
        return _alternative_lines(error, where)
    described = error.schema.get("description") if isinstance(error.schema, dict) else None
    return [f"{key_path(where) or '(top level)'}: {error.message}" + (f" ({described})" if described else "")]


def _alternative_lines(error: jsonschema.ValidationError, where: list) -> list[str]:
    """A value that fits none of a oneOf: the errors of the alternative it was meant for, where one is."""
    branches: dict[int, list] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0], []).append(sub)
    fitting = [subs for subs in branches.values() if not any(_rules_out(sub) for sub in subs)]
    if len(fitting) == 1:
        return [line for sub in fitting[0] for line in _lines(sub)]
    keys = set.intersection(*({tuple(sub.relative_path) for sub in subs if _rules_out(sub)}
                              for subs in branches.values())) - {()}
    if keys and not fitting:  # every alternative refuses the same key's value (e.g. a trace spec's source)
        key = min(keys)
        allowed = [sub.validator_value for subs in branches.values() for sub in subs
                   if tuple(sub.relative_path) == key and sub.validator == "const"]
        return [f"{key_path([*where, *key])}: {error.instance[key[0]]!r} is none of: "
                f"{' | '.join(map(repr, allowed)) or 'the alternatives'}"]
    alternatives = " | ".join(_summary(branch) for branch in error.validator_value)
    return [f"{key_path(where) or '(top level)'}: {error.instance!r:.80} is none of: {alternatives}"]


def _rules_out(error: jsonschema.ValidationError) -> bool:
    """An alternative of a oneOf is not the one meant: its type, or a constant of one of its keys (the
    discriminator, e.g. a trace spec's source), fails. Any other key's error is a mistake in the one meant."""
    return (error.validator == "type" and not error.relative_path) or (
        error.validator == "const" and len(error.relative_path) <= 1)


def _summary(branch: dict) -> str:
    if "const" in branch:
        return repr(branch["const"])
    source = branch.get("properties", {}).get("source", {}).get("const")
    return str(branch.get("type", "a value")) + (f" with source {source!r}" if source else "")


def cross_problems(config: dict) -> list[str]:
    """Mistakes between the sections of a config the schema accepts (empty if none).

    * ``simulation.scenarios``: each has a spec in ``simulation.scenario_specs``.
    * Each scenario spec (:func:`_scenario_problems`): its policies (``<policy>[(<param>=<value>,...)]
      [~<predictor>][@<protocol>]``, coloc.policies.entry) are registered (:func:`coloc.policies.names`), in the
      canonical form of their label, with parameters the policy declares, of the declared type; a ``~predictor``
      names a pair predictor on a policy that reads pair predictions, a utilization predictor on one that reads
      utilization only (horus), and nothing else; an ``@protocol`` goes only on a policy that reads predictions;
      its ``dataset`` is a registered one the simulator runs on (:func:`coloc.datasets.simulated`); its cluster
      parses and has only its dataset's device types (Gavel's K80/P100/V100; Lucid's RTX 3090 for
      ``dataset: lucid``); its swept key suits its trace (load: philly, poisson; interval_s: testbed; gpus: a
      cluster of one device type); its headline is one of the sweep's points; its ``world`` (and
      ``simulation.world``) an interference world (``measured``, ``none``, ``flat:<s>``;
      coloc.sim.interference.parse_world).
    * ``simulation.predictor_norm`` is a registered pair predictor, ``simulation.predictor_util`` a
      utilization predictor, ``simulation.protocol`` (and each ``@protocol``) one of ``predictors.protocols``.
      Each predictor a simulated policy reads (the scenario's own ``predictor_norm`` / ``predictor_util`` where
      it sets them) is configured in the predictors stage, runs under the protocol the policy reads and, for
      its scenario's dataset, is among that dataset's models and protocols (``predictors.dataset_models`` /
      ``dataset_protocols``).
    * The predictors stage's models: registered, with options the model accepts
      (``coloc.predict.check_options``), ``seeds`` and ``protocols`` the stage's; the datasets
      ``dataset_protocols`` and ``dataset_models`` name: registered, or a user's source (``user-<name>``).
    * ``profiling.sets`` (:func:`_profiling_problems`): each of ``profiling.workloads``, none twice, none
      of a size ``set_sizes`` measures in full, and ``set_sizes`` has 2 (each is compared with its pairs).
    * What the notebooks would refuse hours later: a trace's ``families`` among its dataset's (and, on Philly, with
      ``assign`` other than ``table``); a synthetic ``gpu_mix`` no wider than the widest device type of the
      cluster (the smallest swept size when sweeping gpus); ``probing.scenario`` a spec, its
      ``new_families`` Gavel's, its ``predictor`` a pair predictor of ``predictors.models``;
      ``scheduling_delay``'s clusters (parse, Gavel's devices), ``gpu_mix`` and ``families`` likewise.
    * What would fail late or exhaust memory: ``trace.window`` and a Philly scenario's ``start_s`` / ``end_s`` with
      the start before the end; a cluster (a scenario's, ``scheduling_delay``'s) of at most :data:`MAX_GPUS` GPUs in
      all; a scenario whose simulate job fits a 24 GB machine (:mod:`coloc.studies.footprint`).
    """
    sim, pred = config.get("simulation"), config.get("predictors")
    problems = _model_problems(pred) + _dataset_key_problems(pred, config) if pred else []
    problems += _window_problems("trace.window", (config.get("trace") or {}).get("window"))
    problems += _profiling_problems(config.get("profiling"))
    if sim:
        problems += [f"simulation.scenarios[{i}]: no spec for scenario {name!r} in simulation.scenario_specs "
                     f"(has {sorted(sim['scenario_specs'])})" for i, name in enumerate(sim["scenarios"])
                     if name not in sim["scenario_specs"]]
        problems += _world_problems("simulation.world", sim.get("world", "measured"))
        for name, spec in sim["scenario_specs"].items():
            problems += _scenario_problems(f"simulation.scenario_specs.{name}", spec)
            if "world" in spec:
                problems += _world_problems(f"simulation.scenario_specs.{name}.world", spec["world"])
    if sim and pred:
        problems += _simulation_problems(sim, pred)
    if config.get("probing") and sim:
        problems += _probing_problems(config["probing"], sim, pred)
    if config.get("scheduling_delay"):
        problems += _delay_problems(config["scheduling_delay"])
    if config.get("claims") and sim:
        problems += _claims_problems(config["claims"], sim, pred)
    return problems


def _claims_problems(claims: dict, sim: dict, pred: dict | None) -> list[str]:
    """The claims section: each mapped group exists; its scenario is a spec; its policies are registered and hold
    every policy its claims compare; each factor's values are valid (a world, a protocol the predictors stage makes
    or ``profiled-pairs``, a registered baseline, a cluster of the scenario's dataset, a cap); coloc's value of
    each factor is the scenario's own setting (so coloc's cell is the simulation stage's run); and every prediction
    file a cell's policy reads is made (checked as for a scenario running every cell's policies)."""
    from coloc import claims_map

    problems = [f"claims.map_groups[{i}]: {name!r} is not among claims.groups {sorted(claims['groups'])}"
                for i, name in enumerate(claims["map_groups"]) if name not in claims["groups"]]
    extra_specs = {}
    for name, entry in claims["groups"].items():
        where = f"claims.groups.{name}"
        spec = sim["scenario_specs"].get(entry["scenario"])
        if spec is None:
            problems.append(f"{where}.scenario: {entry['scenario']!r} is not a key of simulation.scenario_specs "
                            f"{sorted(sim['scenario_specs'])}")
            continue
        problems += [line for i, policy in enumerate(entry["policies"])
                     for line in _policy_problems(f"{where}.policies[{i}]", policy)]
        wanted = {claims["horus_policy"], "fifo"} | ({"isacpp", "volcano"} if entry["paper"] == "ISACPP" else set())
        missing = sorted(wanted - set(entry["policies"]))
        if missing:
            problems.append(f"{where}.policies: lacks {missing}, which its claims compare")
        own = {"world": spec.get("world", sim.get("world", "measured")), "protocol": sim["protocol"],
               "cluster": spec["cluster"], "cap": spec.get("max_jobs_per_gpu", sim["max_jobs_per_gpu"])}
        factors = entry["factors"]
        for fname, factor in factors.items():
            here = f"{where}.factors.{fname}"
            values = [(f"{here}.paper", factor["paper"]), (f"{here}.coloc", factor["coloc"])]
            values += [(f"{here}.also[{i}]", v) for i, v in enumerate(factor.get("also", []))]
            problems += _factor_problems(here, fname, values, factor, entry, spec, pred)
            if fname in own and factor["coloc"] != own[fname]:
                problems.append(f"{here}.coloc: {factor['coloc']!r} is not the scenario's own {fname} {own[fname]!r}; "
                                f"coloc's setting must be the simulation stage's run of {entry['scenario']!r}")
            if fname == "baseline" and factor["coloc"] != factor.get("role"):
                problems.append(f"{here}.coloc: {factor['coloc']!r}; coloc's baseline is the role's policy "
                                f"{factor.get('role')!r} itself")
        if problems or name not in claims["map_groups"]:
            continue
        group = claims_map.group_from_config(name, entry)
        policies_run = sorted({r.policy for r in claims_map.plan([group], {entry["scenario"]: spec}, sim["protocol"])})
        extra_specs[f"claims-map-{name}"] = {**spec, "policies": policies_run}
    if extra_specs and pred and not problems:
        mapped = {**sim, "scenarios": list(extra_specs), "scenario_specs": {**sim["scenario_specs"], **extra_specs}}
        problems += [line.replace("simulation.scenario_specs.claims-map-", "claims.groups.")
                     for line in _simulation_problems(mapped, pred) if "claims-map-" in line]
    return problems


def _factor_problems(here: str, fname: str, values: list, factor: dict, entry: dict, spec: dict,
                     pred: dict | None) -> list[str]:
    from coloc import policies
    from coloc.claims_map import PROFILED

    problems = []
    if fname != "baseline" and factor.get("role"):
        problems.append(f"{here}.role: only the baseline factor names a role")
    for where, value in values:  # (key path, value) of the paper's, coloc's and each also value
        if fname == "world":
            problems += _world_problems(where, value)
        elif fname == "protocol" and value != PROFILED and pred and value not in pred["protocols"]:
            problems.append(f"{where}: protocol {value!r} is neither {PROFILED!r} nor among predictors.protocols "
                            f"{pred['protocols']}")
        elif fname == "baseline" and value not in policies.names():
            problems.append(f"{where}: baseline {value!r} is not a registered policy; known: {policies.names()}")
        elif fname == "cluster" and spec.get("dataset", datasets.DEFAULT) in datasets.simulated():
            problems += _clusters_problems(where, str(value), spec.get("dataset", datasets.DEFAULT))[0]
        elif fname == "cap" and value is not None and not (isinstance(value, int) and not isinstance(value, bool)
                                                           and value >= 1):
            problems.append(f"{where}: cap {value!r}; expected an integer >= 1, or null (memory alone decides)")
    if fname == "baseline" and factor.get("role") not in entry["policies"]:
        problems.append(f"{here}.role: {factor.get('role')!r} is not among the group's policies {entry['policies']}")
    return problems


MAX_GPUS = 1_000_000  # GPUs in a cluster, as the schema bounds a swept size (10x the measured scale)


def _window_problems(where: str, window, names=("start", "end")) -> list[str]:
    """A [start, end) window of submit times: empty unless start < end (each may be None: open)."""
    if not isinstance(window, (list, tuple)) or len(window) != 2 or None in window:
        return []
    start, end = window
    if isinstance(start, (int, float)) and isinstance(end, (int, float)) and not start < end:
        return [f"{where}: {names[0]} {start!r} is not before {names[1]} {end!r}; expected {names[0]} < {names[1]} "
                f"(submit times in [{names[0]}, {names[1]}) are kept: none would be)"]
    return []


def _families_problems(where: str, families, dataset: str = datasets.DEFAULT) -> list[str]:
    """A trace's families among those of the dataset's job types (:attr:`coloc.datasets.Dataset.families`)."""
    known = datasets.get(dataset).families()
    unknown = [f for f in families or [] if f not in known]
    return ([f"{where}: families {unknown} are not among {datasets.get(dataset).short}'s job types' families {known}"]
            if unknown else [])


def _dataset_problems(where: str, dataset) -> list[str]:
    """A scenario's ``dataset``: registered, and one the simulator runs on (a measured truth, known devices)."""
    if dataset in datasets.simulated():
        return []
    what = "is registered but has no measured truth the simulator runs on" if dataset in datasets.names() else (
        "is not a registered dataset (coloc.datasets)")
    return [f"{where}: {dataset!r} {what}; expected one of {datasets.simulated()} (registered: {datasets.names()})"]


def _dataset_key_problems(pred: dict, config: dict) -> list[str]:
    """The datasets ``predictors.dataset_protocols`` and ``dataset_models`` name: registered, or a user's source of
    ``datasets.user``."""
    users = [f"{datasets.user.PREFIX}{name}" for name in (config.get("datasets") or {}).get("user") or {}]
    return [f"predictors.{key}.{name}: unknown dataset {name!r}; expected one of {datasets.names() + users} "
            f"(coloc.datasets's registered ones and the users' sources of datasets.user)"
            for key in ("dataset_protocols", "dataset_models") for name in pred.get(key) or {}
            if name not in datasets.names() + users]


def _clusters_problems(where: str, text: str, dataset: str = datasets.DEFAULT
                       ) -> tuple[list[str], list[tuple[str, int]]]:
    """(problems, the (device, GPUs) of the cluster) of a ClusterSpec text: it parses, the dataset's devices only."""
    from coloc.sim.cluster import ClusterSpec

    try:
        devices = list(ClusterSpec.parse(text).devices)
    except ValueError as err:
        return [f"{where}: {err}"], []
    gpus = sum(count for _, count in devices)
    if gpus > MAX_GPUS:
        return [f"{where}: {text!r} has {gpus} GPUs; expected at most {MAX_GPUS} in all (each GPU is simulated)"], []
    known = list(datasets.get(dataset).devices)
    unknown = [d for d, _ in devices if d not in known]
    if unknown:
        owner = datasets.get(dataset).short
        return [f"{where}: device types {unknown} in {text!r} are not in {owner}'s data (has {known})"], devices
    return [], devices


def _gpu_mix_problems(where: str, gpu_mix, widest: int, cluster: str) -> list[str]:
    wide = sorted(int(g) for g in (gpu_mix or {}) if int(g) > widest)
    if wide:
        return [f"{where}: GPU counts {wide} are more than the {widest} GPUs of the widest device type in {cluster!r}; "
                f"expected at most {widest} (a job runs on one device type)"]
    return []


def _probing_problems(probing: dict, sim: dict, pred: dict | None) -> list[str]:
    problems = []
    if probing["scenario"] not in sim["scenario_specs"]:
        problems.append(f"probing.scenario: no spec for scenario {probing['scenario']!r} in simulation.scenario_specs "
                        f"(has {sorted(sim['scenario_specs'])})")
    problems += _families_problems("probing.new_families", probing["new_families"])
    if probing["predictor"] not in predictor_names("pair"):
        problems.append(f"probing.predictor: unknown pair predictor {probing['predictor']!r}; known: "
                        f"{predictor_names('pair')}")
    elif pred and probing["predictor"] not in pred["models"]:
        problems.append(f"probing.predictor: {probing['predictor']!r} is not among predictors.models "
                        f"{sorted(pred['models'])}, so the predictors stage makes no predictions with it")
    return problems


def _delay_problems(delay: dict) -> list[str]:
    problems = _families_problems("scheduling_delay.families", delay["families"])
    for i, text in enumerate(delay["clusters"]):
        found, devices = _clusters_problems(f"scheduling_delay.clusters[{i}]", text)
        problems += found
        if devices and not found:
            problems += _gpu_mix_problems("scheduling_delay.gpu_mix", delay["gpu_mix"], max(n for _, n in devices), text)
    return problems


def _profiling_problems(prof) -> list[str]:
    """The chosen sets of ``profiling.sets`` against the job types and set sizes profiled (nothing to say where
    the schema refuses the section's shape)."""
    if not isinstance(prof, dict) or not isinstance(prof.get("sets"), list) or not prof["sets"]:
        return []
    names, sizes = prof.get("workloads") or [], prof.get("set_sizes") or []
    if not isinstance(names, list) or not isinstance(sizes, list):
        return []  # (the schema names what is not a list)
    problems, seen = [], {}
    for i, members in enumerate(prof["sets"]):
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            continue  # (the schema names what is not a list of job-type names)
        where = f"profiling.sets[{i}]"
        strangers = sorted({m for m in members if m not in names}, key=str)
        if strangers:
            problems.append(f"{where}: {strangers} not among profiling.workloads {names}")
        key = tuple(sorted(map(str, members)))
        if key in seen:
            problems.append(f"{where}: the same set as profiling.sets[{seen[key]}] ({'+'.join(key)})")
        seen.setdefault(key, i)
        if len(members) in sizes:
            problems.append(f"{where}: profiling.set_sizes {sizes} measures every set of {len(members)} already")
    if 2 not in sizes:
        problems.append(f"profiling.sets: each set is compared with the product of its pairs, so profiling.set_sizes "
                        f"{sizes} must include 2")
    return problems


def _world_problems(where: str, world) -> list[str]:
    """An interference world's text (coloc.sim.interference.parse_world) at key `where`."""
    from coloc.sim.interference import parse_world

    try:
        parse_world(world, where)
    except ValueError as err:
        return [str(err)]
    return []


def _scenario_problems(where: str, spec: dict) -> list[str]:
    from coloc.studies import footprint
    from coloc.studies.scenarios import SOURCE_SWEEPS

    problems = [line for i, entry in enumerate(spec["policies"]) for line in _policy_problems(f"{where}.policies[{i}]", entry)]
    dataset = spec.get("dataset", datasets.DEFAULT)
    unknown = _dataset_problems(f"{where}.dataset", dataset)
    if unknown:  # its devices and families are unknown
        return problems + unknown
    found, sized = _clusters_problems(f"{where}.cluster", spec["cluster"], dataset)
    problems += found
    devices = [device for device, _ in sized]
    (key, values), = spec["sweep"].items()
    source = spec["trace"]["source"]
    trace = spec["trace"]
    problems += _families_problems(f"{where}.trace.families", trace.get("families"), dataset)
    if source == "philly":
        problems += _window_problems(f"{where}.trace", [trace.get("start_s"), trace.get("end_s")], ("start_s", "end_s"))
    if source == "philly" and trace.get("families") and trace.get("assign", "table") == "table":
        problems.append(f"{where}.trace.families: needs trace.assign 'uniform' or 'gpu_time' (assign 'table' keeps "
                        f"the trace's own job types)")
    if sized and source in ("poisson", "testbed"):
        widest = min(int(v) for v in values) if key == "gpus" and len(sized) == 1 else max(n for _, n in sized)
        text = spec["cluster"] if key != "gpus" else f"{spec['cluster']} swept to {min(values)} GPUs"
        problems += _gpu_mix_problems(f"{where}.trace.gpu_mix", trace.get("gpu_mix"), widest, text)
    if key not in SOURCE_SWEEPS[source]:
        problems.append(f"{where}.sweep: key {key!r} does not apply to a {source!r} trace; "
                        f"expected one of {list(SOURCE_SWEEPS[source])}")
    elif key == "gpus" and len(devices) > 1:
        problems.append(f"{where}.sweep: sweeping gpus needs a cluster of one device type, not {spec['cluster']!r}")
    if float(spec["headline"]) not in {float(v) for v in values}:
        problems.append(f"{where}.headline: {spec['headline']!r} is not one of the sweep's {key} points {values}")
    if sized and not found:
        problems += footprint.problems(where, spec)
    return problems


def _model_problems(pred: dict) -> list[str]:
    from coloc import predict

    problems = []
    for kind, (section, models) in _model_sections(pred).items():
        for name, options in models.items():
            where = f"predictors.{section}.{name}"
            for key in ("seeds", "protocols"):
                problems += [f"{where}.{key}[{i}]: {v!r} not among predictors.{key} {pred[key]}"
                             for i, v in enumerate(options.get(key, [])) if v not in pred[key]]
            try:
                predict.check_options(name, options, kind)
            except (KeyError, ValueError) as err:
                problems.append(f"{where}: {err.args[0] if err.args else err}")
    for dataset, names in (pred.get("dataset_models") or {}).items():  # a dataset's own pair models and protocols
        problems += [f"predictors.dataset_models.{dataset}[{i}]: {n!r} not among predictors.models "
                     f"{list(pred['models'])}" for i, n in enumerate(names) if n not in pred["models"]]
    for dataset, names in (pred.get("dataset_protocols") or {}).items():
        problems += [f"predictors.dataset_protocols.{dataset}[{i}]: {n!r} not among predictors.protocols "
                     f"{pred['protocols']}" for i, n in enumerate(names) if n not in pred["protocols"]]
    return problems


def _model_sections(pred: dict) -> dict[str, tuple[str, dict]]:
    """kind -> (section of ``predictors``, its models): "util" is ``util_models`` where the config has it,
    else the utilization predictors among ``models`` (horus, whose entry also made the utilization)."""
    if "util_models" in pred:
        return {"pair": ("models", pred["models"]), "util": ("util_models", pred["util_models"])}
    util = {k: v for k, v in pred["models"].items() if k in predictor_names("util")}
    return {"pair": ("models", pred["models"]), "util": ("models", util)}


def _policy_problems(where: str, text: str) -> list[str]:
    """A scenario's policy entry '<policy>[(<param>=<value>,...)][~<predictor>][@<protocol>]'
    (coloc.policies.entry) against the registries: the policy, its parameters (those it declares, of the declared
    type), the predictor and the protocol."""
    from coloc import policies
    from coloc.policies.entry import PolicyEntry, override_kind
    from coloc.studies.experiment import PROFILED_PAIRS

    try:
        entry = PolicyEntry.parse(text)
    except ValueError as err:
        return [f"{where}: {err}"]
    known, problems = policies.names(), []
    name, predictor, protocol = entry.name, entry.predictor, entry.protocol
    if name not in known:
        return [f"{where}: unknown policy {name!r} in {text!r}; known: {known}"]
    problems += [f"{where}: {line} (in {text!r})" for line in policies.parameter_problems(name, entry.param_dict())]
    if entry.label != text:
        problems.append(f"{where}: {text!r} is written {entry.label!r} in its canonical form, the label of its runs; "
                        f"write it so")
    kind = override_kind(name)
    readers = [p for p in known if override_kind(p)]
    if predictor and kind is None:
        problems.append(f"{where}: policy {name!r} reads no predictions a '~' can choose, so '~{predictor}' would "
                        f"be ignored; a predictor goes only with {readers}")
    elif predictor and predictor not in predictor_names(kind):
        what = "pair" if kind == "pair" else "utilization"
        problems.append(f"{where}: unknown {what} predictor {predictor!r} in {text!r}; known: {predictor_names(kind)}")
    if protocol and kind is None:
        problems.append(f"{where}: policy {name!r} reads no predictions, so '@{protocol}' would be ignored; a "
                        f"protocol goes only with {readers}")
    elif protocol == PROFILED_PAIRS and kind != "pair":
        pair_readers = [p for p in known if override_kind(p) == "pair"]
        problems.append(f"{where}: '@{PROFILED_PAIRS}' gives measured pairs in place of pair predictions, and "
                        f"policy {name!r} reads none; it goes only with {pair_readers}")
    elif protocol == PROFILED_PAIRS and predictor:
        problems.append(f"{where}: '~{predictor}' names a pair predictor, but '@{PROFILED_PAIRS}' reads the measured "
                        f"pairs in its place; give one of them")
    return problems


def _simulation_problems(sim: dict, pred: dict) -> list[str]:
    from coloc import policies
    from coloc.policies.entry import PolicyEntry
    from coloc.studies.experiment import PROFILED_PAIRS, PROFILED_UTIL_PROTOCOL

    protocol, problems = sim["protocol"], []
    if protocol not in pred["protocols"]:
        problems.append(f"simulation.protocol: {protocol!r} is not among predictors.protocols {pred['protocols']}, "
                        f"so no predictions are made under it")
    for key, kind in (("predictor_norm", "pair"), ("predictor_util", "util")):
        if sim[key] not in predictor_names(kind):
            problems.append(f"simulation.{key}: unknown {kind} predictor {sim[key]!r}; known: {predictor_names(kind)}")
    for scenario, spec in sim["scenario_specs"].items():
        for key, kind in (("predictor_norm", "pair"), ("predictor_util", "util")):
            if key in spec and spec[key] not in predictor_names(kind):
                problems.append(f"simulation.scenario_specs.{scenario}.{key}: unknown {kind} predictor {spec[key]!r}; "
                                f"known: {predictor_names(kind)}")
    read = {}  # (kind, predictor, dataset, protocol) the simulated policies read -> where the config names it
    for scenario in (s for s in sim["scenarios"] if s in sim["scenario_specs"]):
        spec = sim["scenario_specs"][scenario]
        dataset = spec.get("dataset", datasets.DEFAULT)
        norm, util = (spec.get(k, sim[k]) for k in ("predictor_norm", "predictor_util"))
        named = {k: f"simulation.scenario_specs.{scenario}.{k}" if k in spec else f"simulation.{k}"
                 for k in ("predictor_norm", "predictor_util")}
        only = (pred.get("dataset_protocols") or {}).get(dataset)
        missing = {}  # protocols its policies read that the dataset does not run (in order)
        for i, text in enumerate(spec["policies"]):
            try:
                entry = PolicyEntry.parse(text)
            except ValueError:
                continue  # reported by _policy_problems
            name, predictor, own = entry.name, entry.predictor, entry.protocol
            kinds = reads(name) if name in policies.names() else ()
            here = f"simulation.scenario_specs.{scenario}.policies[{i}]"
            if own and kinds and own not in pred["protocols"] and own != PROFILED_PAIRS:
                problems.append(f"{here}: protocol {own!r} of {text!r} is not among predictors.protocols "
                                f"{pred['protocols']} (nor {PROFILED_PAIRS!r}), so no predictions are made under it")
                continue
            used = own or protocol
            if used == PROFILED_PAIRS:  # the measured pairs, and the utilization under PROFILED_UTIL_PROTOCOL
                kinds, used = tuple(k for k in kinds if k != "norm"), PROFILED_UTIL_PROTOCOL
            chosen_norm, chosen_util = entry.predictors(norm, util) if kinds else (norm, util)
            if "norm" in kinds:
                read.setdefault(("pair", chosen_norm, dataset, used),
                                here if predictor or own else named["predictor_norm"])
            if "util" in kinds:
                read.setdefault(("util", chosen_util, dataset, used),
                                here if chosen_util != util or own else named["predictor_util"])
            if kinds and only is not None and used not in only:
                missing.setdefault(used, None)
        for used in missing:
            source = "simulation.protocol" if used == protocol else "protocol"
            problems.append(f"simulation.scenario_specs.{scenario}: its policies read {dataset}'s predictions under "
                            f"{source} {used!r}, which predictors.dataset_protocols.{dataset} {only} does not run")
    sections = _model_sections(pred)
    dataset_models = pred.get("dataset_models") or {}
    for (kind, name, dataset, used), where in read.items():
        section, models = sections[kind]
        if name not in predictor_names(kind):
            continue  # reported above
        if name not in models:
            problems.append(f"{where}: {kind} predictor {name!r} is not among predictors.{section} {sorted(models)}, "
                            f"so the predictors stage makes no predictions with it")
        elif used not in models[name].get("protocols", [used]):
            source = f"protocol {used!r}" if used != protocol else f"simulation.protocol {protocol!r}"
            problems.append(f"{where}: predictor {name!r} runs only under protocols {models[name]['protocols']} "
                            f"(predictors.{section}.{name}.protocols), not {source}")
        elif kind == "pair" and dataset in dataset_models and name not in dataset_models[dataset]:
            problems.append(f"{where}: pair predictor {name!r} is not among predictors.dataset_models.{dataset} "
                            f"{dataset_models[dataset]}, so {dataset} has no predictions of it")
    return problems


def predictor_names(kind: str) -> list[str]:
    """Registered predictors of one kind: "pair" (co-located throughput) or "util" (solo utilization)."""
    from coloc import predict

    return predict.names(kind)


def reads(policy: str) -> tuple[str, ...]:
    """The prediction kinds ("norm", "util") a registered policy reads, needed or optional."""
    from coloc import policies

    return policies.prediction_needs(policy)
