"""Slow, readable reference implementations the fast kernels are tested against.

Everything here is plain Python/numpy written for clarity, not speed: the counter-based
random generator on Python integers, the r-th negative by listing the negatives, and one
epoch of WARP/BPR SGD visiting positives one at a time.
"""

import numpy as np

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB


def mix64(z):
    z &= MASK
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def stream_key(seed, epoch, sample):
    k = mix64(seed + GOLDEN)
    k = mix64(k ^ ((epoch * M1 + 1) & MASK))
    return mix64(k ^ ((sample * M2 + GOLDEN) & MASK))


def draw(key, counter):
    return mix64(key + (counter + 1) * GOLDEN)


def draw_below(key, counter, n):
    return ((draw(key, counter) >> 32) * n) >> 32


def draw_unit(key, counter):
    """Uniform float in [0, 1) with 53 random bits of draw ``counter``."""
    return (draw(key, counter) >> 11) / 2.0**53


def negatives_of(row_items, n_items):
    """Sorted list of the items not in ``row_items``."""
    taken = set(int(i) for i in row_items)
    return [j for j in range(n_items) if j not in taken]


REDRAWS = 32
ATTEMPT_STRIDE = 2**40


def draw_negative(key, counter, row_items, n_items):
    """Draw ``counter`` of stream ``key``: a uniform item, redrawn (attempt ``a`` at
    position ``counter + a * 2**40``) while it is in ``row_items``; after ``REDRAWS``
    positives, the ``draw_below``-th of the listed negatives."""
    taken = set(int(i) for i in row_items)
    for attempt in range(REDRAWS):
        j = draw_below(key, counter + attempt * ATTEMPT_STRIDE, n_items)
        if j not in taken:
            return j
    negs = negatives_of(row_items, n_items)
    return negs[draw_below(key, counter + REDRAWS * ATTEMPT_STRIDE, len(negs))]


def warp_epoch(U, V, b, GU, GV, Gb, X, weights, order, table, *, lr, alpha, max_sampled,
               adagrad, seed, epoch, loss="warp", max_norm=0.0, freeze_items=False,
               max_violators=1):
    """One epoch of the WARP (or BPR) update rule, one positive at a time, in place.

    Mirrors ``warprec._kernels.train.train_epoch`` with one thread and uniform negatives:
    for positive ``(u, i)`` draw negatives ``j`` (:func:`draw_negative`, counters 0, 1, ...)
    until ``1 + f(u, j) > f(u, i)``; with N draws the rank is ``max(1, (Y-1)//N)`` and the
    gradient of ``L(rank) * (f(u, j) - f(u, i))`` (BPR: of ``-log sigmoid(f_i - f_j)``) is
    taken w.r.t. U[u], V[i], V[j], b[i], b[j]; the touched factor rows (not the biases)
    also decay by ``(1 - lr * alpha)``; Adagrad divides by the root of the accumulated
    squared gradient. With ``freeze_items`` only U[u] (and GU[u]) change.

    With ``max_violators`` c > 1 the draws go on after the first violator until c are
    found or ``max_sampled`` draws pass (N: the draw of the c-th, else ``max_sampled``);
    with n > 1 found the rank is ``max(1, n * (Y-1) // N)`` and one step descends
    ``L(rank) / n * sum_j (f(u, j) - f(u, i))`` (:func:`_list_step`).
    """
    n_items = V.shape[0]
    f32 = np.float32
    for p in order:
        u = int(np.searchsorted(X.indptr, p, side="right") - 1)
        row = X.indices[X.indptr[u]:X.indptr[u + 1]]
        negs = negatives_of(row, n_items)
        Y = len(negs)
        if Y == 0:
            continue
        key = stream_key(seed, epoch, int(p))
        i = int(X.indices[p])
        w = f32(weights[p])
        f_i = f32(U[u] @ V[i] + b[i])
        if loss == "bpr":
            j = draw_negative(key, 0, row, n_items)
            x = float(f_i - f32(U[u] @ V[j] + b[j]))
            g = f32(w * f32(1.0 / (1.0 + np.exp(x))))
        else:
            found = []
            for trial in range(1, max_sampled + 1):
                j = draw_negative(key, trial - 1, row, n_items)
                if f32(U[u] @ V[j] + b[j]) + 1.0 > f_i:
                    found.append(j)
                    if len(found) == max_violators:
                        break
            if not found:
                continue
            rank = max(len(found) * (Y - 1) // trial, 1)
            lw = table[min(rank, Y)]
            if lw == 0:
                continue
            if len(found) > 1:
                _list_step(U, V, b, GU, GV, Gb, u, [i] + found,
                           [-lw] + [lw / len(found)] * len(found), w, lr=lr, alpha=alpha,
                           adagrad=adagrad, max_norm=max_norm, freeze_items=freeze_items)
                continue
            j = found[0]
            g = f32(w * lw)
        grads = {("U", u): g * (V[j] - V[i]), ("V", i): -g * U[u], ("V", j): g * U[u]}
        if freeze_items:
            grads = {("U", u): grads[("U", u)]}
        decay = f32(1.0 - f32(lr) * f32(alpha))
        new = {}
        for (kind, r), grad in grads.items():
            param, acc = (U, GU) if kind == "U" else (V, GV)
            if adagrad:
                a = acc[r] + grad * grad
                new[(kind, r)] = (decay * param[r] - f32(lr) * grad / np.sqrt(a), a)
            else:
                new[(kind, r)] = (decay * param[r] - f32(lr) * grad, None)
        for (kind, r), (value, a) in new.items():
            if max_norm > 0 and np.linalg.norm(value) > max_norm:
                value = value * f32(max_norm / np.linalg.norm(value))
            (U if kind == "U" else V)[r] = value
            if a is not None:
                (GU if kind == "U" else GV)[r] = a
        for item, gb in ((i, -g), (j, g)):
            if freeze_items:
                break
            if adagrad:
                Gb[item] += gb * gb
                b[item] = b[item] - f32(lr) * gb / np.sqrt(Gb[item])
            else:
                b[item] = b[item] - f32(lr) * gb


def _list_step(U, V, b, GU, GV, Gb, u, items, grads, w, *, lr, alpha, adagrad, max_norm,
               freeze_items):
    """One step on ``w * sum_t grads[t] * f(u, items[t])``: the item rows (and biases) in
    list order, each from the user row before the step, then the user row; every factor
    row touched decays by ``1 - lr * alpha`` once per appearance in the list."""
    f32 = np.float32
    decay = f32(1.0 - f32(lr) * f32(alpha))

    def step(param, acc, r, grad):
        if adagrad:
            acc[r] = acc[r] + grad * grad
            value = decay * param[r] - f32(lr) * grad / np.sqrt(acc[r])
        else:
            value = decay * param[r] - f32(lr) * grad
        if max_norm > 0 and np.linalg.norm(value) > max_norm:
            value = value * f32(max_norm / np.linalg.norm(value))
        param[r] = value

    user_grad = sum(f32(w * g) * V[r] for r, g in zip(items, grads))
    if not freeze_items:
        for r, g in zip(items, grads):
            g = f32(w * g)
            step(V, GV, r, g * U[u])
            if adagrad:
                Gb[r] += g * g
                b[r] = b[r] - f32(lr) * g / np.sqrt(Gb[r])
            else:
                b[r] = b[r] - f32(lr) * g
    step(U, GU, u, user_grad)


def _sphere_step(param, acc, r, grad, lr, adagrad):
    """Step ``param[r]`` along ``-grad`` (Adagrad-scaled), then rescale it to unit norm."""
    f32 = np.float32
    if adagrad:
        acc[r] = acc[r] + grad * grad
        value = param[r] - f32(lr) * grad / np.sqrt(acc[r])
    else:
        value = param[r] - f32(lr) * grad
    param[r] = value / np.linalg.norm(value)


def _cos_grads(a, v, c):
    """The gradients of ``cos(a, v)`` (of value ``c``) with respect to ``a`` and ``v``:
    ``v / (|a| |v|) - c a / |a|^2`` and the same with the roles swapped."""
    na, nv = np.linalg.norm(a), np.linalg.norm(v)
    return v / (na * nv) - c * a / na**2, a / (na * nv) - c * v / nv**2


def _dropout_mask(key, d, dropout):
    """Coordinate ``f`` is kept when ``draw_unit(key, 33 * 2**40 + f) >= dropout``."""
    return np.array([draw_unit(key, 33 * 2**40 + f) >= dropout for f in range(d)],
                    dtype=np.float32)


def _sphere_positives(U, X, order, seed, epoch, dropout):
    """The positives of ``order`` that a cosine loss steps on: ``(p, u, row, n_neg, key,
    mask, a)`` with the user's positives ``row`` and ``n_neg`` negatives, the sample's
    stream ``key``, the dropout ``mask`` and the user vector of the step ``a = mask *
    U[u]`` (skipping users without negatives and masks that leave a zero vector)."""
    for p in order:
        u = int(np.searchsorted(X.indptr, p, side="right") - 1)
        row = X.indices[X.indptr[u]:X.indptr[u + 1]]
        n_neg = X.shape[1] - len(row)
        if n_neg == 0:
            continue
        key = stream_key(seed, epoch, int(p))
        mask = _dropout_mask(key, U.shape[1], dropout)
        a = mask * U[u]
        if np.any(a):
            yield int(p), u, row, n_neg, key, mask, a


def ccl_epoch(U, V, GU, GV, X, weights, order, *, lr, n_negatives, margin, negative_weight,
              adagrad, seed, epoch, freeze_items=False, dropout=0.0):
    """One epoch of the cosine contrastive loss on unit rows, one positive at a time, in
    place (``warprec._kernels.ccl`` with one thread and uniform negatives).

    For positive ``(u, i)`` with weight ``w``: ``n_negatives`` negatives drawn with
    :func:`draw_negative` (counters 0, 1, ...). With ``dropout``, coordinate ``f`` of the
    user vector is dropped when ``draw_unit(key, 33 * 2**40 + f) < dropout``: the user
    vector of the step is ``a = m * U[u]`` (mask ``m``), and cosines are ``cos(a, v) =
    <a, v> / (|a| |v|)``. The loss is ``w * (1 - c_i)`` plus ``w * negative_weight /
    n_negatives * (c_j - margin)`` for every draw with ``c_j = cos(a, V[j]) > margin``.
    Gradients are those of the cosine of free vectors (:func:`_cos_grads`), chained
    through the mask for the user row (``m * d cos / da``). Rows step in this order, each
    then rescaled to unit norm: V[i], every negative within the margin as it is drawn
    (its cosine taken with the rows as they are at that moment), U[u] last with the sum
    of its gradients. A step whose mask leaves a zero vector is skipped.
    """
    n_items = V.shape[0]
    f32 = np.float32

    def cos_and_grads(a, v):
        c = f32(a @ v / (np.linalg.norm(a) * np.linalg.norm(v)))
        return (c,) + _cos_grads(a, v, c)

    for p, u, row, _, key, mask, a in _sphere_positives(U, X, order, seed, epoch, dropout):
        i = int(X.indices[p])
        w = f32(weights[p])
        c_i, du, dv = cos_and_grads(a, V[i])
        pull = w if c_i < 1 else f32(0.0)
        user_grad = -pull * mask * du
        if pull != 0 and not freeze_items:
            _sphere_step(V, GV, i, -pull * dv, lr, adagrad)
        push = f32(w * f32(negative_weight) / n_negatives)
        for t in range(n_negatives):
            j = draw_negative(key, t, row, n_items)
            c_j, du, dv = cos_and_grads(a, V[j])
            if c_j > f32(margin):
                user_grad = user_grad + push * mask * du
                if not freeze_items:
                    _sphere_step(V, GV, j, push * dv, lr, adagrad)
        _sphere_step(U, GU, u, user_grad, lr, adagrad)


def softmax_epoch(U, V, GU, GV, X, weights, order, *, lr, n_negatives, temperature, adagrad,
                  seed, epoch, freeze_items=False, dropout=0.0):
    """One epoch of the sampled softmax on unit rows (``warprec._kernels.ccl`` with
    ``softmax``, one thread, uniform negatives), in place.

    The draws and the dropout mask are those of :func:`ccl_epoch`. For positive ``(u, i)``
    with weight ``w`` and the user's ``Y`` negatives, all the cosines ``c_k = cos(a,
    V[k])`` are taken first; the logits are ``c_i / t`` and ``c_j / t + log(Y / N)``;
    ``p`` is their softmax and the loss ``-w log p_i``, whose gradient with respect to
    ``c_k`` is ``w (p_k - [k = i]) / t``. V[i] steps, then each draw's row in the order
    drawn (its gradient taken with the row as it is then, with the cosine of the first
    pass), then U[u] with the sum of its gradients.
    """
    n_items = V.shape[0]
    for p, u, row, n_neg, key, mask, a in _sphere_positives(U, X, order, seed, epoch,
                                                            dropout):
        items = [int(X.indices[p])] + [draw_negative(key, t, row, n_items)
                                       for t in range(n_negatives)]
        cos = np.array([np.float32(a @ V[k] / (np.linalg.norm(a) * np.linalg.norm(V[k])))
                        for k in items], dtype=np.float64)
        logits = cos / np.float64(np.float32(temperature))
        logits[1:] += np.log(n_neg / n_negatives)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        w = np.float64(weights[p])
        user_grad = np.zeros(U.shape[1], np.float32)
        for n, k in enumerate(items):
            g = np.float32(w * (probs[n] - (n == 0)) / np.float32(temperature))
            du, dv = _cos_grads(a, V[k], np.float32(cos[n]))
            user_grad = user_grad + g * mask * du
            if not freeze_items:
                _sphere_step(V, GV, k, g * dv, lr, adagrad)
        _sphere_step(U, GU, u, user_grad, lr, adagrad)


def fisher_yates(slots, key):
    """Shuffle the list ``slots`` in place: step ``t`` (last slot down to slot 1) swaps
    slot ``t`` with slot ``draw_below(key, t, t + 1)``."""
    for t in range(len(slots) - 1, 0, -1):
        r = draw_below(key, t, t + 1)
        slots[t], slots[r] = slots[r], slots[t]
    return slots


def shuffle(n, seed, epoch):
    """A permutation of ``0 .. n - 1``: Fisher-Yates with the stream
    ``(seed, epoch, 2**64 - 1)``."""
    return np.array(fisher_yates(list(range(n)), stream_key(seed, epoch, 2**64 - 1)),
                    dtype=np.int64)


def user_grouped_order(indptr, users, seed, epoch):
    """The epoch order of ``sample_order="users"``: for each user of ``users`` in turn,
    its positions ``indptr[u] .. indptr[u + 1] - 1`` shuffled by Fisher-Yates with the
    user's stream ``(seed, epoch, 2**63 + u)``."""
    order = []
    for u in users:
        slots = list(range(int(indptr[u]), int(indptr[u + 1])))
        order.extend(fisher_yates(slots, stream_key(seed, epoch, (1 << 63) + int(u))))
    return np.array(order, dtype=np.int64)


def score_bound(U, V, b):
    """``d max|U| max|V| + max|b|`` by numpy reductions (NaN if any entry is NaN)."""
    def max_abs(a):
        return max(float(a.max()), -float(a.min())) if a.size else 0.0

    return U.shape[1] * max_abs(U) * max_abs(V) + max_abs(b)


def feature_representation(F, E, row):
    """A hybrid model's representation of entity ``row``: ``sum_f F[row, f] E[f]`` over
    its features (``F`` a dense feature matrix), in float32."""
    f32 = np.float32
    return sum((f32(F[row, f]) * E[f] for f in np.flatnonzero(F[row])),
               np.zeros(E.shape[1], f32)).astype(f32)


def feature_bias(F, c, row):
    """An item's bias in the hybrid model: ``sum_f F[row, f] c[f]``, in float32."""
    f32 = np.float32
    return f32(sum(f32(F[row, f]) * c[f] for f in np.flatnonzero(F[row])))


#: Stream position of a sample's feature-negatives coin (``_kernels.features``).
FEATURE_STREAM = (REDRAWS + 1) * ATTEMPT_STRIDE


def pool_negative(key, t, pool, row_items, n_items):
    """Draw ``t`` of a feature-negatives step: a uniform item of ``pool``, redrawn
    (attempt ``a`` at ``FEATURE_STREAM + 2 + t + a * 2**40``) while it is in
    ``row_items``; after ``REDRAWS`` positives, :func:`draw_negative`'s draw ``t``."""
    taken = set(int(i) for i in row_items)
    for attempt in range(REDRAWS):
        j = int(pool[draw_below(key, FEATURE_STREAM + 2 + t + attempt * ATTEMPT_STRIDE,
                                len(pool))])
        if j not in taken:
            return j
    return draw_negative(key, t, row_items, n_items)


def features_epoch(EU, EI, c, GU, GI, Gc, FU, FI, X, order, table, *, lr, alpha,
                   max_sampled, adagrad, seed, epoch, loss="warp", feature_negatives=0.0):
    """One epoch of the hybrid model, one positive at a time, in place.

    Mirrors ``warprec._kernels.features`` with one thread: representations are the
    weighted sums of feature rows (``FU``, ``FI`` dense feature matrices), the draws and
    the rank estimate are :func:`warp_epoch`'s, and an update moves the user's feature
    rows, then item i's (factors and biases), then item j's, each along its weight times
    the gradient of its representation; a feature's row decays by
    ``1 - lr * alpha / sqrt(m)`` with ``m`` the number of entities that have the feature.
    With ``feature_negatives = p``: if the draw at ``FEATURE_STREAM`` is below ``p``, one
    of item i's features that other items have (the draw at ``FEATURE_STREAM + 1``
    among them) gives the pool of the step's draws (:func:`pool_negative`), and WARP's
    rank is estimated among its ``m`` items, ``L(min(max((m - 2) // N, 1), m - 1))``.
    """
    f32 = np.float32
    n_items = FI.shape[0]
    rep = feature_representation

    def bias(row):
        return feature_bias(FI, c, row)

    def step(F, E, G, cb, Gb, row, direction, g, bias_g):
        for f in np.flatnonzero(F[row]):
            x = f32(F[row, f])
            keep = f32(1.0) - f32(lr) * f32(alpha) * f32(1.0 / np.sqrt(np.count_nonzero(F[:, f])))
            gr = (g * x * direction).astype(f32)
            if adagrad:
                G[f] += gr * gr
                E[f] = keep * E[f] - f32(lr) * gr / np.sqrt(G[f])
            else:
                E[f] = keep * E[f] - f32(lr) * gr
            if cb is not None:
                gb = f32(bias_g * x)
                if adagrad:
                    Gb[f] += gb * gb
                    cb[f] -= f32(lr) * gb / np.sqrt(Gb[f])
                else:
                    cb[f] -= f32(lr) * gb

    for p in order:
        u = int(np.searchsorted(X.indptr, p, side="right") - 1)
        row = X.indices[X.indptr[u]:X.indptr[u + 1]]
        Y = n_items - len(row)
        if Y == 0:
            continue
        key = stream_key(seed, epoch, int(p))
        i = int(X.indices[p])
        ru, ri = rep(FU, EU, u), rep(FI, EI, i)
        f_i = f32(ru @ ri + bias(i))
        pool = None
        if feature_negatives > 0 and draw_unit(key, FEATURE_STREAM) < feature_negatives:
            shared = [f for f in np.flatnonzero(FI[i]) if np.count_nonzero(FI[:, f]) > 1]
            if shared:
                pool = np.flatnonzero(FI[:, shared[draw_below(key, FEATURE_STREAM + 1,
                                                               len(shared))]])

        def negative(t):
            if pool is None:
                return draw_negative(key, t, row, n_items)
            return pool_negative(key, t, pool, row, n_items)

        Yr = Y if pool is None else len(pool) - 1
        if loss == "bpr":
            j = negative(0)
            rj = rep(FI, EI, j)
            x = float(f_i - f32(ru @ rj + bias(j)))
            g = f32(1.0 / (1.0 + np.exp(x)))
        else:
            g = j = None
            for trial in range(1, max_sampled + 1):
                cand = negative(trial - 1)
                rj = rep(FI, EI, cand)
                if f32(ru @ rj + bias(cand)) + 1.0 > f_i:
                    j = cand
                    g = f32(table[min(max((Yr - 1) // trial, 1), Yr)])
                    break
            if g is None or g == 0:
                continue
        step(FU, EU, GU, None, None, u, (rj - ri).astype(f32), g, 0.0)
        step(FI, EI, GI, c, Gc, i, ru, -g, -g)
        step(FI, EI, GI, c, Gc, j, ru, g, g)
