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


# ---------------------------------------------------------------------- parameter checks
def test_interval_describes_and_checks_its_bounds():
    from numbers import Integral, Real

    from warprec._inputs import Interval

    positive = Interval(Integral, 1, None, closed="left")
    assert positive.describe() == "a positive integer"
    assert [positive.accepts(v) for v in (1, np.int8(3), 2**70, 0, 2.0, True, "1")] == \
        [True, True, True, False, False, False, False]
    assert Interval(Integral, 0, None, closed="left").describe() == "a non-negative integer"
    assert Interval(Integral, 2, 9).describe() == "an integer in [2, 9]"
    fraction = Interval(Real, 0, 1, closed="neither")
    assert fraction.describe() == "a number in (0, 1)"
    assert [fraction.accepts(v) for v in (0.5, np.float32(0.1), 0, 1, math.nan, True)] == \
        [True, True, False, False, False, False]
    rate = Interval(Real, 0, None, closed="neither")
    assert rate.describe() == "a number > 0"
    assert not rate.accepts(math.inf) and not rate.accepts(10**400) and rate.accepts(3)
    assert Interval(Real, None, 1, closed="right").describe() == "a number <= 1"
    assert Interval(Integral, 1, None, closed="left", text="an integer >= 1").describe() == \
        "an integer >= 1"


@pytest.mark.parametrize("value, constraints, message", [
    (0, ["POSITIVE_INT"], r"^n must be a positive integer \(got 0\)\.$"),
    (2.0, ["POSITIVE_INT"], r"^n must be a positive integer \(got 2\.0 of type float\)\.$"),
    ("x", [None, "POSITIVE_INT"], r"^n must be None or a positive integer \(got 'x' of type str\)"),
    (math.inf, ["RATE", "AUTO"], r"^n must be a number > 0 or 'auto' \(got inf, which is not "
                                 r"finite\)\.$"),
    ("fast", ["RATE", "AUTO"], r"^n must be a number > 0 or 'auto' \(got 'fast'\)\.$"),
    ("b", ["AB"], r"^n must be one of \['a', 'b '\] \(got 'b'\)\.$"),
    (1, ["boolean"], r"^n must be True or False \(got 1 of type int\)\.$"),
    (-1, "RANDOM_STATE", r"^n must be None, a non-negative integer or a "
                         r"numpy\.random\.Generator \(got -1\)\.$"),
])
def test_validate_param_names_the_parameter_the_value_and_what_is_allowed(
        value, constraints, message):
    from numbers import Real

    from warprec._inputs import POSITIVE_INT, RANDOM_STATE, Interval, Options, validate_param
    from warprec.exceptions import InvalidParameterError

    named = {"POSITIVE_INT": POSITIVE_INT, "RATE": Interval(Real, 0, None, closed="neither"),
             "AUTO": Options(["auto"]), "AB": Options(["a", "b "])}
    specs = RANDOM_STATE if constraints == "RANDOM_STATE" else \
        [named.get(c, c) if isinstance(c, str) else c for c in constraints]
    with pytest.raises(InvalidParameterError, match=message) as info:
        validate_param("n", value, specs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_validate_params_takes_a_dict_or_an_object_and_returns_the_values():
    from warprec import WARPFactorizer
    from warprec._inputs import POSITIVE_INT, Options, validate_params

    constraints = {"n_components": [POSITIVE_INT], "loss": [Options(["warp", "bpr"])]}
    assert validate_params({"n_components": 3, "loss": "bpr"}, constraints) == \
        {"n_components": 3, "loss": "bpr"}
    assert validate_params({"loss": "bpr"}, constraints) == {"loss": "bpr"}   # a group
    assert validate_params(WARPFactorizer(n_components=5), constraints) == \
        {"n_components": 5, "loss": "warp"}
    with pytest.raises(ValueError, match=r"loss must be one of \['bpr', 'warp'\] \(got 'x'\)"):
        validate_params({"n_components": 3, "loss": "x"}, constraints)


def test_the_estimator_declares_every_checked_parameter():
    """WARPFactorizer's constraints name only its parameters, and its defaults pass."""
    import inspect

    from warprec import WARPFactorizer
    from warprec._inputs import validate_params

    names = set(inspect.signature(WARPFactorizer).parameters)
    assert set(WARPFactorizer._parameter_constraints) <= names
    validate_params(WARPFactorizer(), WARPFactorizer._parameter_constraints)
