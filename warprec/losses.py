"""Pairwise ranking losses with their (sub)gradients: ordinal regression and
preference relations.

Both losses are convex, piecewise-linear upper bounds of a weighted count of
mis-ordered pairs, as described in the appendix "Ranking losses" of Weimer,
Karatzoglou, Le & Smola 2007, "COFI RANK - Maximum Margin Matrix Factorization for
Collaborative Ranking" (NIPS 20), which lists the losses a bundle-method solver can use
besides NDCG: sec. 1.2, ordinal regression (Algorithm 1), and sec. 1.3, preference
relations (Algorithm 2). Each is available as

* a Numba kernel (``*_loss_grad``) that takes arrays only, writes the gradient into a
  caller-supplied buffer and returns the loss, so a training kernel can call it from
  inside another ``njit`` function; and
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

import numpy as np
from numba import njit

from ._kernels._flags import JIT

__all__ = [
    "ordinal_loss",
    "ordinal_loss_grad",
    "ordinal_loss_grad_unit",
    "preference_loss",
    "preference_loss_grad",
]


# --------------------------------------------------------------------------------------
# Numba kernels
# --------------------------------------------------------------------------------------


@njit(**JIT)
def _check_ordinal_args(f, y, n_labels, out_grad):
    """Validate shapes/label range (cheap, O(m)); returns the label counts."""
    m = f.shape[0]
    if y.shape[0] != m:
        raise ValueError("y must have the same length as f")
    if out_grad.shape[0] != m:
        raise ValueError("out_grad must have the same length as f")
    counts = np.zeros(n_labels, dtype=np.int64)
    for t in range(m):
        z = y[t]
        if z < 0 or z >= n_labels:
            raise ValueError("labels y must lie in 0 .. n_labels - 1")
        counts[z] += 1
    return counts


@njit(**JIT)
def _n_pairs(counts, m):
    """M = (m^2 - sum_k m_k^2) / 2, the number of pairs with different labels."""
    s = np.int64(0)
    for k in range(counts.shape[0]):
        s += counts[k] * counts[k]
    return (np.int64(m) * np.int64(m) - s) // 2


@njit(**JIT)
def ordinal_loss_grad(f, y, C, out_grad):
    r"""Ordinal-regression loss and gradient, O(m log m + m n) (Algorithm 1).

    Implements Weimer, Karatzoglou, Le & Smola 2007, appendix "Ranking losses",
    sec. 1.2 (Algorithm 1):

    .. math::

        l(f, y) = \frac{1}{M} \sum_{y_i < y_j} C(y_i, y_j)\,\max(0,\ 1 + f_i - f_j),
        \qquad M = \tfrac12\Bigl(m^2 - \sum_k m_k^2\Bigr),

    where :math:`m_k` is the number of items with label :math:`k`, so :math:`M` is
    the number of pairs with different labels. An item with a lower label should
    score at least 1 below every item with a higher label.

    Parameters
    ----------
    f : ndarray of float64, shape (m,)
        Scores.
    y : ndarray of int, shape (m,)
        Labels, **0-based**: ``0 <= y[t] < n`` (the paper numbers them 1..n).
        A label outside that range raises ``ValueError``.
    C : ndarray of float64, shape (n, n)
        Cost matrix; only the strict upper triangle ``C[a, b]`` with ``a < b`` is
        read (cost of the pair "label ``a`` item vs label ``b`` item"). For unit
        costs, ``C[a, b] = 1`` for ``a < b``, :func:`ordinal_loss_grad_unit` is faster
        when ``n`` is large.
    out_grad : ndarray of float64, shape (m,)
        Overwritten with :math:`\partial l / \partial f`.

    Returns
    -------
    float
        The loss. ``m <= 1`` or all labels equal (``M == 0``) give loss 0 and a zero
        gradient.

    Notes
    -----
    A pair is active iff ``(1.0 + f[i]) > f[j]`` (a pair exactly on the hinge is
    inactive: zero loss and zero subgradient). Cost: one sort of ``f`` plus an
    O(n) sweep step per item, i.e. O(m log m + m n); O(m log m) for a fixed number
    of labels as in the paper.

    Algorithm: every item ``t`` gives two events, a *lower* event at key ``f[t]``
    and an *upper* event at key ``1.0 + f[t]`` (Algorithm 1 uses ``f - 1/2`` and
    ``f + 1/2``; shifting both by 1/2 changes nothing and makes the activity test
    bit-identical to ``1 + f_i - f_j > 0``). Pair ``(i, j)`` with ``y_i < y_j`` is
    active iff ``j``'s lower key is below ``i``'s upper key, and then contributes
    ``C * (upper_i - lower_j)``. Sweeping the events in ascending order (upper
    before lower on equal keys) with ``h[k]`` = number of label-``k`` lower events
    seen and ``u[k]`` = number of label-``k`` upper events *not yet* seen:

    * at ``j``'s lower event (label ``z``) the active partners are the ``u[k]``,
      ``k < z``: add ``-sum_k C[k, z] u[k]`` to the loss (times ``lower_j``) and to
      ``grad[j]``; then ``h[z] += 1``;
    * at ``i``'s upper event (label ``z``) the active partners are the ``h[k]``,
      ``k > z``: add ``+sum_k C[z, k] h[k]`` to the loss (times ``upper_i``) and to
      ``grad[i]``; then ``u[z] -= 1``.

    Keys are centred on the median score before being multiplied, which
    mathematically cancels and limits round-off for scores far from 0.
    """
    m = f.shape[0]
    n = C.shape[0]
    if C.shape[1] != n:
        raise ValueError("C must be a square (n, n) matrix")
    counts = _check_ordinal_args(f, y, n, out_grad)
    for t in range(m):
        out_grad[t] = 0.0
    M = _n_pairs(counts, m)
    if M == 0:
        return 0.0

    order = np.argsort(f, kind="mergesort")
    upper = np.empty(m, dtype=np.float64)
    for t in range(m):
        upper[t] = 1.0 + f[order[t]]  # non-decreasing because fl(1 + x) is monotone
    centre = f[order[m // 2]]

    h = np.zeros(n, dtype=np.int64)
    u = counts.copy()
    loss = 0.0
    p = 0  # next upper event (index into order)
    q = 0  # next lower event
    while p < m:
        if q < m and f[order[q]] < upper[p]:
            # lower event of item j (strictly below the next upper key)
            j = order[q]
            z = y[j]
            w = 0.0
            for k in range(z):
                w += C[k, z] * u[k]
            if w != 0.0:
                loss -= w * (f[j] - centre)
                out_grad[j] -= w
            h[z] += 1
            q += 1
        else:
            # upper event of item i (processed first on equal keys: hinge inactive)
            i = order[p]
            z = y[i]
            w = 0.0
            for k in range(z + 1, n):
                w += C[z, k] * h[k]
            if w != 0.0:
                loss += w * (upper[p] - centre)
                out_grad[i] += w
            u[z] -= 1
            p += 1
    # lower events left after the last upper event have no active partner.

    inv = 1.0 / M
    for t in range(m):
        out_grad[t] *= inv
    loss *= inv
    if loss < 0.0:  # only round-off can make it negative
        loss = 0.0
    return loss


@njit(**JIT)
def _fenwick_build(tree, values):
    """Build a 1-based Fenwick tree (``tree`` has len(values) + 1 slots) in O(n)."""
    n = values.shape[0]
    tree[0] = 0
    for k in range(n):
        tree[k + 1] = values[k]
    for k in range(1, n + 1):
        parent = k + (k & -k)
        if parent <= n:
            tree[parent] += tree[k]


@njit(**JIT)
def _fenwick_add(tree, k, delta):
    """values[k] += delta (k is 0-based)."""
    n = tree.shape[0] - 1
    k += 1
    while k <= n:
        tree[k] += delta
        k += k & -k


@njit(**JIT)
def _fenwick_prefix(tree, k):
    """sum(values[:k]) (k is a 0-based exclusive bound)."""
    s = np.int64(0)
    while k > 0:
        s += tree[k]
        k -= k & -k
    return s


@njit(**JIT)
def ordinal_loss_grad_unit(f, y, n_labels, out_grad):
    r"""Ordinal-regression loss and gradient with unit costs, O(m log m).

    Same loss, conventions and sweep as :func:`ordinal_loss_grad` with
    ``C[a, b] = 1`` for every ``a < b`` (unit costs; Weimer, Karatzoglou, Le & Smola
    2007, appendix "Ranking losses", sec. 1.2):

    .. math::

        l(f, y) = \frac{1}{M} \sum_{y_i < y_j} \max(0,\ 1 + f_i - f_j).

    The per-label counts ``h`` and ``u`` are kept in Fenwick trees, so each sweep
    step costs O(log n) instead of O(n): the total is O(m log m) even when every
    item has its own label (``n = m``). The gradient entries are integer counts
    divided by ``M`` and hence exact.

    Parameters
    ----------
    f : ndarray of float64, shape (m,)
        Scores.
    y : ndarray of int, shape (m,)
        0-based labels, ``0 <= y[t] < n_labels`` (else ``ValueError``).
    n_labels : int
        Number of label values ``n``.
    out_grad : ndarray of float64, shape (m,)
        Overwritten with :math:`\partial l / \partial f`.

    Returns
    -------
    float
        The loss (0, with a zero gradient, when ``m <= 1`` or all labels are equal).
    """
    m = f.shape[0]
    n = n_labels
    counts = _check_ordinal_args(f, y, n, out_grad)
    for t in range(m):
        out_grad[t] = 0.0
    M = _n_pairs(counts, m)
    if M == 0:
        return 0.0

    order = np.argsort(f, kind="mergesort")
    upper = np.empty(m, dtype=np.float64)
    for t in range(m):
        upper[t] = 1.0 + f[order[t]]
    centre = f[order[m // 2]]

    h_tree = np.zeros(n + 1, dtype=np.int64)  # h[k]: lower events seen, label k
    u_tree = np.zeros(n + 1, dtype=np.int64)  # u[k]: upper events to come, label k
    _fenwick_build(u_tree, counts)
    h_total = np.int64(0)
    loss = 0.0
    p = 0
    q = 0
    while p < m:
        if q < m and f[order[q]] < upper[p]:
            j = order[q]
            z = y[j]
            w = _fenwick_prefix(u_tree, z)  # sum_{k < z} u[k]
            if w != 0:
                loss -= w * (f[j] - centre)
                out_grad[j] -= w
            _fenwick_add(h_tree, z, 1)
            h_total += 1
            q += 1
        else:
            i = order[p]
            z = y[i]
            w = h_total - _fenwick_prefix(h_tree, z + 1)  # sum_{k > z} h[k]
            if w != 0:
                loss += w * (upper[p] - centre)
                out_grad[i] += w
            _fenwick_add(u_tree, z, -1)
            p += 1

    inv = 1.0 / M
    for t in range(m):
        out_grad[t] *= inv
    loss *= inv
    if loss < 0.0:
        loss = 0.0
    return loss


@njit(**JIT)
def preference_loss_grad(f, pairs, costs, out_grad):
    r"""Preference-relation loss and gradient, O(|P|) (Algorithm 2).

    Implements Weimer, Karatzoglou, Le & Smola 2007, appendix "Ranking losses",
    sec. 1.3 (Algorithm 2):

    .. math::

        l(f) = \frac{1}{|P|} \sum_{(i, j) \in P} C(i, j)\,\max(0,\ 1 + f_i - f_j),

    where a row ``(i, j)`` of ``pairs`` means **item j is preferred to item i**
    (``j`` should score at least 1 above ``i``); ``C(i, j)`` is incurred when
    ``i`` is ranked above ``j``.

    Parameters
    ----------
    f : ndarray of float64, shape (m,)
        Scores.
    pairs : ndarray of int, shape (p, 2)
        ``pairs[t] = (i, j)``: loser ``i``, winner ``j``; 0-based indices into
        ``f`` (out-of-range indices raise ``ValueError``). Duplicates count
        separately; a self-pair ``(i, i)`` adds the constant ``C/|P|`` to the loss
        and nothing to the gradient.
    costs : ndarray of float64, shape (p,)
        ``costs[t] = C(i, j)`` for ``pairs[t]``.
    out_grad : ndarray of float64, shape (m,)
        Overwritten with :math:`\partial l / \partial f`: each active pair adds
        ``+C/|P|`` to ``grad[i]`` and ``-C/|P|`` to ``grad[j]``.

    Returns
    -------
    float
        The loss; 0 (with a zero gradient) for an empty preference set.

    Notes
    -----
    A pair is active iff ``(1.0 + f[i]) > f[j]``; a pair exactly on the hinge
    contributes 0 to the loss and to the gradient (Algorithm 2's strict
    ``f_j - f_i < 1``).
    """
    m = f.shape[0]
    n_p = pairs.shape[0]
    if out_grad.shape[0] != m:
        raise ValueError("out_grad must have the same length as f")
    if costs.shape[0] != n_p:
        raise ValueError("costs must have one entry per pair")
    if n_p > 0 and pairs.shape[1] != 2:
        raise ValueError("pairs must have shape (p, 2)")
    for t in range(m):
        out_grad[t] = 0.0
    if n_p == 0:
        return 0.0
    loss = 0.0
    for t in range(n_p):
        i = pairs[t, 0]
        j = pairs[t, 1]
        if i < 0 or i >= m or j < 0 or j >= m:
            raise ValueError("pair indices must lie in 0 .. len(f) - 1")
        a = 1.0 + f[i]
        if a > f[j]:
            c = costs[t]
            loss += c * (a - f[j])
            out_grad[i] += c
            out_grad[j] -= c
    inv = 1.0 / n_p
    for t in range(m):
        out_grad[t] *= inv
    return loss * inv


# --------------------------------------------------------------------------------------
# Python wrappers
# --------------------------------------------------------------------------------------


def _as_scores(f):
    f = np.ascontiguousarray(f, dtype=np.float64)
    if f.ndim != 1:
        raise ValueError(f"f must be a 1-D array of scores, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError("f must contain only finite values (found NaN or Inf)")
    return f


def _as_int_array(x, name):
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


def _as_costs(c, name):
    c = np.ascontiguousarray(c, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{name} must contain only finite values")
    if np.any(c < 0):
        raise ValueError(f"{name} must be non-negative (a negative cost makes the "
                         "loss non-convex)")
    return c


def ordinal_loss(f, y, C=None):
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


def preference_loss(f, pairs, costs=None):
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
