"""Cross-validation splitters for interaction data, usable with scikit-learn's searches.

:class:`PerUserHoldout` is a scikit-learn-style cross-validator (``split`` and
``get_n_splits``) over the rows of an interaction DataFrame. It needs no scikit-learn
to import or use; pass it as ``cv=`` to :class:`sklearn.model_selection.GridSearchCV`,
:class:`~sklearn.model_selection.RandomizedSearchCV` or
:func:`~sklearn.model_selection.cross_val_score` together with an estimator that has
a ``score`` method (every warprec model has one that returns NDCG@10, see
:meth:`warprec.WARPFactorizer.score`).

It is defined in :mod:`warprec.splitting`, beside the splitters whose per-user rule it
repeats, and importable from here, where scikit-learn users look for it.
"""

from __future__ import annotations

from .splitting import PerUserHoldout

__all__ = ["PerUserHoldout"]
