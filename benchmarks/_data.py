"""Benchmark data: the fixed ML-100K split and a synthetic set from warprec.datasets.

Every library gets the *same* CSR matrices in one shared index space:

* users: the distinct user ids of train ∪ test (sorted), rows of every matrix;
* items: the items of train first (sorted raw ids), then the items that appear only in
  test. Models are trained on the first ``n_train_items`` columns only (an item with no
  training positive has nothing to learn from: LightFM would keep its random init,
  implicit sets it to zero, warprec would only see it as a negative), and scoring ranks
  those columns. Test positives on test-only items stay in the per-user count of
  relevant items (``n_relevant``), so they are always misses: recall and NDCG are divided
  by the full |test_u|, exactly as ``warprec.metrics.evaluate`` does with raw-id frames.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
ML100K_SPLIT = Path(os.environ.get("WARPREC_ML100K_SPLIT",
                                   ROOT.parent / "shared" / "data" / "ml-100k-split"))


@dataclass
class Dataset:
    name: str
    train: sp.csr_matrix          # (n_users, n_train_items), float32 ones, sorted indices
    test: sp.csr_matrix           # (n_users, n_train_items): test positives on known items
    n_relevant: np.ndarray        # (n_users,) int64: |test_u| including unknown items
    eval_users: np.ndarray | None = None   # subset of users to score (None: all)
    info: dict = field(default_factory=dict)

    @property
    def shape(self):
        return self.train.shape

    def describe(self):
        users = int((self.n_relevant > 0).sum())
        return dict(name=self.name, n_users=int(self.train.shape[0]),
                    n_items=int(self.train.shape[1]), n_train=int(self.train.nnz),
                    n_test=int(self.n_relevant.sum()), n_test_users=users,
                    n_eval_users=users if self.eval_users is None else int(self.eval_users.size),
                    **self.info)


def _binary_csr(rows, cols, shape):
    m = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=shape)
    m.sum_duplicates()
    m.data[:] = 1.0
    m.sort_indices()
    return m


def from_frames(name, train, test, info):
    """A Dataset from raw-id train / test frames (columns user_id, item_id), in the shared
    index space of the module docstring."""
    users = np.unique(np.concatenate([train["user_id"].to_numpy(), test["user_id"].to_numpy()]))
    train_items = np.unique(train["item_id"].to_numpy())
    test_only = np.setdiff1d(np.unique(test["item_id"].to_numpy()), train_items)
    items = np.concatenate([train_items, test_only])      # train items first
    n_users, n_known = users.size, train_items.size
    tr_u, tr_i = np.searchsorted(users, train["user_id"]), np.searchsorted(train_items,
                                                                            train["item_id"])
    te_u = np.searchsorted(users, test["user_id"])
    item_order = np.argsort(items)
    te_i = item_order[np.searchsorted(items, test["item_id"], sorter=item_order)]
    known = te_i < n_known
    train_m = _binary_csr(tr_u, tr_i, (n_users, n_known))
    test_m = _binary_csr(te_u[known], te_i[known], (n_users, n_known))
    # distinct (user, item) pairs of the test frame, known or not
    pairs = np.unique(np.stack([te_u, te_i]), axis=1)
    n_relevant = np.bincount(pairs[0], minlength=n_users).astype(np.int64)
    return Dataset(name, train_m, test_m, n_relevant, None,
                   dict(info, test_only_items=int(test_only.size),
                        test_rows_on_unknown_items=int((~known).sum())))


def load_ml100k(path=ML100K_SPLIT):
    """The fixed ML-100K split (positives = ratings >= 4, already filtered in the files)."""
    import pandas as pd

    path = Path(path)
    if not (path / "train.csv").exists():
        return None
    train = pd.read_csv(path / "train.csv")
    test = pd.read_csv(path / "test.csv")
    return from_frames("ml100k", train, test, dict(
        source=str(path),
        unknown_item_handling=("items seen only in test.csv are not scored (no library can "
                               "learn them from train); their test positives count in "
                               "|test_u| as misses")))


def make_synthetic(n_users=100_000, n_items=40_000, n_interactions=5_000_000, *,
                   test_fraction=0.2, n_eval_users=10_000, random_state=0):
    """Synthetic power-law data with planted taste, split like the ML-100K split.

    For every user a random ``floor(test_fraction * n_u)`` of its items is held out.
    Metrics are computed on a fixed random subset of ``n_eval_users`` test users (scoring
    all users of a large set after every few epochs would dominate the run time).
    """
    from warprec.datasets import make_interactions

    X = make_interactions(n_users, n_items, n_interactions, random_state=random_state)
    X = sp.csr_matrix(X, dtype=np.float32)
    rng = np.random.default_rng(random_state + 1)
    counts = np.diff(X.indptr)
    rows = np.repeat(np.arange(n_users), counts)
    # rank of each entry inside its row under a random key -> hold out the first floor(f*n)
    key = rng.random(X.nnz)
    order = np.lexsort((key, rows))
    rank = np.empty(X.nnz, np.int64)
    rank[order] = np.arange(X.nnz) - np.repeat(X.indptr[:-1], counts)
    held = rank < np.floor(test_fraction * counts[rows]).astype(np.int64)
    cols = X.indices
    train_m = _binary_csr(rows[~held], cols[~held], X.shape)
    test_m = _binary_csr(rows[held], cols[held], X.shape)
    n_relevant = np.diff(test_m.indptr).astype(np.int64)
    candidates = np.flatnonzero(n_relevant > 0)
    eval_users = None
    if n_eval_users and candidates.size > n_eval_users:
        eval_users = np.sort(rng.choice(candidates, n_eval_users, replace=False))
    info = dict(generator=f"warprec.datasets.make_interactions({n_users}, {n_items}, "
                          f"{n_interactions}, random_state={random_state})",
                test_fraction=test_fraction)
    return Dataset("synthetic", train_m, test_m, n_relevant, eval_users, info)
