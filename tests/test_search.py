"""The kernels' written-out binary searches and sort against numpy's."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from warprec._kernels import search

FLOATS32 = st.floats(width=32, allow_nan=False, allow_infinity=True)


def test_count_at_most_is_searchsorted_right_on_cdfs():
    """The weighted negative draw's search: ``np.searchsorted(cdf, x, side="right")``, also
    on ties, below the first and above the last entry, and on an empty array."""
    gen = np.random.default_rng(12)
    for _ in range(200):
        n = int(gen.integers(0, 40))
        cdf = np.cumsum(gen.choice([0.0, 0.25, 0.5], n))   # zero steps make ties
        for x in np.concatenate([cdf, [-1.0, 0.0, 0.1, 0.3, 100.0], gen.uniform(0, 10, 5)]):
            assert search.count_at_most(cdf, x) == np.searchsorted(cdf, x, side="right")


@settings(max_examples=150, deadline=None)
@given(st.lists(FLOATS32, max_size=40), st.lists(FLOATS32, min_size=1, max_size=10))
def test_searches_match_searchsorted_on_float32(values, probes):
    """Both sides on sorted float32 arrays (the AUC pass's relevant scores): duplicates,
    infinities, signed zeros, probes equal to entries and outside the range."""
    values = np.sort(np.array(values, np.float32))
    for x in np.array(probes + values[:3].tolist(), np.float32):
        assert search.count_below(values, x) == np.searchsorted(values, x, side="left")
        assert search.count_at_most(values, x) == np.searchsorted(values, x, side="right")


@settings(max_examples=100, deadline=None)
@given(st.sets(st.integers(0, 60), max_size=30), st.integers(-5, 70))
def test_count_below_finds_items_in_sorted_ids(items, item):
    """The relevance lookup of the ranking metrics: sorted int32 item ids."""
    ids = np.array(sorted(items), np.int32)
    at = search.count_below(ids, np.int32(item))
    assert at == np.searchsorted(ids, item)
    assert (at < len(ids) and ids[at] == item) == (item in items)


@settings(max_examples=200, deadline=None)
@given(st.lists(FLOATS32, max_size=300))
def test_sort_in_place_matches_np_sort(values):
    """Heapsort gives numpy's order (up to -0.0 and 0.0, which compare equal) for any
    input: empty, one value, duplicates, infinities, already sorted or reversed."""
    for start in (np.array(values, np.float32), np.sort(np.array(values, np.float32)),
                  np.sort(np.array(values, np.float32))[::-1].copy()):
        got = start.copy()
        search.sort_in_place(got)
        expected = np.sort(start)
        assert np.array_equal(got, expected)   # == on values: -0.0 equals 0.0
        assert np.array_equal(np.sort(got.view(np.int32)), np.sort(start.view(np.int32)))
