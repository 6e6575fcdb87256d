"""The shared input pieces of warprec._inputs: the raw-id map."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warprec._inputs import IdMap

_QUERIES = st.one_of(
    st.integers(-3, 12), st.sampled_from([1.0, 2.5, math.nan, None, "", "3", "a", "b", b"a",
                                          np.int64(4), np.float32(2.0), np.str_("a"),
                                          2**70, (1,), True, False]))


def _dict_lookup(ids, values):
    mapping = {v: i for i, v in enumerate(ids.tolist())}
    out = []
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        out.append(mapping.get(v, -1) if not (isinstance(v, float) and v != v) else -1)
    return out


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["int", "str", "empty"]), st.lists(_QUERIES, max_size=6),
       st.booleans())
def test_id_map_finds_what_a_dict_finds(kind, queries, bools_as_ints):
    """Python equality: integral floats and numpy scalars find integer ids, numbers never
    find string ids, unknown ids give -1; booleans find 0/1 as in a dict when asked to
    (without, only the all-boolean case differs: see the next test)."""
    if not bools_as_ints and queries and all(isinstance(v, bool) for v in queries):
        return
    ids = {"int": np.array([3, 0, 1, 4, 2**40], np.int64),
           "str": np.array(["b", "a", "3", ""], object),
           "empty": np.array([], np.int64)}[kind]
    values = np.empty(len(queries), object)
    values[:] = queries
    got = IdMap(ids).indexer(values, bools_as_ints=bools_as_ints)
    assert got.dtype == np.int64
    assert got.tolist() == _dict_lookup(ids, queries)


def test_id_map_takes_typed_arrays_and_series():
    id_map = IdMap(np.array([10, 20, 30], np.int64))
    assert len(id_map) == 3
    assert id_map.indexer(np.array([30, 10, 11])).tolist() == [2, 0, -1]
    assert id_map.indexer(np.array([20.0, 20.5])).tolist() == [1, -1]
    assert id_map.indexer(np.array([2**63 + 5], np.uint64)).tolist() == [-1]
    assert id_map.indexer(pd.Series([30, 20], dtype="category")).tolist() == [2, 1]
    assert id_map.indexer(np.array([], np.int64)).tolist() == []
    bools = IdMap(np.array([1, 0], np.int64))
    assert bools.indexer(np.array([True, False])).tolist() == [-1, -1]
    assert bools.indexer(np.array([True, False]), bools_as_ints=True).tolist() == [0, 1]


@pytest.mark.parametrize("query", [[5], np.array([5]), 5])
def test_callers_keep_their_messages(query):
    from warprec.data import Interactions
    from warprec._inputs import lookup_ids

    inter = Interactions.from_frame(pd.DataFrame({"user_id": [1, 2], "item_id": [1, 1]}))
    with pytest.raises(KeyError, match="1 unknown user id"):
        inter.user_index(query)
    with pytest.raises(KeyError, match=r"not seen at fit time: 5\."):
        lookup_ids(query, IdMap(inter.user_ids), "user", 2)
