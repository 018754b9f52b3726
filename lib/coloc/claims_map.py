"""The claims map: each simulated claim checked in the paper's setting, in coloc's, and one factor at a time between.

A paper's verdict can be decided by a setting rather than by its algorithm: what the simulated world charges for
sharing a GPU, which predictions the policy reads, how the baseline places, which GPUs the cluster has, and how many
jobs a GPU may hold. The config's ``claims.groups`` name, for each group of claims (a paper's claims on one
scenario), the paper's value and coloc's of each such factor (:data:`FACTORS`):

* ``world``: the interference world of the simulation (``measured``, ``flat:<s>``, ``none``: the truth, which
  policies never see);
* ``protocol``: the predictions the predictive policies read (``lofo``: a new job family, coloc's honest setting;
  ``random5``: every job type seen in training; ``profiled-pairs``: the measured pairs themselves, ISACPP's stated
  assumption, labelled so). A policy that reads utilization only has no ``profiled-pairs`` predictions: it reads
  ``random5`` there (every job type seen, as the paper assumes);
* ``baseline``: which variant of a baseline runs in the role of the claim's named baseline (the factor's ``role``);
* ``cluster``: the cluster text (heterogeneous, or the reference device only);
* ``cap``: the most jobs any policy may put on one GPU (``null``: memory alone decides).

Each factor may also list ``also`` values: sensitivities that are neither setting, run from the paper's setting.

The cells of a group (:func:`cells`): the paper's setting; the paper's setting with one factor moved to coloc's
value, or to one of its ``also`` values; coloc's setting (every factor moved). Every cell runs the group's scenario
at its headline point for every seed, through the same scenario runner as the simulation stage
(:func:`coloc.studies.scenarios.run_policy`), so coloc's cell is the simulation stage's own run of that point. A run
the cells share (the same scenario, overrides and policy) runs once.

:func:`map_rows` scores each claim in each cell with :mod:`coloc.claims`' rules, and :func:`decided_by` names the
factors whose move alone, from the paper's setting towards coloc's, flips the paper's-setting verdict.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from coloc import policies
from coloc.policies.entry import PolicyEntry
from coloc.studies import experiment, scenarios

FACTORS = ("world", "protocol", "baseline", "cluster", "cap")
SPEC_FACTORS = {"world": "world", "cluster": "cluster", "cap": "max_jobs_per_gpu"}  # factor -> scenario spec key
PROFILED = experiment.PROFILED_PAIRS  # the protocol whose predictions are the measured pairs (a paper's assumption)
UTIL_PROFILED = experiment.PROFILED_UTIL_PROTOCOL  # what a policy that reads utilization only reads under PROFILED


@dataclass(frozen=True)
class Factor:
    """One setting a verdict may depend on: the paper's value, coloc's, and sensitivities beside them.

    ``role`` (the baseline factor only): the policy, as the group's claims name it, that the value replaces."""

    name: str
    paper: object
    coloc: object
    also: tuple = ()
    role: str = ""

    def __post_init__(self):
        if self.name not in FACTORS:
            raise ValueError(f"claims factor {self.name!r}: expected one of {list(FACTORS)}")
        if self.name == "baseline" and not self.role:
            raise ValueError("claims factor 'baseline': needs 'role', the baseline the claims name")


@dataclass(frozen=True)
class Cell:
    """A setting of every factor of a group: ``name`` is ``paper``, ``coloc`` or ``<factor>=<value>`` (a move from
    the paper's setting); ``factor`` the moved one ("" for the two settings); ``towards_coloc`` whether the move
    goes to coloc's value (not to an ``also`` value)."""

    name: str
    factor: str
    value: str
    setting: Mapping[str, object]
    towards_coloc: bool = False


@dataclass(frozen=True)
class Group:
    """A paper's simulated claims on one scenario, and the factors between the paper's setting and coloc's."""

    name: str
    paper: str
    scenario: str
    factors: tuple[Factor, ...]
    policies: tuple[str, ...] = field(default=())  # every policy the group's claims compare, as coloc's setting names them

    def factor(self, name: str) -> Factor | None:
        return next((f for f in self.factors if f.name == name), None)


def text(value) -> str:
    """A factor value as the map shows it (``null`` for no cap)."""
    return "null" if value is None else str(value)


def group_from_config(name: str, entry: Mapping) -> Group:
    """A :class:`Group` from a ``claims.groups.<name>`` entry of the config."""
    factors = []
    for fname, f in (entry.get("factors") or {}).items():
        factors.append(Factor(fname, f.get("paper"), f.get("coloc"), tuple(f.get("also") or ()), f.get("role", "")))
    return Group(name=name, paper=entry["paper"], scenario=entry["scenario"], factors=tuple(factors),
                 policies=tuple(entry.get("policies") or ()))


def cells(group: Group) -> list[Cell]:
    """The paper's setting, each one-factor move from it (to coloc's value, then to each ``also`` value), and
    coloc's setting; a move to a value equal to the paper's is left out, as is a coloc cell equal to the paper's."""
    paper = {f.name: f.paper for f in group.factors}
    coloc = {f.name: f.coloc for f in group.factors}
    out = [Cell("paper", "", "", paper)]
    for f in group.factors:
        targets = [(f.coloc, True)] + [(v, False) for v in f.also]
        for value, towards in targets:
            if value == f.paper or (not towards and value == f.coloc):
                continue
            out.append(Cell(f"{f.name}={text(value)}", f.name, text(value), {**paper, f.name: value}, towards))
    if coloc != paper:
        out.append(Cell("coloc", "", "", coloc))
    return out


def cell_policy(policy: str, group: Group, setting: Mapping[str, object], default_protocol: str) -> str:
    """The policy run in the role of ``policy`` (as coloc's setting names it) in a cell: the baseline factor swaps
    its role's policy; the protocol factor suffixes every policy that reads predictions and names no protocol of
    its own ('isacpp' -> 'isacpp@random5'; coloc's default protocol gets no suffix, as the stage names it)."""
    baseline = group.factor("baseline")
    if baseline is not None and policy == baseline.role:
        policy = str(setting["baseline"])
    entry = PolicyEntry.parse(policy)
    if "protocol" not in setting or entry.protocol:
        return policy
    protocol = str(setting["protocol"])
    needs = policies.prediction_needs(entry.name)
    if not needs:
        return policy
    if protocol == PROFILED and "norm" not in needs:
        protocol = UTIL_PROFILED
    return policy if protocol == default_protocol else f"{policy}@{protocol}"


def cell_spec(spec: Mapping, setting: Mapping[str, object]) -> dict:
    """The scenario spec of a cell at its headline point: the world, cluster and cap of the setting."""
    out = copy.deepcopy(dict(spec))
    for factor, key in SPEC_FACTORS.items():
        if factor in setting:
            out[key] = setting[factor]
    key, _ = scenarios.sweep_of(spec)
    out["sweep"] = {key: [float(spec["headline"])]}
    return out


@dataclass(frozen=True)
class Run:
    """One (scenario spec, policy) the map runs, and the (group, cell) pairs that read it."""

    scenario: str
    policy: str
    spec: Mapping
    cells: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        return json.dumps({"scenario": self.scenario, "policy": self.policy, "spec": self.spec}, sort_keys=True,
                          default=str)


def plan(groups: list[Group], specs: Mapping[str, Mapping], default_protocol: str) -> list[Run]:
    """Every run the map needs, each once, in a stable order (group, cell, policy)."""
    runs: dict[str, Run] = {}
    for group in groups:
        spec = specs[group.scenario]
        for cell in cells(group):
            cspec = cell_spec(spec, cell.setting)
            for policy in group.policies:
                run = Run(group.scenario, cell_policy(policy, group, cell.setting, default_protocol), cspec, ())
                known = runs.get(run.key)
                runs[run.key] = Run(run.scenario, run.policy, cspec,
                                    (known.cells if known else ()) + ((group.name, cell.name),))
    return list(runs.values())


def run_map(runs: list[Run], settings: Mapping, tables: Callable[[str], tuple], trace_table: pd.DataFrame | None,
            prediction_paths: Callable[[str, str], tuple[str, str]], work_dir: str | None = None,
            log: Callable[[str], None] = print) -> pd.DataFrame:
    """Run every planned run (each seed at its headline point) and return the summary rows, one per (run, seed)
    and (group, cell) that reads it, with columns ``group`` and ``cell`` first.

    ``tables(dataset)`` gives (solo, pairs, memory_source); ``prediction_paths(policy, dataset)`` the run's
    (predictions, utilization) files ("" where it reads none). ``work_dir``: finished runs are kept under it by the
    fingerprint of their definition, inputs and code (a killed map resumes)."""
    rows = []
    for i, run in enumerate(runs):
        dataset = scenarios.dataset_of(run.spec)
        solo, pairs, memory_source = tables(dataset)
        predictions, utilization = prediction_paths(run.policy, dataset)
        folder = None
        if work_dir:
            folder = scenarios.resume_folder(work_dir, run.scenario, run.policy, run.spec, settings,
                                             [predictions, utilization])
        log(f"claims map run {i + 1}/{len(runs)}: {run.scenario} {run.policy} {_overrides(run.spec)}")
        trace = trace_table if run.spec["trace"]["source"] == "philly" else None
        summary = scenarios.run_policy(run.scenario, run.policy, run.spec, settings, solo, pairs, trace,
                                       predictions, utilization, folder, log=lambda _: None,
                                       memory_source=memory_source)["summary"]
        for group, cell in run.cells:
            rows.append(summary.assign(group=group, cell=cell))
    if not rows:
        return pd.DataFrame(columns=["group", "cell", *scenarios.TABLES])
    out = pd.concat(rows, ignore_index=True)
    first = ["group", "cell"]
    return out[first + [c for c in out.columns if c not in first]]


def _overrides(spec: Mapping) -> str:
    return ", ".join(f"{key}={text(spec.get(key))}" for key in ("world", "cluster", "max_jobs_per_gpu") if key in spec)
