"""Brute-force O(m^2) reference implementations of the losses in ``warprec.losses``.

Written as plainly as possible, for testing only. Same conventions as the fast
versions: a pair (i, j) costs C * max(0, 1 + f[i] - f[j]); it is active iff
``1.0 + f[i] - f[j] > 0`` (evaluated left to right, i.e. ``(1.0 + f[i]) - f[j]``);
a pair exactly on the hinge adds nothing to the gradient.
"""

import numpy as np


def naive_ordinal_loss(f, y, C=None):
    """Loop over every pair (i, j) with y[i] < y[j]. Labels are 0-based when C is
    given; without C every pair with y[i] < y[j] costs 1."""
    f = [float(v) for v in f]
    y = [int(v) for v in y]
    m = len(f)
    grad = [0.0] * m
    loss = 0.0
    n_pairs = 0
    for i in range(m):
        for j in range(m):
            if y[i] < y[j]:
                n_pairs += 1
                cost = 1.0 if C is None else float(C[y[i]][y[j]])
                margin = 1.0 + f[i] - f[j]
                if margin > 0:
                    loss += cost * margin
                    grad[i] += cost
                    grad[j] -= cost
    if n_pairs == 0:
        return 0.0, np.zeros(m)
    return loss / n_pairs, np.array(grad) * (1.0 / n_pairs)


def naive_preference_loss(f, pairs, costs=None):
    """Loop over the pairs; row (i, j) means j is preferred to i."""
    f = [float(v) for v in f]
    pairs = [(int(a), int(b)) for a, b in np.asarray(pairs).reshape(-1, 2)]
    m = len(f)
    grad = [0.0] * m
    loss = 0.0
    for t, (i, j) in enumerate(pairs):
        cost = 1.0 if costs is None else float(costs[t])
        margin = 1.0 + f[i] - f[j]
        if margin > 0:
            loss += cost * margin
            grad[i] += cost
            grad[j] -= cost
    if len(pairs) == 0:
        return 0.0, np.zeros(m)
    return loss / len(pairs), np.array(grad) * (1.0 / len(pairs))
