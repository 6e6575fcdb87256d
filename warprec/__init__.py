"""warprec: WARP matrix factorisation for implicit-feedback recommendation.

Public entry points are imported lazily so that ``import warprec`` stays cheap and
does not compile any Numba kernel.
"""

from __future__ import annotations

import importlib

from .exceptions import DivergenceError, InvalidParameterError, NotFittedError, WarprecWarning

__version__ = "0.2.0"

_LAZY = {
    "WARPFactorizer": "warprec.model",
    "TUNED_PARAMS": "warprec.model",
    "PopularityRecommender": "warprec.baselines",
    "Interactions": "warprec.interactions",
    "evaluate": "warprec.evaluation",
    "PerUserHoldout": "warprec.splitting",
    "tune": "warprec.tuning",
}

__all__ = ["WARPFactorizer", "TUNED_PARAMS", "PopularityRecommender", "Interactions",
           "evaluate", "PerUserHoldout", "tune", "DivergenceError",
           "InvalidParameterError", "NotFittedError", "WarprecWarning", "__version__"]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'warprec' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
