"""Co-location predictors behind one interface (Horus, ISACPP's E-GGAT, baselines), protocols, metrics.

Importing the package imports every one of its modules, so every model registered by its
``@register`` decorator is known: ``names(kind)``, ``make_predictor(name, seed, kind, **options)``,
``check_options(name, options, kind)`` (kinds: "pair", "util").
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

from coloc.predict.base import (  # noqa: E402,F401
    InsufficientData,
    Predictor,
    Tables,
    UtilizationPredictor,
    make_queries,
    pair_queries,
    predict_pairs,
)
from coloc.predict.protocols import PROTOCOLS, ProtocolSkipped  # noqa: E402,F401
from coloc.predict.registry import REGISTRY, check_options, make_predictor, names, registered  # noqa: E402,F401
