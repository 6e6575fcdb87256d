"""Numba kernels of the pairwise ranking losses (ordinal regression and preference
relations): arrays in, the loss out, the gradient written into a caller's buffer.

The definitions, conventions (sign, kink, gradient) and references are in the public
module :mod:`warprec.losses`, whose wrappers validate input and call these kernels; the
training kernel calls :func:`ordinal_loss_grad_unit` from inside its epoch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._flags import JIT



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
def _sweep_start(f, y, n_labels, out_grad):
    """The start shared by the ordinal losses: check the arguments, zero the gradient and
    count the ordered pairs ``M``; then the scores' stable ascending order, the upper
    events ``1 + f`` in that order (non-decreasing, since fl(1 + x) is monotone) and the
    median score, the centre of the sweep. Returns ``(M, counts, order, upper, centre)``;
    with ``M == 0`` the last three are empty or 0 (the loss is 0)."""
    m = f.shape[0]
    counts = _check_ordinal_args(f, y, n_labels, out_grad)
    for t in range(m):
        out_grad[t] = 0.0
    M = _n_pairs(counts, m)
    if M == 0:
        return M, counts, np.zeros(0, np.int64), np.zeros(0), 0.0
    order = np.argsort(f, kind="mergesort")
    upper = np.empty(m, dtype=np.float64)
    for t in range(m):
        upper[t] = 1.0 + f[order[t]]
    return M, counts, order, upper, f[order[m // 2]]


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
    M, counts, order, upper, centre = _sweep_start(f, y, n, out_grad)
    if M == 0:
        return 0.0

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
    M, counts, order, upper, centre = _sweep_start(f, y, n, out_grad)
    if M == 0:
        return 0.0

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
