"""Pairwise ranking losses with their (sub)gradients: ordinal regression and
preference relations.

Both losses are convex, piecewise-linear upper bounds of a weighted count of
mis-ordered pairs, as described in the appendix "Ranking losses" of Weimer,
Karatzoglou, Le & Smola 2007, "COFI RANK - Maximum Margin Matrix Factorization for
Collaborative Ranking" (NIPS 20), which lists the losses a bundle-method solver can use
besides NDCG: sec. 1.2, ordinal regression (Algorithm 1), and sec. 1.3, preference
relations (Algorithm 2). Each is available as

* a Numba kernel (``*_loss_grad``, in ``warprec._kernels.losses``, re-exported here) that
  takes arrays only, writes the gradient into a caller-supplied buffer and returns the
  loss, so a training kernel can call it from inside another ``njit`` function; and
* a Python wrapper (``ordinal_loss``, ``preference_loss``) that validates its input,
  allocates the gradient and returns ``(loss, grad)``.

Conventions shared by every function in this module
----------------------------------------------------
Sign
    A pair ``(i, j)`` is *correctly* ordered when item ``j`` scores at least one unit
    above item ``i``: ``f[j] >= f[i] + 1``. Otherwise it costs
    ``C * (1 + f[i] - f[j])``. In ordinal regression the pairs are all ``(i, j)`` with
    ``y[i] < y[j]`` (the item with the *higher* label should score higher); in the
    preference loss, row ``(i, j)`` of ``pairs`` means "``j`` is preferred to ``i``"
    (the second column is the winner), exactly as in the appendix's Algorithm 2.
Kink (subgradient) convention
    A pair is *active* iff ``1 + f[i] - f[j] > 0`` (strictly), evaluated in floating
    point as ``(1.0 + f[i]) > f[j]``. A pair lying exactly on the hinge
    (``f[j] == 1.0 + f[i]``) contributes 0 to the loss and 0 to the gradient, i.e. we
    return the one-sided subgradient of the inactive side. This matches the strict
    test ``f_j - f_i < 1`` of the appendix's Algorithm 2.
Gradient
    ``grad[k] = dl/df[k]``: each active pair adds ``+C/Z`` to ``grad[i]`` and
    ``-C/Z`` to ``grad[j]`` (``Z`` the normaliser), so the gradient always sums to 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._kernels.losses import (ordinal_loss_grad, ordinal_loss_grad_unit,
                              preference_loss_grad)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ordinal_loss",
    "ordinal_loss_grad",
    "ordinal_loss_grad_unit",
    "preference_loss",
    "preference_loss_grad",
]



def _as_scores(f: ArrayLike) -> NDArray[np.float64]:
    f = np.ascontiguousarray(f, dtype=np.float64)
    if f.ndim != 1:
        raise ValueError(f"f must be a 1-D array of scores, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError("f must contain only finite values (found NaN or Inf)")
    return f


def _as_int_array(x: ArrayLike, name: str) -> NDArray[np.int64]:
    """Convert to int64, accepting integer dtypes and integral-valued floats."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        raise ValueError(f"{name} must contain integers, got a boolean array")
    if np.issubdtype(x.dtype, np.integer):
        return np.ascontiguousarray(x, dtype=np.int64)
    if np.issubdtype(x.dtype, np.floating):
        if x.size and not (np.all(np.isfinite(x)) and np.all(x == np.round(x))):
            raise ValueError(f"{name} must contain integers, found non-integral values")
        return np.ascontiguousarray(x, dtype=np.int64)
    if x.size == 0:
        return np.zeros(x.shape, dtype=np.int64)
    raise ValueError(f"{name} must contain integers, got dtype {x.dtype}")


def _as_costs(c: ArrayLike, name: str) -> NDArray[np.float64]:
    c = np.ascontiguousarray(c, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{name} must contain only finite values")
    if np.any(c < 0):
        raise ValueError(f"{name} must be non-negative (a negative cost makes the "
                         "loss non-convex)")
    return c


def ordinal_loss(f: ArrayLike, y: ArrayLike,
                 C: ArrayLike | None = None) -> tuple[float, NDArray[np.float64]]:
    r"""Ordinal-regression ranking loss and its gradient.

    .. math::

        l(f, y) = \frac{1}{M} \sum_{y_i < y_j} C(y_i, y_j)\,\max(0,\ 1 + f_i - f_j),
        \qquad M = \tfrac12\Bigl(m^2 - \sum_k m_k^2\Bigr)

    (Weimer, Karatzoglou, Le & Smola 2007, appendix "Ranking losses", sec. 1.2,
    Algorithm 1): an item with a lower label should score at least 1 below each item
    with a higher label.
    Computed in O(m log m) (plus O(m n) for a general cost matrix).

    Parameters
    ----------
    f : array_like of float, shape (m,)
        Finite scores.
    y : array_like of int, shape (m,)
        Labels. Without ``C`` any integers will do (only their order matters; they
        are compressed to ``0 .. n-1`` internally). With ``C`` they must be
        0-based: ``0 <= y[t] < C.shape[0]``. Integral floats are accepted.
    C : array_like of float, shape (n, n), optional
        Non-negative finite cost matrix; ``C[a, b]`` (``a < b``) is the cost of a
        mis-ordered pair of a label-``a`` and a label-``b`` item. Entries on or
        below the diagonal are ignored. Default: 1 for every ``a < b``.

    Returns
    -------
    loss : float
        0 when ``m <= 1`` or when all labels are equal (``M = 0``).
    grad : ndarray of float64, shape (m,)
        :math:`\partial l / \partial f`; a pair exactly on the hinge
        (``f_j == 1 + f_i``) contributes no subgradient.

    Raises
    ------
    ValueError
        On wrong shapes, non-finite scores or costs, negative costs, non-integer
        labels or labels outside ``0 .. n-1`` when ``C`` is given.

    See Also
    --------
    ordinal_loss_grad, ordinal_loss_grad_unit : the Numba kernels.
    preference_loss : the same loss on an explicit pair set.
    """
    f = _as_scores(f)
    y = _as_int_array(y, "y")
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of labels, got shape {y.shape}")
    if y.shape[0] != f.shape[0]:
        raise ValueError(f"f and y must have the same length, got {f.shape[0]} "
                         f"and {y.shape[0]}")
    grad = np.zeros(f.shape[0], dtype=np.float64)
    if C is None:
        if y.size == 0:
            return 0.0, grad
        _, codes = np.unique(y, return_inverse=True)
        codes = np.ascontiguousarray(codes.reshape(-1), dtype=np.int64)
        n = int(codes.max()) + 1
        loss = ordinal_loss_grad_unit(f, codes, n, grad)
        return float(loss), grad
    C = _as_costs(C, "C")
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(f"C must be a square (n, n) matrix, got shape {C.shape}")
    n = C.shape[0]
    if y.size and (y.min() < 0 or y.max() >= n):
        raise ValueError(f"with a cost matrix of shape {C.shape}, labels must lie in "
                         f"0 .. {n - 1}; got labels in {y.min()} .. {y.max()}")
    loss = ordinal_loss_grad(f, y, C, grad)
    return float(loss), grad


def preference_loss(f: ArrayLike, pairs: ArrayLike,
                    costs: ArrayLike | None = None) -> tuple[float, NDArray[np.float64]]:
    r"""Preference-relation ranking loss and its gradient.

    .. math::

        l(f) = \frac{1}{|P|} \sum_{(i, j) \in P} C(i, j)\,\max(0,\ 1 + f_i - f_j)

    (Weimer, Karatzoglou, Le & Smola 2007, appendix "Ranking losses", sec. 1.3,
    Algorithm 2). Each row ``(i, j)`` of ``pairs`` states that **item j is preferred to
    item i**: ``j`` should score at least 1 above ``i``.

    Parameters
    ----------
    f : array_like of float, shape (m,)
        Finite scores.
    pairs : array_like of int, shape (p, 2)
        ``(loser, winner)`` index pairs into ``f``. An empty set (``p = 0``; any
        empty array) gives loss 0 and a zero gradient.
    costs : array_like of float, shape (p,), optional
        Non-negative finite cost of each pair. Default: all ones.

    Returns
    -------
    loss : float
    grad : ndarray of float64, shape (m,)
        :math:`\partial l / \partial f`; a pair exactly on the hinge
        (``f_j == 1 + f_i``) contributes no subgradient.

    Raises
    ------
    ValueError
        On wrong shapes, non-finite scores or costs, negative costs, non-integer or
        out-of-range pair indices.
    """
    f = _as_scores(f)
    m = f.shape[0]
    pairs = _as_int_array(pairs, "pairs")
    if pairs.size == 0:
        pairs = np.zeros((0, 2), dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (p, 2), got {pairs.shape}")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= m):
        raise ValueError(f"pair indices must lie in 0 .. {m - 1} (len(f) = {m}); got "
                         f"indices in {pairs.min()} .. {pairs.max()}")
    p = pairs.shape[0]
    if costs is None:
        costs = np.ones(p, dtype=np.float64)
    else:
        costs = _as_costs(costs, "costs")
        if costs.ndim == 0 or costs.shape != (p,):
            raise ValueError(f"costs must have shape ({p},), one per pair, got "
                             f"{costs.shape}")
    grad = np.zeros(m, dtype=np.float64)
    loss = preference_loss_grad(f, pairs, costs, grad)
    return float(loss), grad
