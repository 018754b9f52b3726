"""Co-location predictors behind one interface (Horus, ISACPP's E-GGAT, baselines), protocols, metrics.

Importing the package registers every predictor: ``make_predictor(name, seed, **options)``.
"""

from coloc.predict import baselines, blend, egat, horus, interactions  # noqa: F401  (register the predictors)
from coloc.predict.base import (  # noqa: F401
    REGISTRY, InsufficientData, Predictor, Tables, make_predictor, make_queries, pair_queries, predict_pairs,
)
from coloc.predict.protocols import PROTOCOLS, ProtocolSkipped  # noqa: F401
