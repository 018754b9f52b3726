"""The registry of models by kind and name, and the check of a model's options before anything runs.

A model is registered once, by the ``@register`` decorator on its class; importing the
``coloc.predict`` package imports every one of its modules, so every model is known. The
options of a configured model (``predictors.models`` and ``predictors.util_models`` of the
config) are its constructor parameters plus the run options of :data:`RUN_OPTIONS`.
"""

from __future__ import annotations

import difflib

from coloc.predict.base import Model, check_limit

KINDS = ("pair", "util")
REGISTRY: dict[str, dict[str, type[Model]]] = {kind: {} for kind in KINDS}
# Options of a configured model that the evaluation reads (not constructor parameters):
RUN_OPTIONS = {
    "seeds": "the subset of the run's seeds it runs with (an expensive model)",
    "protocols": "the protocols it runs under",
    "base": "the registered model it configures, when its name is a new label (e.g. lgbm-log, base lgbm)",
}


def register(cls: type[Model]) -> type[Model]:
    """Class decorator: make the model available by its ``name`` under its ``kind``."""
    if cls.kind not in REGISTRY:
        raise ValueError(f"model {cls.__name__}: kind {cls.kind!r}; expected one of {KINDS}")
    if not cls.name or cls.name in REGISTRY[cls.kind]:
        raise ValueError(f"model {cls.__name__}: name {cls.name!r} is empty or already registered ({cls.kind})")
    REGISTRY[cls.kind][cls.name] = cls
    return cls


def names(kind: str | None = None) -> list[str]:
    """The registered names of one kind ("pair" or "util"), or of every kind, sorted."""
    if kind is None:
        return sorted(set().union(*REGISTRY.values()))
    return sorted(_kind(kind))


def registered(name: str, kind: str = "pair") -> type[Model]:
    """The class registered as ``name``; KeyError listing the known names of that kind."""
    try:
        return _kind(kind)[name]
    except KeyError:
        raise KeyError(f"unknown {kind} predictor {name!r}; known: {names(kind)}") from None


def _kind(kind: str) -> dict[str, type[Model]]:
    if kind not in REGISTRY:
        raise KeyError(f"unknown kind of predictor {kind!r}; expected one of {KINDS}")
    return REGISTRY[kind]


def make_predictor(name: str, seed: int = 0, kind: str = "pair", **options) -> Model:
    """A fresh model by registered name with these constructor parameters."""
    return registered(name, kind)(seed=seed, **options)


def split_options(name: str, options: dict) -> tuple[str, dict, dict]:
    """(registered name, constructor parameters, run options) of a configured model ``name``."""
    params = {k: v for k, v in options.items() if k not in RUN_OPTIONS}
    run = {k: v for k, v in options.items() if k in RUN_OPTIONS}
    return run.get("base", name), params, run


def check_options(name: str, options: dict, kind: str = "pair") -> None:
    """Refuse, before anything runs, a configured model whose options it does not accept.

    Checks the name (or ``base``) against the registry, every option against the model's
    constructor parameters and :data:`RUN_OPTIONS`, and the values the model validates itself
    (nested options such as LightGBM's or a blend's members included). Raises KeyError or
    ValueError naming the model, the option and what is accepted.
    """
    if not isinstance(options, dict):
        raise ValueError(f"{kind} predictor {name!r}: options {options!r}; expected a mapping of option: value")
    entry, params, run = split_options(name, options)
    cls = registered(entry, kind)
    for key in ("seeds", "protocols"):
        if key in run and not isinstance(run[key], list):
            raise ValueError(f"{kind} predictor {name!r}: option {key!r} is {run[key]!r}; expected a list "
                             f"({RUN_OPTIONS[key]})")
    check_params(cls, params, f"{kind} predictor {name!r}", extra=sorted(RUN_OPTIONS))


def check_params(cls: type[Model], params: dict, what: str, extra=(), fixed=()) -> None:
    """Refuse constructor parameters ``params`` that ``cls`` does not have, or whose values it cannot use.

    ``seed`` (the run gives it) and the parameters in ``fixed`` (the caller sets them) are refused too;
    ``extra``: the names the caller accepts besides (listed in the message).
    """
    if not isinstance(params, dict):
        raise ValueError(f"{what}: options {params!r}; expected a mapping of option: value")
    accepted = sorted(set(cls._get_param_names()) - {"seed", *fixed})
    for key in params:
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted + list(extra), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            note = f" ({cls.options_hint})" if cls.options_hint else ""
            raise ValueError(f"{what}: unknown option {key!r}{hint}; {cls.__name__} accepts "
                             f"{accepted + list(extra)}{note}")
    for key in sorted(set(params) & set(cls.limits)):
        check_limit(f"{what}: option {key}", params[key], *cls.limits[key], cls.limits_why)
    model = cls(**params)
    try:
        model.check_params()
    except ValueError as err:
        raise ValueError(f"{what}: {err}") from None

