"""The training kernel and its random generator against the slow references in naive.py."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit, prange

import naive
from kernel_calls import filter_of as _filter
from kernel_calls import run_epoch
from warprec._kernels import atomic, config, negatives, rng, train
from warprec.weights import resolve_rank_weighting


def test_counter_rng_matches_python_integers():
    for seed, epoch, sample in [(0, 0, 0), (1, 2, 3), (2**63 - 5, 99, 123456789)]:
        key = naive.stream_key(seed, epoch, sample)
        assert int(rng.stream_key(seed, epoch, sample)) == key
        for counter in range(5):
            assert int(rng.draw(np.uint64(key), counter)) == naive.draw(key, counter)
            assert int(rng.draw_below(np.uint64(key), counter, 1682)) == \
                naive.draw_below(key, counter, 1682)


def test_draw_below_is_uniform():
    n, draws = 7, 70_000
    key = np.uint64(naive.stream_key(42, 0, 0))
    counts = np.bincount([int(rng.draw_below(key, c, n)) for c in range(draws)], minlength=n)
    expected = draws / n
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 22.5  # 99.9% quantile of chi-square with 6 degrees of freedom


@pytest.mark.parametrize("positives", [[], [0], [4], [0, 1, 2], [1, 3, 5, 7], [0, 9], [2, 3, 8]])
def test_nth_negative_lists_the_negatives_in_order(positives):
    n_items = 10
    indices = np.array(positives, dtype=np.int32)
    expected = naive.negatives_of(positives, n_items)
    got = [negatives.nth_negative(indices, 0, len(indices), r) for r in range(len(expected))]
    assert got == expected


def _problem(seed, n_users=12, n_items=15, d=6, density=0.3):
    gen = np.random.default_rng(seed)
    X = sp.random(n_users, n_items, density=density, format="csr", random_state=seed,
                  dtype=np.float32)
    X.data[:] = 1.0
    X.sort_indices()
    X.indices = X.indices.astype(np.int32)
    U = (gen.standard_normal((n_users, d)) * 0.3).astype(np.float32)
    V = (gen.standard_normal((n_items, d)) * 0.3).astype(np.float32)
    b = (gen.standard_normal(n_items) * 0.1).astype(np.float32)
    return X, U, V, b, gen


@pytest.mark.parametrize("loss_code,adagrad,alpha,max_norm,prefetch,words,d", [
    (train.LOSS_WARP, True, 0.0, 0.0, False, None, 6),
    # the trials' fixed-width dot product (same compiled kernel as the case above)
    (train.LOSS_WARP, True, 0.0, 0.0, False, None, config.FIXED_D),
    (train.LOSS_WARP, True, 0.0, 0.0, True, 1, 6),
    (train.LOSS_WARP, False, 0.05, 0.0, False, 2, 6),
    (train.LOSS_WARP, True, 0.02, 0.8, True, None, 6),
    (train.LOSS_BPR, True, 0.01, 0.0, False, 1, 6),
    (train.LOSS_BPR, False, 0.0, 0.0, True, None, 6),
])
def test_one_epoch_matches_reference(loss_code, adagrad, alpha, max_norm, prefetch, words, d):
    """Prefetching and the filter width are only speed devices: with any of them the
    kernel follows the reference (80 items: 2 words are exact, 1 word is hashed)."""
    X, U, V, b, gen = _problem(7, n_items=80, density=0.15, d=d)
    weights = gen.uniform(0.5, 2.0, X.nnz).astype(np.float32)
    order = gen.permutation(X.nnz)
    table = resolve_rank_weighting("harmonic", X.shape[1]).table
    fast = [a.copy() for a in (U, V, b)] + [np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    slow = [a.copy() for a in fast]
    ok, work = run_epoch(fast, X, order, table, loss=loss_code, adagrad=adagrad, alpha=alpha,
                         max_norm=max_norm, prefetch=prefetch, words=words, seed=1234, epoch=3,
                         sample_weight=weights)
    stats = work.stats
    assert ok
    naive.warp_epoch(*slow, X, weights, order, table, lr=0.1, alpha=alpha, max_sampled=5,
                     adagrad=adagrad, seed=1234, epoch=3,
                     loss="bpr" if loss_code == train.LOSS_BPR else "warp", max_norm=max_norm)
    for got, want in zip(fast, slow):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert stats[0, train.STAT_SAMPLES] == X.nnz
    assert stats[0, train.STAT_UPDATES] > 0


@pytest.mark.parametrize("adagrad,alpha,max_norm,prefetch,freeze_items,n_threads", [
    (True, 0.02, 0.0, True, False, 1),
    (False, 0.05, 0.8, False, False, 1),
    (True, 0.02, 0.0, False, True, 1),
    # the parallel variant compiles the violators' step separately
    # (violators.violators_step); run here with one slice, it follows the reference too
    (True, 0.02, 0.0, True, False, 2),
])
def test_several_violators_match_reference(adagrad, alpha, max_norm, prefetch, freeze_items,
                                           n_threads):
    """``max_violators`` > 1: the draws go on after the first violator, the rank is
    estimated from the violators' share of the draws, and one list step descends the
    hinges of all of them with the rank weight shared (tests/naive.py)."""
    X, U, V, b, gen = _problem(11, n_items=80, density=0.15, d=6)
    weights = gen.uniform(0.5, 2.0, X.nnz).astype(np.float32)
    order = gen.permutation(X.nnz)
    table = resolve_rank_weighting("harmonic", X.shape[1]).table
    fast = [a.copy() for a in (U, V, b)] + [np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    slow = [a.copy() for a in fast]
    ok, work = run_epoch(fast, X, order, table, adagrad=adagrad, alpha=alpha,
                         max_norm=max_norm, prefetch=prefetch, seed=77, epoch=2,
                         sample_weight=weights, max_sampled=12, max_violators=4,
                         freeze_items=freeze_items, n_threads=n_threads, slices=1)
    assert ok and work.stats.shape[0] == 1
    naive.warp_epoch(*slow, X, weights, order, table, lr=0.1, alpha=alpha, max_sampled=12,
                     adagrad=adagrad, seed=77, epoch=2, max_norm=max_norm,
                     freeze_items=freeze_items, max_violators=4)
    for got, want in zip(fast, slow):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    # several violators were found for some positives: one violator each moves otherwise
    single = [a.copy() for a in (U, V, b)] + [np.ones_like(U), np.ones_like(V),
                                              np.ones_like(b)]
    run_epoch(single, X, order, table, adagrad=adagrad, alpha=alpha, max_norm=max_norm,
              seed=77, epoch=2, sample_weight=weights, max_sampled=12,
              freeze_items=freeze_items)
    assert not np.array_equal(single[0], fast[0])
    if n_threads > 1:
        # two slices racing on shared rows: only finite, moved parameters are promised
        params = [a.copy() for a in (U, V, b)] + [np.ones_like(U), np.ones_like(V),
                                                  np.ones_like(b)]
        ok, _ = run_epoch(params, X, order, table, alpha=alpha, seed=77, epoch=2,
                          max_sampled=12, max_violators=4, n_threads=2)
        assert ok and all(np.isfinite(a).all() for a in params)
        assert not np.array_equal(params[1], V)


@pytest.mark.parametrize("loss_code,max_norm", [(train.LOSS_WARP, 0.0), (train.LOSS_BPR, 0.5)])
def test_frozen_items_move_only_the_user_rows(loss_code, max_norm):
    """The fold-in mode: the user rows follow the reference's user updates, and the item
    factors, biases and their accumulators keep every bit."""
    X, U, V, b, gen = _problem(9, n_items=60, density=0.2)
    order = gen.permutation(X.nnz)
    table = resolve_rank_weighting("harmonic", X.shape[1]).table
    fast = [a.copy() for a in (U, V, b)] + [np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    slow = [a.copy() for a in fast]
    ok, _ = run_epoch(fast, X, order, table, loss=loss_code, alpha=0.02, max_norm=max_norm,
                      seed=5, epoch=1, freeze_items=True)
    assert ok
    naive.warp_epoch(*slow, X, np.ones(X.nnz, np.float32), order, table, lr=0.1, alpha=0.02,
                     max_sampled=5, adagrad=True, seed=5, epoch=1,
                     loss="bpr" if loss_code == train.LOSS_BPR else "warp", max_norm=max_norm,
                     freeze_items=True)
    for got, want in zip(fast, slow):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert not np.array_equal(fast[0], U)
    for got, before in zip(fast[1:3] + fast[4:], (V, b, np.ones_like(V), np.ones_like(b))):
        assert got.tobytes() == before.tobytes()


@pytest.mark.parametrize("kos_n,neg_cdf", [(3, False), (1, True), (4, True)])
def test_prefetching_changes_no_draw(kos_n, neg_cdf):
    """The prefetching path draws the next sample's candidates early: the same draws as
    without prefetching, also when k-OS draws positives first or negatives are weighted."""
    X, U, V, b, gen = _problem(5, n_users=20, n_items=40, density=0.2)
    order = gen.permutation(X.nnz)
    table = resolve_rank_weighting("harmonic", X.shape[1]).table
    cdf = np.cumsum(gen.uniform(0.1, 1.0, X.shape[1])) if neg_cdf else np.zeros(0)
    cdf = cdf / cdf[-1] if neg_cdf else cdf
    results = []
    for prefetch in (False, True):
        params = [a.copy() for a in (U, V, b)] + [np.ones_like(U), np.ones_like(V),
                                                  np.ones_like(b)]
        ok, work = run_epoch(params, X, order, table, max_sampled=6, kos_k=2, kos_n=kos_n,
                             neg_cdf=cdf, alpha=0.01, prefetch=prefetch, seed=99, epoch=2)
        assert ok
        results.append((params, work.stats.copy()))
    (fast, fast_stats), (slow, slow_stats) = results
    for a, b_ in zip(fast, slow):
        assert a.tobytes() == b_.tobytes()
    np.testing.assert_array_equal(fast_stats, slow_stats)


# (SGD with max-norm is left out: one more kernel specialisation, ~9 s of CI compile,
# for the same buffered path)
@pytest.mark.parametrize("adagrad,max_norm", [(False, 0.0), (True, 0.0), (True, 1e38)])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_kernel_leaves_no_non_finite_parameter(adagrad, max_norm, n_threads):
    """Updates that overflow float32 stop the epoch and leave every parameter finite.
    Without max-norm the rows are stepped in place and the coordinates that overflowed
    are reset (factors 0, accumulators 1); with it the update is not applied at all."""
    X, U, V, b, gen = _problem(3)
    U[:], V[:] = 10.0, 1e37  # scores overflow float32: every update is non-finite
    V[::2] = -1e37
    params = [U, V, b, np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    before = [p.copy() for p in params]
    table = resolve_rank_weighting("auc", X.shape[1]).table
    # BPR updates every positive: the first update already overflows
    ok, _ = run_epoch(params, X, np.arange(X.nnz), table, loss=train.LOSS_BPR,
                      learning_rate=1e6, max_norm=max_norm, adagrad=adagrad, seed=1,
                      n_threads=n_threads)
    assert not ok
    for p in params:
        assert np.isfinite(p).all()
    if max_norm and n_threads == 1:
        for p, q in zip(params, before):
            np.testing.assert_array_equal(p, q)
    elif n_threads == 1:
        # one update ran: the factor coordinates it changed are the reset ones (its finite
        # steps vanish against 1e37), and its biases were not written
        changed = [p != q for p, q in zip(params, before)]
        assert changed[0].any()
        assert (params[0][changed[0]] == 0).all() and (params[1][changed[1]] == 0).all()
        assert not changed[2].any() and not changed[5].any()


def test_work_arrays_made_once_serve_every_epoch():
    """A fit makes the slices' work arrays once (``make_work``): epochs that share them
    give the same parameters as epochs that make their own, also after an epoch that
    stopped on a non-finite update (the stop flag and chunk counter start afresh)."""
    X, U, V, b, gen = _problem(5, n_users=20, n_items=40, density=0.2)
    table = resolve_rank_weighting("harmonic", X.shape[1]).table
    orders = [gen.permutation(X.nnz) for _ in range(3)]
    settings = dict(max_sampled=6, kos_k=2, alpha=0.01, prefetch=True, seed=99)

    def warp_epochs(work):
        # the settings of test_prefetching_changes_no_draw: its compiled kernel
        params = [a.copy() for a in (U, V, b)] + [np.ones_like(U), np.ones_like(V),
                                                  np.ones_like(b)]
        for epoch in range(3):
            ok, used = run_epoch(params, X, orders[epoch], table, epoch=epoch, work=work,
                                 **settings)
            assert ok
            assert used.stats[0, train.STAT_SAMPLES] == X.nnz
        return params

    mode = train.Mode(train.LOSS_WARP, exact_rank=False, adagrad=True, clip=False,
                      prefetch=True)
    shared = train.make_work(mode, 1, U.shape[1], X.shape[1], 6, 1)
    for got, want in zip(warp_epochs(shared), warp_epochs(None)):
        assert got.tobytes() == want.tobytes()

    # BPR on 2 threads (the settings of test_kernel_leaves_no_non_finite_parameter)
    mode = train.Mode(train.LOSS_BPR, exact_rank=False, adagrad=True, clip=False,
                      prefetch=False)
    work = train.make_work(mode, 2, U.shape[1], X.shape[1], 5, 1)
    for scale, expect_ok in ((1e37, False), (0.3, True)):
        params = [np.full_like(U, 10.0), (V * scale).astype(np.float32), b.copy(),
                  np.ones_like(U), np.ones_like(V), np.ones_like(b)]
        ok, _ = run_epoch(params, X, np.arange(X.nnz), table, loss=train.LOSS_BPR,
                          learning_rate=1e6 if not expect_ok else 0.1, seed=1, n_threads=2,
                          work=work)
        assert ok == expect_ok
        if expect_ok:
            assert work.stats[:, train.STAT_SAMPLES].sum() == X.nnz


def test_nth_negative_random_rows():
    gen = np.random.default_rng(11)
    for _ in range(300):
        n_items = int(gen.integers(1, 60))
        positives = np.sort(gen.choice(n_items, int(gen.integers(0, n_items)), replace=False))
        indices = positives.astype(np.int32)
        expected = naive.negatives_of(positives, n_items)
        got = [negatives.nth_negative(indices, 0, len(indices), r)
               for r in range(len(expected))]
        assert got == expected


@pytest.mark.parametrize("n_items", [1, 63, 64, 65, 200])
def test_filters_of_any_width_answer_membership_exactly(n_items):
    """Exact filters and hashed ones (fewer words than items / 64) tell positives from
    negatives exactly; the hashed ones through a binary search on a set bit."""
    gen = np.random.default_rng(n_items)
    rows = [np.sort(gen.choice(n_items, int(gen.integers(0, n_items + 1)), replace=False))
            for _ in range(25)]
    X = sp.csr_matrix((np.ones(sum(map(len, rows)), np.float32),
                       np.concatenate(rows).astype(np.int32),
                       np.concatenate([[0], np.cumsum(list(map(len, rows)))])),
                      shape=(len(rows), n_items))
    exact = negatives.filter_words(*X.shape)
    assert exact == max((n_items + 63) // 64, 1)
    for words in sorted({1, 2, exact}):
        filt = _filter(X, words)
        shift = negatives.filter_shift(words, n_items)
        assert (shift == 0) == (words * 64 >= n_items)
        for u, row in enumerate(rows):
            start, end = X.indptr[u], X.indptr[u + 1]
            got = [negatives.is_positive(filt, shift, u, j, X.indices, start, end)
                   for j in range(n_items)]
            assert got == [j in set(row.tolist()) for j in range(n_items)]


def test_filter_budget_hashes_to_a_power_of_two():
    assert negatives.filter_words(943, 1682) == 27  # ML-100K: exact, 204 KB
    assert negatives.filter_words(100_000, 40_000, max_bytes=16 * 2**20) == 16
    assert negatives.filter_words(10**8, 40_000, max_bytes=16 * 2**20) == 1


def test_negative_draws_follow_the_reference():
    """Redraws of positives, and the exact fallback after REDRAWS positives in a row
    (rows holding 60 of 64 items reach it about once in eight draws)."""
    gen = np.random.default_rng(3)
    fallbacks = 0
    for n_items, n_pos in [(64, 60), (64, 63), (100, 10), (300, 150), (5, 0)]:
        row = np.sort(gen.choice(n_items, n_pos, replace=False)).astype(np.int32)
        X = sp.csr_matrix((np.ones(n_pos, np.float32), row, [0, n_pos]), shape=(1, n_items))
        for words in (1, negatives.filter_words(1, n_items)):
            filt = _filter(X, words)
            shift = negatives.filter_shift(words, n_items)
            for counter in range(200):
                key = naive.stream_key(5, 1, counter)
                got = negatives.draw_negative(row, 0, n_pos, 0, n_items, np.zeros(0), filt,
                                              shift, np.uint64(key), counter)
                assert got == naive.draw_negative(key, counter, row, n_items)
                assert got not in set(row.tolist())
                fallbacks += all(naive.draw_below(key, counter + a * naive.ATTEMPT_STRIDE,
                                                  n_items) in set(row.tolist())
                                 for a in range(naive.REDRAWS))
    assert fallbacks > 20


def test_negative_draws_are_uniform_over_the_negatives():
    n_items = 64
    row = np.arange(0, 64, 2, dtype=np.int32)[:30]  # 30 positives, 34 negatives
    X = sp.csr_matrix((np.ones(30, np.float32), row, [0, 30]), shape=(1, n_items))
    filt = _filter(X)
    key = np.uint64(naive.stream_key(8, 0, 0))
    draws = [negatives.draw_negative(row, 0, 30, 0, n_items, np.zeros(0), filt, 0, key, c)
             for c in range(34_000)]
    counts = np.bincount(draws, minlength=n_items)
    assert counts[row].sum() == 0
    neg = np.setdiff1d(np.arange(n_items), row)
    chi2 = ((counts[neg] - 1000) ** 2 / 1000).sum()
    assert chi2 < 66.0  # 99.9% quantile of chi-square with 33 degrees of freedom


def test_exact_rank_mode_counts_every_violator():
    X, U, V, b, gen = _problem(5)
    table = resolve_rank_weighting("auc", X.shape[1]).table
    users = np.repeat(np.arange(X.shape[0], dtype=np.int32), np.diff(X.indptr))
    params = [U.copy(), V.copy(), b.copy(), np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    # learning_rate 0 turns the epoch into a pure evaluation of the rank loss
    _, work = run_epoch(params, X, np.arange(X.nnz), table, exact_rank=True, adagrad=False,
                        learning_rate=0.0, seed=1)
    stats = work.stats
    scores = U @ V.T + b
    expected = 0.0
    for u in range(X.shape[0]):
        pos = X.indices[X.indptr[u]:X.indptr[u + 1]]
        neg = np.setdiff1d(np.arange(X.shape[1]), pos)
        expected += sum(float((scores[u, neg] >= scores[u, i]).sum()) for i in pos)
    assert stats[0, train.STAT_RANK_LOSS] == pytest.approx(expected)
    assert stats[0, train.STAT_TRIALS] == sum(X.shape[1] - np.diff(X.indptr)[users])


_COMPILED_PATHS = """
import logging
import numpy as np, scipy.sparse as sp
from warprec import WARPFactorizer
from warprec._kernels import losses, ordinal, train, updates, violators, warp
from warprec._trainer import COMPILE_MESSAGE
messages = []
handler = logging.Handler()
handler.emit = lambda record: messages.append(record.getMessage())
logging.getLogger("warprec").addHandler(handler)
logging.getLogger("warprec").setLevel(logging.INFO)
X = sp.random(30, 20, density=0.2, format="csr", random_state=0)
WARPFactorizer(n_components=4, epochs=1, n_threads=1).fit(X)
print(train.epoch_kernel.cache_info().currsize)
for f in (warp.exact_violator, updates.list_update, ordinal.ordinal_list,
          losses.ordinal_loss_grad_unit, ordinal.ordinal_slice, violators.violators_step):
    print(len(f.signatures))
print(messages.count(COMPILE_MESSAGE))
"""


def test_a_fit_compiles_only_the_code_of_its_loss(tmp_path):
    # the first fit's compile time depends on Numba pruning the other modes' branches
    # (the mode's flags are constants of the compiled variant) and compiling one variant;
    # an empty cache makes everything compile here, and the fit says so once; a second
    # process loads the kernels from that cache and says nothing
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _COMPILED_PATHS], env=env, check=True,
                           capture_output=True, text=True).stdout.split() for _ in range(2)]
    assert runs[0] == ["1", "0", "0", "0", "0", "0", "0", "1"]
    assert runs[1] == ["1", "0", "0", "0", "0", "0", "0", "0"]


@njit(parallel=True)
def _claim_concurrently(counter, n_threads, per_thread, out):
    for t in prange(n_threads):
        for k in range(per_thread):
            out[t, k] = atomic.fetch_add(counter, 0, 1)


def test_fetch_add_hands_out_every_value_once():
    counter = np.zeros(1, np.int64)
    out = np.empty((4, 5000), np.int64)
    _claim_concurrently(counter, 4, 5000, out)
    assert counter[0] == 20000
    np.testing.assert_array_equal(np.sort(out.ravel()), np.arange(20000))


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 63, 64, 65, 130, 3000])
def test_threads_visit_every_positive_once(n, n_threads):
    """Threads claim chunks of the order from a shared counter: whatever the sizes, the
    chunks cover the order exactly once (the per-thread sample counts add up to it)."""
    X, U, V, b, gen = _problem(13, n_users=50, n_items=200, density=0.3)
    order = gen.choice(X.nnz, n, replace=False)
    table = resolve_rank_weighting("harmonic", X.shape[1]).table
    params = [U, V, b, np.ones_like(U), np.ones_like(V), np.ones_like(b)]
    ok, work = run_epoch(params, X, order, table, learning_rate=0.05, seed=3,
                         n_threads=n_threads)
    assert ok
    assert work.stats[:, train.STAT_SAMPLES].sum() == n
    assert train.chunk_size(n, n_threads) >= train.CHUNK_MIN


@pytest.mark.parametrize("width,itemsize", [(1, 8), (2, 8), (5, 8), (8, 8), (11, 8), (3, 4),
                                            (16, 4), (64, 4), (100, 8)])
def test_thread_rows_keep_threads_off_shared_cache_lines(width, itemsize):
    for rows in (1, 2, 6):
        padded = train.thread_rows(rows, width, itemsize)
        pad_bytes = (padded - rows) * width * itemsize
        assert pad_bytes >= 64  # a thread's used rows and the next thread's are a line apart
        assert pad_bytes - width * itemsize < 64  # and no more padding than that


def test_epoch_kernel_is_one_cached_variant_per_mode():
    """``epoch_kernel`` hands out one compiled variant per mode and refuses combinations
    that no estimator setting makes (checked before anything compiles)."""
    warp = train.Mode(train.LOSS_WARP, exact_rank=False, adagrad=True, clip=False,
                      prefetch=False)
    assert train.epoch_kernel(warp) is train.epoch_kernel(train.Mode(*warp))
    assert train.epoch_kernel(warp) is not train.epoch_kernel(warp._replace(adagrad=False))
    for bad in (warp._replace(loss=train.LOSS_BPR, exact_rank=True),
                warp._replace(loss=train.LOSS_ORDINAL, prefetch=True),
                warp._replace(loss=7)):
        with pytest.raises(ValueError):
            train.epoch_kernel(bad)
