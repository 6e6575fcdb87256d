"""Validation and conversion of user input into canonical arrays (no kernels here)."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any, Literal, SupportsFloat

    from numpy.typing import NDArray

    from ._typing import Constraint, ConstraintSpec, Int64Array, SparseMatrix

__all__ = ["ON_UNKNOWN", "POSITIVE_INT", "RANDOM_STATE", "IdMap", "InstanceOf", "Interval",
           "Options", "as_interaction_matrix", "check_k", "check_positive_int", "lookup_ids",
           "validate_param", "validate_params"]


class IdMap:
    """The raw id -> index map of one id array, looked up in bulk (a :class:`pandas.Index`).

    The one raw-id map of warprec: :class:`warprec.data.Interactions`, the fitted models
    (:func:`lookup_ids`) and the evaluation glue all look ids up through it. Each caller
    raises its own error for unknown ids.

    Parameters
    ----------
    ids : ndarray
        Unique raw ids, ``int64`` or ``object`` (Python strings), as
        :class:`warprec.data.Interactions` and the models store them; ``ids[i]`` is the
        raw id of index ``i``.

    Notes
    -----
    Lookups follow Python equality, as a ``dict`` would: ``3``, ``np.int64(3)``,
    ``3.0`` and ``np.float32(3.0)`` find the integer id 3, and no number finds the
    string id ``"3"``. Booleans find the ids 0 and 1 as in a ``dict`` with
    ``bools_as_ints=True``; without it pandas' rule applies (an all-boolean array
    finds nothing, booleans among other values find 0 and 1), which is what
    :meth:`warprec.data.Interactions.user_index` has always done.
    """

    def __init__(self, ids: NDArray[Any]) -> None:
        self.ids = ids
        self._index = pd.Index(ids)

    def __len__(self) -> int:
        return len(self.ids)

    def indexer(self, values: NDArray[Any] | pd.Series | pd.Index,
                bools_as_ints: bool = False) -> Int64Array:
        """Indices of ``values`` (1-D array or Series), -1 for ids not in the map.

        Parameters
        ----------
        values : ndarray or pandas.Series
            Raw ids, one dimension; any dtype.
        bools_as_ints : bool, default False
            Let ``True`` and ``False`` always find the integer ids 1 and 0 (Python's
            ``dict`` rule); otherwise an all-boolean ``values`` finds nothing.

        Returns
        -------
        ndarray of int64
        """
        if bools_as_ints:
            arr = np.asarray(values)
            if arr.dtype == bool or (arr.dtype == object and arr.size and
                                     pd.api.types.infer_dtype(arr, skipna=False) == "boolean"):
                values = arr.astype(np.int64)
        if len(values) == 0 or self._index.size == 0:
            return np.full(len(values), -1, dtype=np.int64)
        return np.asarray(self._index.get_indexer(values), dtype=np.int64)


# ---------------------------------------------------------------------- parameters
#: The types a real-number parameter may have (booleans excluded).
_REAL_TYPES = (int, float, np.integer, np.floating)


def _is_finite(value: SupportsFloat) -> bool:
    """Finite as a float (an int too large for a float is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


class Interval:
    """Constraint: an integer or a finite real number within bounds.

    Parameters
    ----------
    kind : {numbers.Integral, numbers.Real}
        Integers only (never booleans), or any real number (int, float, numpy
        numbers; never booleans, never NaN or infinite).
    left, right : number or None
        Bounds; None means unbounded on that side.
    closed : {"both", "left", "right", "neither"}, default "both"
        Which bounds belong to the interval.
    text : str, optional
        How error messages name the constraint (default: built from the bounds, e.g.
        "a positive integer", "a number > 0", "a number in (0, 1)").
    """

    def __init__(self, kind: type[numbers.Integral] | type[numbers.Real], left: float | None,
                 right: float | None, *,
                 closed: Literal["both", "left", "right", "neither"] = "both",
                 text: str | None = None) -> None:
        if kind not in (numbers.Integral, numbers.Real):
            raise ValueError("kind must be numbers.Integral or numbers.Real.")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError("closed must be 'both', 'left', 'right' or 'neither'.")
        self.kind, self.left, self.right, self.closed, self.text = kind, left, right, closed, text

    def accepts_type(self, value: object) -> bool:
        """Whether ``value`` has a type this interval is about."""
        if isinstance(value, (bool, np.bool_)):
            return False
        if self.kind is numbers.Integral:
            return isinstance(value, numbers.Integral)
        return isinstance(value, _REAL_TYPES)

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` lies in the interval (finite, of the right type)."""
        if not self.accepts_type(value):
            return False
        if self.kind is numbers.Real and not _is_finite(value):
            return False
        if self.left is not None and (value < self.left or (
                value == self.left and self.closed not in ("both", "left"))):
            return False
        return self.right is None or not (value > self.right or (
            value == self.right and self.closed not in ("both", "right")))

    def describe(self) -> str:
        """The constraint in words, as error messages give it."""
        if self.text is not None:
            return self.text
        left_in = self.closed in ("both", "left")
        if self.kind is numbers.Integral:
            if self.right is None and self.left is not None and left_in:
                if self.left == 1:
                    return "a positive integer"
                if self.left == 0:
                    return "a non-negative integer"
            noun = "an integer"
        else:
            noun = "a number"
        if self.left is not None and self.right is not None:
            right_in = self.closed in ("both", "right")
            return (f"{noun} in {'[' if left_in else '('}{self.left}, "
                    f"{self.right}{']' if right_in else ')'}")
        if self.left is not None:
            return f"{noun} {'>=' if left_in else '>'} {self.left}"
        if self.right is not None:
            return f"{noun} {'<=' if self.closed in ('both', 'right') else '<'} {self.right}"
        return noun


class Options:
    """Constraint: one of a fixed set of strings.

    Parameters
    ----------
    options : iterable of str
        The allowed values.
    """

    def __init__(self, options: Iterable[str]) -> None:
        self.options = tuple(options)

    def accepts_type(self, value: object) -> bool:
        return isinstance(value, str)

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in self.options

    def describe(self) -> str:
        if len(self.options) == 1:
            return repr(self.options[0])
        return f"one of {sorted(self.options)}"


class InstanceOf:
    """Constraint: an instance of a class.

    Parameters
    ----------
    cls : type
    text : str
        How error messages name it, e.g. "a numpy.random.Generator".
    """

    def __init__(self, cls: type, text: str) -> None:
        self.cls, self.text = cls, text

    def accepts_type(self, value: object) -> bool:
        return isinstance(value, self.cls)

    accepts = accepts_type

    def describe(self) -> str:
        return self.text


class _NoneConstraint:
    def accepts_type(self, value: object) -> bool:
        return value is None

    accepts = accepts_type

    def describe(self) -> str:
        return "None"


class _Boolean:
    def accepts_type(self, value: object) -> bool:
        return isinstance(value, (bool, np.bool_))

    accepts = accepts_type

    def describe(self) -> str:
        return "True or False"


def _constraint(spec: ConstraintSpec) -> Constraint:
    """A constraint object from its declaration (None, "boolean" or an object)."""
    if spec is None:
        return _NoneConstraint()
    if isinstance(spec, str) and spec == "boolean":
        return _Boolean()
    if all(hasattr(spec, m) for m in ("accepts", "accepts_type", "describe")):
        return spec
    raise ValueError(f"Unknown parameter constraint {spec!r}.")


#: A positive integer (1, 2, ...): the most common constraint.
POSITIVE_INT = Interval(numbers.Integral, 1, None, closed="left")

#: ``random_state`` of the estimators and searches: None, a seed or a Generator.
RANDOM_STATE = [None, Interval(numbers.Integral, 0, None, closed="left"),
                InstanceOf(np.random.Generator, "a numpy.random.Generator")]

#: ``on_unknown`` of ``recommend``, the evaluation functions and :mod:`warprec.dask`:
#: what to do with users the model was not fit on.
ON_UNKNOWN = Options(("error", "skip", "popular"))


def validate_param(name: str, value: Any, constraints: Sequence[ConstraintSpec]) -> Any:
    """Check one value against a list of constraints (any one may accept it).

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : object
    constraints : list
        :class:`Interval`, :class:`Options`, :class:`InstanceOf` objects, ``None``
        (the value None is allowed) or ``"boolean"`` (True or False).

    Returns
    -------
    object
        ``value``, unchanged.

    Raises
    ------
    warprec.exceptions.InvalidParameterError
        No constraint accepts ``value`` (a ValueError and a TypeError). The message
        names the parameter, the value (and its type when no constraint is about that
        type) and what is allowed.
    """
    from .exceptions import InvalidParameterError

    checks = [_constraint(c) for c in constraints]
    if any(c.accepts(value) for c in checks):
        return value
    descriptions = [c.describe() for c in checks]
    allowed = descriptions[0] if len(descriptions) == 1 else \
        f"{', '.join(descriptions[:-1])} or {descriptions[-1]}"
    if not any(c.accepts_type(value) for c in checks):
        detail = f"{value!r} of type {type(value).__name__}"
    elif isinstance(value, _REAL_TYPES) and not isinstance(value, (bool, np.bool_)) and \
            not _is_finite(value):
        detail = f"{value!r}, which is not finite"
    else:
        detail = repr(value)
    raise InvalidParameterError(f"{name} must be {allowed} (got {detail}).")


def validate_params(params: Mapping[str, Any] | object,
                    constraints: Mapping[str, Sequence[ConstraintSpec]]) -> dict[str, Any]:
    """Check parameters against declared constraints (scikit-learn's
    ``_parameter_constraints`` idea).

    Parameters
    ----------
    params : dict or object
        Parameter values by name, or an object whose attributes hold them (an
        estimator).
    constraints : dict
        Name -> list of constraints (see :func:`validate_param`), checked in this
        dict's order: every name for an object; for a dict, the names it holds (a
        function can check its arguments in groups).

    Returns
    -------
    dict
        Name -> value of the checked parameters.

    Raises
    ------
    warprec.exceptions.InvalidParameterError
        The first parameter no constraint accepts.
    """
    if isinstance(params, dict):
        return {name: validate_param(name, params[name], specs)
                for name, specs in constraints.items() if name in params}
    return {name: validate_param(name, getattr(params, name), specs)
            for name, specs in constraints.items()}


def check_positive_int(value: object, name: str) -> int:
    """Return ``value`` as int if it is an integer >= 1, else raise
    :class:`~warprec.exceptions.InvalidParameterError`."""
    return int(validate_param(name, value, [POSITIVE_INT]))


def check_k(k: object) -> int:
    """Return a cut-off ``k`` as int; any value that is not an integer >= 1 (including
    booleans and floats such as 2.5) raises
    :class:`~warprec.exceptions.InvalidParameterError` (a ValueError)."""
    return check_positive_int(k, "k")


def as_interaction_matrix(X: SparseMatrix | NDArray[Any], name: str = "X",
                          frames: bool = False) -> sp.csr_matrix:
    """Canonical CSR (float32 values, sorted unique indices, no stored zeros).

    Accepts any scipy sparse matrix/array or a dense 2-D array of numbers or booleans.
    Duplicate ``(row, column)`` entries of COO input are summed (scipy's rule), stored
    zeros are removed (they mean "no interaction"). NaN, infinite or negative values raise
    ``ValueError``: negative feedback is not a positive, threshold it first
    (``warprec.data.positives(df, min_rating=...)``). ``frames`` says the caller also
    takes DataFrames and Interactions (which it converts before), for the message about
    any other type.
    """
    if isinstance(X, np.matrix):
        X = np.asarray(X)
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (users x items); got {X.ndim}-D.")
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise TypeError(f"{name} must hold numbers or booleans, not {X.dtype}.")
        if np.issubdtype(X.dtype, np.complexfloating):
            raise TypeError(f"{name} must hold real numbers, not {X.dtype}.")
        # convert the values before any format change: scipy sums duplicate entries in
        # the input dtype, which wraps around for small integer types (int8 100 + 100)
        coo = sp.coo_matrix(X)
        csr = sp.csr_matrix((coo.data.astype(np.float64), (coo.row, coo.col)), shape=coo.shape)
    elif isinstance(X, np.ndarray):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (users x items); got shape {X.shape}.")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or \
                np.issubdtype(X.dtype, np.complexfloating):
            raise TypeError(f"{name} must hold real numbers or booleans, not {X.dtype}.")
        csr = sp.csr_matrix(X.astype(np.float64))
    else:
        others = (", a warprec.data.Interactions or a pandas DataFrame of user and item ids"
                  if frames else "")
        raise TypeError(f"{name} must be a scipy.sparse matrix or a dense 2-D numpy array"
                        f"{others}; got {type(X).__name__}.")
    csr.sum_duplicates()
    bad = ~np.isfinite(csr.data)
    if bad.any():
        raise ValueError(f"{name} holds {int(bad.sum())} NaN or infinite value(s); drop or "
                         "fill them first (e.g. X.data = np.nan_to_num(X.data)).")
    neg = csr.data < 0
    if neg.any():
        raise ValueError(f"{name} holds {int(neg.sum())} negative value(s); warprec learns from "
                         "positive interactions only. Keep the positives (e.g. "
                         "warprec.data.positives(df, min_rating=4)) or take abs/clip them.")
    huge = csr.data > np.finfo(np.float32).max
    if huge.any():
        raise ValueError(f"{name} holds {int(huge.sum())} value(s) above "
                         f"{np.finfo(np.float32).max:.3g}, which overflow warprec's float32 "
                         "storage to infinity; rescale them (e.g. X.data = np.log1p(X.data)).")
    csr.eliminate_zeros()
    csr.sort_indices()
    # a positive below float32's range stays a positive (it would round to a stored 0)
    data = np.maximum(csr.data, np.finfo(np.float32).smallest_subnormal).astype(np.float32)
    return sp.csr_matrix((data, csr.indices.astype(np.int32), csr.indptr.astype(np.int64)),
                         shape=csr.shape)


def lookup_ids(raw: object, index_of: IdMap | None, kind: str, n: int) -> Int64Array:
    """Map raw ids (or indices when ``index_of`` is None) to int64 indices.

    Parameters
    ----------
    raw : scalar or array_like
        Raw ids, or integer indices when the model was fit on a matrix.
    index_of : IdMap or None
        Raw id -> index map; None means ``raw`` already holds indices.
    kind : str
        "user" or "item", for messages.
    n : int
        Number of known users/items.

    Returns
    -------
    ndarray of int64

    Raises
    ------
    KeyError
        Some ids were not seen at fit time (the message lists up to five).
    """
    if isinstance(raw, (set, frozenset, dict)) or (
            hasattr(raw, "keys") and not hasattr(raw, "__array__")):
        raise TypeError(f"{kind} ids must be a scalar or a 1-D sequence (list, array), not a "
                        f"{type(raw).__name__}; pass e.g. list(...) of the ids.")
    try:
        if index_of is not None and isinstance(raw, np.ndarray) and raw.dtype.kind in "biuf":
            values = np.atleast_1d(raw)   # numbers: looked up without Python objects
        else:
            values = np.atleast_1d(np.asarray(raw, dtype=object if index_of is not None
                                              else None))
    except (ValueError, TypeError):
        raise ValueError(f"{kind} ids must be a scalar or a flat 1-D sequence of ids; got a "
                         f"ragged or nested {type(raw).__name__}.") from None
    if values.ndim != 1:
        raise ValueError(f"{kind} ids must be a scalar or a 1-D sequence; got shape "
                         f"{values.shape}.")
    if index_of is None:
        if values.size and not np.issubdtype(values.dtype, np.integer):
            if values.dtype == bool or not all(
                    isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                    for v in values):
                raise TypeError(f"This model was fit on a matrix, so {kind}s are row/column "
                                f"indices: pass integers (got dtype {values.dtype}).")
        # indices beyond int64 (e.g. 2**70 or large uint64) are out of range, never
        # wrapped around: compare before converting
        if values.dtype == object:
            bad = np.fromiter((not 0 <= v < n for v in values.tolist()), dtype=bool,
                              count=values.size)
        else:
            bad = (values < 0) | (values >= n)
        idx = np.where(bad, 0, values).astype(np.int64)
        if bad.any():
            shown = ", ".join(str(v) for v in np.asarray(values)[bad][:5])
            raise KeyError(f"{int(bad.sum())} {kind} index(es) out of range [0, {n}): {shown}. "
                           f"The model was fit on a matrix with {n} {kind}s.")
        return idx
    if values.dtype == object:
        unhashable = [v for v in values if not _is_hashable(v)]
        if unhashable:
            raise TypeError(f"{kind} ids must be scalars (numbers or strings); got "
                            f"{type(unhashable[0]).__name__} {unhashable[0]!r}.")
    idx = index_of.indexer(values, bools_as_ints=True)
    bad = idx < 0
    if bad.any():
        shown = ", ".join(repr(v) for v in values[bad][:5].astype(object))
        raise KeyError(f"{int(bad.sum())} {kind} id(s) were not seen at fit time: {shown}. "
                       f"warprec has no embedding for unseen {kind}s; refit with data that "
                       f"includes them, or leave them out.")
    return idx


def _is_hashable(v: object) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True
