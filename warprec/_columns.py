"""The canonical long format's columns: recognising them, and validating ids and ratings.

A canonical frame has the columns of :data:`CANONICAL_COLUMNS` (``user_id``,
``item_id`` and optionally ``rating`` and ``timestamp``); the id rules (integer ids
become int64, string ids stay strings, mixed or missing ids are rejected) are stated in
:mod:`warprec.data`'s docstring and enforced by :func:`normalize_ids`.

Internal API (used by :mod:`warprec.frames`, :mod:`warprec.readers`,
:mod:`warprec.splitting`, :mod:`warprec.interactions`, the models' ``fit`` and the
command line): :data:`CANONICAL_COLUMNS` (public as ``warprec.data.CANONICAL_COLUMNS``),
:data:`ALIASES`, :data:`MIN_RATING_ATTR`, :func:`norm_name`, :func:`require_columns`,
:func:`find_column`, :func:`id_columns`, :func:`standardize`, :func:`ids_kind` and
:func:`normalize_ids`. Not part of warprec's public API; may change without notice.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._messages import describe_rows, show

__all__ = ["ALIASES", "CANONICAL_COLUMNS", "MIN_RATING_ATTR", "find_column", "id_columns",
           "ids_kind", "norm_name", "normalize_ids", "require_columns", "standardize"]

#: Canonical column names, in output order.
CANONICAL_COLUMNS = ("user_id", "item_id", "rating", "timestamp")


#: Column names recognised (case-insensitively, ignoring "_", "-" and spaces) for each
#: canonical column, in priority order (compared after :func:`norm_name`).
ALIASES = {
    "user_id": ("userid", "user", "uid", "users"),
    "item_id": ("itemid", "movieid", "item", "iid", "movie", "items"),
    "rating": ("rating", "ratings", "score", "weight", "value"),
    "timestamp": ("timestamp", "time", "ts", "datetime", "date"),
}
_ARG_OF = {"user_id": "user_col", "item_id": "item_col", "rating": "rating_col",
           "timestamp": "timestamp_col"}

#: The key of ``DataFrame.attrs`` where :func:`warprec.data.positives` records the
#: ``min_rating`` it kept (so that ``fit`` knows the ratings were thresholded).
MIN_RATING_ATTR = "warprec.min_rating"


def norm_name(name: Any) -> str:
    """A column name as :data:`ALIASES` spells it: lower case, without quotes, ``_``,
    ``-`` and spaces."""
    return str(name).strip().strip("\"'").lower().replace("_", "").replace("-", "").replace(" ", "")


def require_columns(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise TypeError unless ``df`` is a DataFrame and KeyError unless it has every
    one of ``columns`` (``what`` names the caller in the message)."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} expects a pandas DataFrame, got {type(df).__name__}.")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(
            f"{what} needs the column(s) {missing}, but the frame has "
            f"{show(list(df.columns), 20)}. Convert it first with "
            f"standardize_frame(df, user_col=..., item_col=..., rating_col=..., "
            f"timestamp_col=...).")


def find_column(df: pd.DataFrame, role: str, spec: str | int | bool | None,
                positional: bool, source: str) -> Hashable | None:
    """Return the column label of ``role`` (or None for an absent optional column).

    ``spec`` is the user's ``*_col`` argument (a name, a 0-based position, False to
    ignore an optional column, None to detect it); ``positional`` says the columns are
    the positions of a headerless read; ``source`` names the data in messages.
    """
    optional = role in ("rating", "timestamp")
    arg = _ARG_OF[role]
    columns: list[Hashable] = list(df.columns)
    if spec is False:
        if not optional:
            raise ValueError(f"{arg}=False is only allowed for rating_col/timestamp_col.")
        return None
    if spec is not None and spec is not True:
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            if positional:
                if spec in columns:
                    return spec
            elif 0 <= spec < len(columns):
                return columns[spec]
            raise KeyError(f"{arg}={spec} is out of range: {source} has "
                           f"{len(columns)} columns ({show(columns, 20)}).")
        if spec in columns:
            return spec
        matches = [c for c in columns if str(c).lower() == str(spec).lower()]
        if len(matches) == 1:
            return matches[0]
        raise KeyError(f"{arg}={spec!r} is not a column of {source}; columns found: "
                       f"{show(columns, 20)}.")
    if positional:
        position = CANONICAL_COLUMNS.index(role)
        if len(columns) > 4:
            if optional:
                return None
            raise KeyError(
                f"{source} has no header and {len(columns)} columns, so which column is "
                f"which cannot be guessed. Give the 0-based positions, e.g. user_col=0, "
                f"item_col=1, rating_col=2, timestamp_col=3.")
        if position < len(columns):
            return columns[position]
        if optional:
            return None
        raise KeyError(
            f"{source} has no header and only {len(columns)} column(s), so it has no "
            f"{role} column. If the fields are separated by something else, pass sep= "
            f"(e.g. sep=','); otherwise name the columns with user_col=, item_col=.")
    wanted = ALIASES[role]
    found = [c for c in columns if norm_name(c) in wanted]
    if len(found) > 1:
        found.sort(key=lambda c: wanted.index(norm_name(c)))
        if wanted.index(norm_name(found[0])) == wanted.index(norm_name(found[1])):
            raise KeyError(f"Several columns of {source} could be the {role} column: "
                           f"{show(found)}. Choose one with {arg}=.")
    if found:
        return found[0]
    if optional:
        return None
    names = {"user_id": "user_id, userId, user, uid",
             "item_id": "item_id, movieId, movie_id, item, iid"}[role]
    raise KeyError(
        f"No {role} column in {source}. Columns found: {show(columns, 20)}; expected "
        f"one named like {names} (any case). Name it explicitly with {arg}='...' "
        f"(read_ratings/standardize_frame: user_col=, item_col=, rating_col=, "
        f"timestamp_col=).")


def id_columns(df: pd.DataFrame, user_col: str | int | None, item_col: str | int | None,
               source: str) -> tuple[Hashable, Hashable]:
    """The labels of the user and item id columns of ``df``: ``user_col`` and ``item_col``
    if given (names, or 0-based positions), else detected as :func:`standardize` detects
    them (the names of :data:`ALIASES`, any case; the first two columns of a frame whose
    labels are 0, 1, ...). KeyError when one is missing or both are the same column."""
    labels: list[Hashable] = list(df.columns)
    positional = labels == list(range(df.shape[1]))
    user = find_column(df, "user_id", user_col, positional, source)
    item = find_column(df, "item_id", item_col, positional, source)
    if user == item:
        raise KeyError(f"Column {user!r} of {source} was chosen as both the user and the "
                       f"item column; pass user_col= and item_col= explicitly.")
    return user, item


def standardize(df: pd.DataFrame, cols: Mapping[str, str | int | bool | None], source: str,
                header: bool | None) -> pd.DataFrame:
    """The canonical frame of ``df``.

    ``cols`` maps ``user_col``, ``item_col``, ``rating_col`` and ``timestamp_col`` to the
    user's choices (see :func:`find_column`); ``source`` names the data in messages;
    ``header`` is None for a DataFrame given by the user, else whether the file it was
    read from had a header line (a headerless read is taken positionally).
    """
    labels: list[Hashable] = list(df.columns)
    positional = (header is False) or (
        header is None and labels == list(range(df.shape[1])))
    chosen: dict[str, Hashable] = {}
    # explicitly named columns first, then the detected / positional defaults
    roles = sorted(CANONICAL_COLUMNS, key=lambda r: cols[_ARG_OF[r]] is None)
    for role in roles:
        spec = cols[_ARG_OF[role]]
        label = find_column(df, role, spec, positional, source)
        if label is None:
            continue
        if label in chosen.values():
            if spec is None and role in ("rating", "timestamp"):
                continue  # the default column is already used for another role
            raise KeyError(f"Column {label!r} of {source} was chosen for two roles; "
                           f"pass user_col=, item_col=, rating_col=, timestamp_col= "
                           f"explicitly.")
        chosen[role] = label
    out: dict[str, pd.Series | NDArray[Any]] = {}
    for role in ("user_id", "item_id"):
        out[role] = normalize_ids(df[chosen[role]], role, source, header)
    if "rating" in chosen:
        out["rating"] = _numeric_ratings(df[chosen["rating"]], source, header)
    if "timestamp" in chosen:
        ts = df[chosen["timestamp"]]
        missing = np.flatnonzero(ts.isna().to_numpy())
        if missing.size:
            where = describe_rows(missing, header)
            raise ValueError(
                f"{source}: {missing.size} rows have no timestamp ({where}),"
                f" e.g. truncated lines. Fix or drop them, or ignore the column with "
                f"timestamp_col=False.")
        out["timestamp"] = ts.reset_index(drop=True).copy()
    result = pd.DataFrame(out)
    result.index = pd.RangeIndex(len(result))
    return result


def _numeric_ratings(col: pd.Series, source: str, header: bool | None) -> NDArray[Any]:
    if pd.api.types.is_bool_dtype(col.dtype):
        col = col.astype(np.int64)
    if not pd.api.types.is_numeric_dtype(col.dtype):
        conv = pd.to_numeric(col, errors="coerce")
        bad = np.flatnonzero(conv.isna().to_numpy() & col.notna().to_numpy())
        if bad.size:
            raise ValueError(
                f"{source}: the rating column holds {bad.size} non-numeric values "
                f"({show(col.to_numpy()[bad])} at {describe_rows(bad, header)}). Fix them, choose "
                f"another column with rating_col=, or ignore ratings with rating_col=False.")
        col = conv
    missing = np.flatnonzero(col.isna().to_numpy())
    if missing.size:
        where = describe_rows(missing, header)
        raise ValueError(
            f"{source}: {missing.size} rows have no rating ({where}), e.g. "
            f"truncated lines. Fix or drop them (df.dropna(subset=['rating'])), or ignore "
            f"ratings with rating_col=False.")
    values = col.to_numpy(copy=True)
    infinite = np.flatnonzero(np.isinf(values.astype(np.float64)))
    if infinite.size:
        where = describe_rows(infinite, header)
        raise ValueError(
            f"{source}: {infinite.size} rows have an infinite rating ({where})."
            f" Fix or drop them, or ignore ratings with rating_col=False.")
    return values


def ids_kind(values: NDArray[Any]) -> str:
    """``'int'``, ``'str'`` or ``'float'``: the kind of an id array as
    :func:`pandas.api.types.infer_dtype` sees it (object arrays inspected); TypeError
    for mixed integers and strings or any other kind."""
    kind = pd.api.types.infer_dtype(values, skipna=False)
    if kind in ("integer",):
        return "int"
    if kind in ("string", "empty"):
        return "str"
    if kind in ("floating", "mixed-integer-float", "decimal"):
        return "float"
    if kind == "mixed-integer":
        raise TypeError("mixes integers and strings")
    raise TypeError(f"holds values of type {kind!r}")


def normalize_ids(col: pd.Series, role: str, source: str,
                  header: bool | None) -> pd.Series:
    """Validate an id column and return it as int64 (numeric ids) or strings."""
    missing = np.flatnonzero(col.isna().to_numpy())
    if missing.size:
        raise ValueError(
            f"{source}: {missing.size} rows have no {role.replace('_', ' ')} "
            f"({describe_rows(missing, header)}), e.g. truncated lines or empty fields. Fix the "
            f"data or drop those rows first, e.g. df.dropna(subset=[...]).")
    name = col.name
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        col = col.astype(dtype.categories.dtype if dtype.categories.dtype != object
                         else object)
        dtype = col.dtype
    col = col.reset_index(drop=True)
    if isinstance(dtype, pd.StringDtype):
        return col.copy()
    if pd.api.types.is_bool_dtype(dtype):
        raise TypeError(f"{source}: the {role} column is boolean; ids must be integers "
                        f"or strings.")
    if pd.api.types.is_integer_dtype(dtype):
        if pd.api.types.is_unsigned_integer_dtype(dtype):
            if len(col) and col.max() > np.iinfo(np.int64).max:
                raise _huge_ids_error(source, role, name)
            return col.astype(np.int64)
        return col.copy()
    values = col.to_numpy()
    try:
        kind = "float" if pd.api.types.is_float_dtype(dtype) else ids_kind(values)
    except TypeError as exc:
        example = ""
        if values.dtype == object:
            first_int = next((v for v in values if isinstance(v, (int, np.integer))), None)
            first_str = next((v for v in values if isinstance(v, str)), None)
            if first_int is not None and first_str is not None:
                example = f" (e.g. {first_int!r} and {first_str!r})"
        raise TypeError(
            f"{source}: the {role} column {exc}{example}. Ids must be all integers or all "
            f"strings; to treat every id as a string, convert first with "
            f"df[{name!r}] = df[{name!r}].astype(str).") from None
    if kind == "int":
        try:
            return pd.Series(values.astype(np.int64), name=col.name)
        except OverflowError:
            raise _huge_ids_error(source, role, name) from None
    if kind == "str":
        return col.astype(object)
    fvalues = values.astype(np.float64)
    if not np.all(np.isfinite(fvalues)) or not np.all(fvalues == np.round(fvalues)):
        bad = np.flatnonzero(~np.isfinite(fvalues) | (fvalues != np.round(fvalues)))
        raise TypeError(
            f"{source}: the {role} column holds non-integer numbers "
            f"({show(fvalues[bad])} at {describe_rows(bad, header)}); ids must be integers or "
            f"strings.")
    if len(fvalues) and np.abs(fvalues).max() > 2.0**53:
        # beyond 2**53 a float no longer holds every integer: the id may already be off
        raise TypeError(
            f"{source}: the {role} column holds integral floats above 2**53, which are not "
            f"exact integer ids; read the column as integers or strings (e.g. "
            f"pd.read_csv(..., dtype={{{name!r}: str}})).")
    return pd.Series(fvalues.astype(np.int64), name=col.name)


def _huge_ids_error(source: str, role: str, name: Hashable) -> TypeError:
    return TypeError(
        f"{source}: the {role} column holds integers above 2**63 - 1, which do not fit "
        f"int64 ids; read them as strings instead, e.g. df[{name!r}] = "
        f"df[{name!r}].astype(str).")
