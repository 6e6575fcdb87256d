"""The data family on which warprec's defaults are judged (issue: defaults that carry over).

Every set comes as a :class:`_data.Dataset` (train / test CSR in one index space, train
items first, test positives on items without a training positive counted as misses):

* ``ml100k``: the fixed ML-100K split (ratings >= 4, 20% of each user held out);
* ``ml-latest-small``: MovieLens latest-small, ratings >= 4 as positives, 20% of each
  user's positives held out with ``warprec.data.split_random(..., random_state=42)``;
* ``amazon-book``: amazon-book as split by the KGAT authors (its own train / test files),
  scored on a fixed random sample of ``n_eval_users`` test users;
* ``synthetic-longtail``: ``make_interactions(8_000, 25_000, 100_000)``, about 4
  positives per item, power-law popularity;
* ``synthetic-dense``: ``make_interactions(20_000, 2_000, 500_000)``, 250 per item;
* ``synthetic-5m``: ``make_interactions(100_000, 40_000, 5_000_000)``, 125 per item
  (the speed benchmark's set; scored on 10,000 sampled test users);
* ``synthetic-short``: ``make_interactions(60_000, 10_000, 600_000)``, short user
  histories (10 positives per user, 8 after the split) with 60 per item: the shape of
  amazon-book, where the automatic learning rate is well above its floor.

The synthetic sets are split like ML-100K (a random 20% of each user's items, floor).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from _data import ML100K_SPLIT, from_frames, load_ml100k, make_synthetic

SHARED = Path(os.environ.get("WARPREC_SHARED_DATA", ML100K_SPLIT.parent))
SYNTHETIC = {
    "synthetic-longtail": dict(n_users=8_000, n_items=25_000, n_interactions=100_000),
    "synthetic-dense": dict(n_users=20_000, n_items=2_000, n_interactions=500_000),
    "synthetic-5m": dict(n_users=100_000, n_items=40_000, n_interactions=5_000_000),
    "synthetic-short": dict(n_users=60_000, n_items=10_000, n_interactions=600_000),
}
NAMES = ("ml100k", "ml-latest-small", "amazon-book", "synthetic-longtail", "synthetic-dense",
         "synthetic-5m", "synthetic-short")


def load(name, *, n_eval_users=10_000):
    """The data set ``name`` of :data:`NAMES`, or None when its files are missing."""
    from warprec import data

    if name == "ml100k":
        return load_ml100k()
    if name == "ml-latest-small":
        path = SHARED / "ml-latest-small" / "ratings.csv"
        if not path.exists():
            return None
        df = data.positives(data.read_ratings(path), min_rating=4.0)
        train, test = data.split_random(df, 0.2, random_state=42)
        return from_frames(name, train, test, dict(source=str(path), positives=">= 4.0"))
    if name == "amazon-book":
        folder = SHARED / "amazon-book-kgat"
        if not (folder / "train.txt").exists():
            return None
        train = data.read_interaction_lists(folder / "train.txt")
        test = data.read_interaction_lists(folder / "test.txt")
        ds = from_frames(name, train, test, dict(source=str(folder)))
        if n_eval_users:
            users = np.flatnonzero(ds.n_relevant > 0)
            ds.eval_users = np.sort(np.random.default_rng(0).choice(users, n_eval_users,
                                                                    replace=False))
        return ds
    if name in SYNTHETIC:
        ds = make_synthetic(**SYNTHETIC[name], n_eval_users=n_eval_users)
        ds.name = name
        return ds
    raise ValueError(f"unknown data set {name!r}; choose from {NAMES}")


def shape(ds):
    """The shape statistics that a data-driven default may depend on."""
    n_users, n_items = ds.train.shape
    nnz = ds.train.nnz
    return dict(n_users=n_users, n_items=n_items, positives=nnz,
                per_item=nnz / n_items, per_user=nnz / n_users,
                density=nnz / (n_users * n_items))
