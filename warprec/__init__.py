"""warprec: WARP matrix factorisation for implicit-feedback recommendation.

Public entry points are imported lazily so that ``import warprec`` stays cheap and
does not compile any Numba kernel.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .exceptions import DivergenceError, InvalidParameterError, NotFittedError, WarprecWarning

if TYPE_CHECKING:  # what the lazy table below resolves to, for type checkers
    from typing import Any

    from .baselines import PopularityRecommender
    from .evaluation import evaluate
    from .interactions import Interactions
    from .model import TUNED_PARAMS, WARPFactorizer
    from .splitting import PerUserHoldout
    from .tuning import tune

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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'warprec' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
