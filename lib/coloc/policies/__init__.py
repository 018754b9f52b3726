"""Scheduling policies behind one interface: `get(name, **params)`, `names()`, `info(name)`.

Each policy is a class registered by `@register(name)` in a module of this package; adding a
module is all it takes (every module is imported to find them).
"""
from coloc.policies.base import KINDS, NEEDS, Policy, data_problem, get, info, names, prediction_needs, register

__all__ = ["KINDS", "NEEDS", "Policy", "data_problem", "get", "info", "names", "prediction_needs", "register"]
