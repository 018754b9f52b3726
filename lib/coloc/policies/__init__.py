"""Scheduling policies behind one interface: `get(name, **params)`, `names()`, `info(name)`, `parameters(name)`.

Each policy is a class registered by `@register(name)` in a module of this package; adding a
module is all it takes (every module is imported to find them). A config names a policy by an entry
(`coloc.policies.entry.PolicyEntry`: name, parameters, predictor, protocol).
"""
from coloc.policies.base import (
                                 KINDS,
                                 NEEDS,
                                 Policy,
                                 data_problem,
                                 get,
                                 info,
                                 names,
                                 parameter_problems,
                                 parameters,
                                 prediction_needs,
                                 register,
)
from coloc.policies.entry import PolicyEntry

__all__ = ["KINDS", "NEEDS", "Policy", "PolicyEntry", "data_problem", "get", "info", "names", "parameter_problems",
           "parameters", "prediction_needs", "register"]
