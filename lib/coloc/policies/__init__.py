"""Scheduling policies behind one interface; `get(name, **params)` and `names()`."""
from coloc.policies.base import Policy, get, names, register

__all__ = ["Policy", "get", "names", "register"]
