"""A policy entry of the config: ``<policy>[(<param>=<value>,...)][~<predictor>][@<protocol>]``, parsed once.

* ``<policy>``: a registered name (:func:`coloc.policies.names`), a preset included (``coloc-fifo``).
* ``(<param>=<value>,...)``: parameters the policy declares (:attr:`coloc.policies.Policy.parameters`), in the
  order written, each once: ``coloc(order=fifo,risk=0.5)``. A value is read as YAML reads a plain scalar in
  a config: ``true`` / ``false``, ``null``, an integer, a number, else text (``fifo``); no spaces.
* ``~<predictor>``: the pair predictor the policy reads, or for a policy that reads utilization only (horus)
  its utilization predictor (:func:`override_kind`).
* ``@<protocol>``: the protocol whose out-of-fold predictions it reads.

The text is the entry's label, the same in the config, the results' folders (``results/sim/<scenario>/<label>``)
and the ``policy`` column of every table, so a run's parameters are named wherever it is: :attr:`PolicyEntry.label`
writes an entry back in the one canonical form (``str(PolicyEntry.parse(t)) == t`` for every canonical ``t``; the
config check refuses another spelling, naming the canonical one).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from coloc.policies import base

NAME = r"[A-Za-z0-9_-]+"  # a policy, predictor or protocol name
KEY = r"[A-Za-z_][A-Za-z0-9_]*"  # a parameter's name (a constructor keyword)
VALUE = r"[A-Za-z0-9_.+-]+"  # a parameter's value as written
PARAM = rf"{KEY}={VALUE}"
PATTERN = rf"^{NAME}(\({PARAM}(,{PARAM})*\))?(~{NAME})?(@{NAME})?$"  # the whole entry (the schema's pattern)
LABEL_CHARS = r"[A-Za-z0-9_~@(),=.+-]+"  # every character a label may hold (the workflow's wildcard)
_PARTS = re.compile(rf"^(?P<name>{NAME})(?:\((?P<params>[^()]*)\))?(?:~(?P<predictor>{NAME}))?"
                    rf"(?:@(?P<protocol>{NAME}))?$")
_INTEGER = re.compile(r"^[-+]?[0-9]+$")
_NUMBER = re.compile(r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")


@dataclass(frozen=True)
class PolicyEntry:
    """One policy of a scenario: its registered name, its parameters ((name, value) pairs in the order written),
    the predictor named by '~' and the protocol named by '@' ('' where not named)."""

    name: str
    params: tuple[tuple[str, object], ...] = ()
    predictor: str = ""
    protocol: str = ""

    def __post_init__(self):
        for what, text, pattern in (("name", self.name, NAME), ("predictor", self.predictor, NAME),
                                    ("protocol", self.protocol, NAME)):
            if (text or what == "name") and not re.fullmatch(pattern, text):
                raise ValueError(f"policy entry {what} {text!r}: expected letters, digits, '_' or '-'")
        keys = [key for key, _ in self.params]
        for key, value in self.params:
            if not re.fullmatch(KEY, key) or keys.count(key) > 1:
                raise ValueError(f"policy entry {self.name!r}: parameter name {key!r}; expected a name "
                                 f"({KEY}), each once")
            written = _text(value)
            if written is None or not re.fullmatch(VALUE, written) or type(read_value(written)) is not type(value) \
                    or read_value(written) != value:
                raise ValueError(f"policy entry {self.name!r}: parameter {key}={value!r}; expected true/false, null, "
                                 f"an integer, a finite number, or text of {VALUE} that reads as none of these")

    @classmethod
    def parse(cls, text: str) -> PolicyEntry:
        """The entry of `text`; ValueError naming the text and what was expected."""
        found = _PARTS.match(text) if isinstance(text, str) else None
        if found is None:
            raise ValueError(f"policy entry {text!r}: expected '<policy>[(<param>=<value>,...)][~<predictor>]"
                             f"[@<protocol>]', e.g. 'coloc', 'coloc(order=fifo)', 'coloc~lgbm@random5'")
        params = []
        if found["params"] is not None:
            for item in found["params"].split(","):
                if not re.fullmatch(PARAM, item):
                    raise ValueError(f"policy entry {text!r}: parameter {item!r}; expected <name>=<value> "
                                     f"({PARAM}), parameters separated by ',' without spaces")
                key, _, value = item.partition("=")
                params.append((key, read_value(value)))
        return cls(found["name"], tuple(params), found["predictor"] or "", found["protocol"] or "")

    @property
    def label(self) -> str:
        """The canonical text: the folder name of its runs and the ``policy`` column of their tables."""
        params = f"({','.join(f'{k}={_text(v)}' for k, v in self.params)})" if self.params else ""
        predictor = f"~{self.predictor}" if self.predictor else ""
        protocol = f"@{self.protocol}" if self.protocol else ""
        return f"{self.name}{params}{predictor}{protocol}"

    def __str__(self) -> str:
        return self.label

    def param_dict(self) -> dict:
        return dict(self.params)

    def predictors(self, default_norm: str = "", default_util: str = "") -> tuple[str, str]:
        """(pair predictor, utilization predictor) a run of this entry reads: the '~' predictor replaces the pair
        predictor (default_norm) or, on a policy that reads utilization only (horus), the utilization predictor
        (default_util): 'coloc~lgbm' -> ('lgbm', default_util); 'horus~horus-implied' -> (default_norm,
        'horus-implied')."""
        if not self.predictor:
            return default_norm, default_util
        if override_kind(self.name) == "util":
            return default_norm, self.predictor
        return self.predictor, default_util

    def protocol_or(self, default: str) -> str:
        """The protocol whose predictions a run reads: the '@' one, else `default` (simulation.protocol)."""
        return self.protocol or default


def override_kind(name: str) -> str | None:
    """What a '~predictor' on registered policy `name` names: "pair" (it reads pair predictions), "util" (it reads
    utilization and no pairs, e.g. horus), or None (it reads neither)."""
    reads = base.prediction_needs(name)
    return "pair" if "norm" in reads else "util" if "util" in reads else None


def read_value(text: str):
    """A parameter's value as a YAML config reads a plain scalar: bool, None, int, float, else the text."""
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    if _INTEGER.match(text):
        return int(text)
    if _NUMBER.match(text):
        return float(text)
    return text


def _text(value) -> str | None:
    """A value written as :func:`read_value` reads it back (None for a value it cannot write)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    return value if isinstance(value, str) else None
