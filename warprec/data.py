"""Reading interaction data, id maps, positive filtering and train/test splits.

Everything in this module works on a *canonical long-format* :class:`pandas.DataFrame`
with one row per (user, item) event and the columns

``user_id``
    Raw user id, kept as read (integer ids stay integers, string ids stay strings).
``item_id``
    Raw item id, same rule.
``rating`` (optional)
    Numeric rating or weight.
``timestamp`` (optional)
    Any sortable value (unix seconds in every MovieLens file).

:func:`read_ratings` and :func:`standardize_frame` produce such frames;
:func:`positives`, :func:`deduplicate`, :func:`split_random`,
:func:`split_leave_k_out` and :func:`split_temporal` transform them, and
:class:`Interactions` turns one into the sparse user x item matrix with two-way id maps.

Id rules (used everywhere)
--------------------------
* Integer ids (including integral floats such as ``3.0`` and object columns that only
  hold integers) become ``int64``; string ids stay strings.
* A column that mixes integers and strings (``1`` and ``"1"``, or ``1`` and ``"a"``) is
  rejected with a :class:`TypeError`: silently converting would either merge ``1`` and
  ``"1"`` or keep them apart, and neither is safe to guess. Convert it yourself with
  ``df["user_id"] = df["user_id"].astype(str)``.
* Missing ids (NaN/None, typically from truncated lines) raise a :class:`ValueError`
  that gives the number of rows and how to drop them.

Duplicated (user, item) rows
----------------------------
Nothing here drops duplicates silently. :func:`read_ratings`, :func:`standardize_frame`,
:func:`positives` and the split functions keep every row as it is (the split functions
warn with :class:`~warprec.exceptions.WarprecWarning`, because copies of one pair can
land on both sides of a split); :func:`deduplicate` resolves them explicitly (default
``how="last"``: keep the latest event); :class:`Interactions` sums the weights of
duplicated pairs into one matrix entry.

Every function returns new objects and never modifies its input.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import warnings
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._inputs import IdMap, check_positive_int
from .exceptions import WarprecWarning

__all__ = [
    "CANONICAL_COLUMNS",
    "Interactions",
    "deduplicate",
    "load_frame",
    "positives",
    "read_features",
    "read_interaction_lists",
    "read_item_titles",
    "read_ratings",
    "split_leave_k_out",
    "split_random",
    "split_temporal",
    "standardize_frame",
]

#: Canonical column names, in output order.
CANONICAL_COLUMNS = ("user_id", "item_id", "rating", "timestamp")

# Column names recognised (case-insensitively, ignoring "_", "-" and spaces) for each
# canonical column, in priority order.
_ALIASES = {
    "user_id": ("userid", "user", "uid", "users"),
    "item_id": ("itemid", "movieid", "item", "iid", "movie", "items"),
    "rating": ("rating", "ratings", "score", "weight", "value"),
    "timestamp": ("timestamp", "time", "ts", "datetime", "date"),
}
_ARG_OF = {"user_id": "user_col", "item_id": "item_col", "rating": "rating_col",
           "timestamp": "timestamp_col"}
_FORMATS = {
    "auto": "auto",
    "ml-100k": "udata",
    "udata": "udata",
    "ml-1m": "dat",
    "ml-10m": "dat",
    "dat": "dat",
    "ml-20m": "csv",
    "ml-25m": "csv",
    "ml-32m": "csv",
    "ml-latest": "csv",
    "ml-latest-small": "csv",
    "csv": "csv",
    "parquet": "parquet",
}
#: File (or dataset folder) suffixes read as Parquet.
_PARQUET_SUFFIXES = (".parquet", ".pq")
_SNIFF_BYTES = 1 << 16
_MAX_SHOWN = 5


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
def _norm_name(name: Any) -> str:
    return str(name).strip().strip("\"'").lower().replace("_", "").replace("-", "").replace(" ", "")


def _is_number(text: str) -> bool:
    try:
        float(text.strip().strip("\"'"))
    except ValueError:
        return False
    return True


def _show(values: Iterable[Any], limit: int = _MAX_SHOWN) -> str:
    values = list(values)
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v)
                      for v in values[:limit])
    if len(values) > limit:
        shown += f", ... ({len(values)} in total)"
    return shown


def _rows(positions: np.ndarray, header: bool | None) -> str:
    """Human-readable location of some rows (file lines when read from a file)."""
    positions = np.asarray(positions)[:_MAX_SHOWN]
    if header is None:  # a DataFrame given by the user: show positional rows
        return "row positions " + ", ".join(str(int(p)) for p in positions)
    offset = 2 if header else 1
    return "data lines " + ", ".join(str(int(p) + offset) for p in positions) + \
        " (counting from 1, blank lines not counted)"


def _open_bytes(path: Path):
    """Open ``path`` for binary reading, transparently decompressing by suffix."""
    suffix = path.suffix.lower()
    if suffix == ".gz":
        return gzip.open(path, "rb")
    if suffix == ".bz2":
        return bz2.open(path, "rb")
    if suffix in (".xz", ".lzma"):
        return lzma.open(path, "rb")
    if suffix == ".zip":
        archive = zipfile.ZipFile(path)
        names = [n for n in archive.namelist() if not n.endswith("/")]
        if len(names) != 1:
            raise ValueError(
                f"{path} is a zip archive with {len(names)} files; extract it and pass "
                f"the ratings file itself (found: {_show(names)})")
        return archive.open(names[0])
    return open(path, "rb")


_COMPRESSED = (".gz", ".bz2", ".xz", ".lzma", ".zip")
_DECOMPRESSION_ERRORS = (OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError)


def _read_compressed_error(path: Path, exc: Exception) -> ValueError:
    return ValueError(
        f"'{path}' could not be decompressed as {path.suffix.lower()[1:]} ({exc}); the file "
        f"is truncated, corrupted or not compressed. Re-download it, or rename it without "
        f"the {path.suffix!r} suffix if it is plain text.")


def _read_bytes(path: Path, size: int = -1) -> bytes:
    """The (decompressed) bytes of ``path``, with a clear error for damaged archives."""
    try:
        with _open_bytes(path) as fh:
            return fh.read(size)
    except _DECOMPRESSION_ERRORS as exc:
        if path.suffix.lower() not in _COMPRESSED or isinstance(exc, PermissionError):
            raise
        raise _read_compressed_error(path, exc) from None


def _check_path(path: str | os.PathLike, allow_dir: bool = False) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"Expected a file path (str or os.PathLike), got "
                        f"{type(path).__name__}: {path!r:.80}.")
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"No such file: '{p}' (resolved to '{p.resolve()}')")
    if p.is_dir() and not allow_dir:
        known = [c for c in ("u.data", "ratings.dat", "ratings.csv", "movies.csv",
                             "u.item", "movies.dat") if (p / c).exists()]
        hint = f"; it contains {_show(known)}" if known else ""
        raise ValueError(f"'{p}' is a directory, not a file{hint}. Pass the file path.")
    return p


def _sniff_lines(path: Path, encoding: str | None, n_lines: int = 50) -> list[str]:
    """First non-blank lines of a text file, with clear errors for binary/undecodable files."""
    raw = _read_bytes(path, _SNIFF_BYTES)
    if not raw.strip():
        raise ValueError(f"'{path}' is empty: there are no ratings to read.")
    if encoding is None and b"\x00" in raw:
        raise ValueError(
            f"'{path}' looks like a binary file (it contains NUL bytes), not a delimited "
            f"text file of ratings. If it is text in a UTF-16/UTF-32 encoding, pass "
            f"encoding='utf-16' (or the right one); if it is compressed, give it its "
            f"usual suffix (.gz, .bz2, .xz, .zip).")
    enc = encoding or "utf-8"
    try:
        text = raw.decode(enc)
    except UnicodeDecodeError as exc:
        if len(raw) == _SNIFF_BYTES and exc.start >= len(raw) - 4:
            text = raw[:exc.start].decode(enc)  # a multi-byte character cut by the sniff
        else:
            raise _decode_error(path, enc, exc) from None
    except LookupError:
        raise ValueError(f"Unknown encoding {encoding!r} given for '{path}'.") from None
    lines = text.lstrip("\ufeff").splitlines()
    if len(raw) == _SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut in the middle
    lines = [ln for ln in lines if ln.strip()][:n_lines]
    if not lines:  # e.g. only a byte order mark
        raise ValueError(f"'{path}' is empty: there are no ratings to read.")
    return lines


def _decode_error(path, enc, exc) -> ValueError:
    return ValueError(
        f"'{path}' is not valid {enc} text ({exc.reason} at byte {exc.start}). Pass the "
        f"file's encoding, e.g. read_ratings(path, encoding='latin-1') (MovieLens 100K "
        f"and 1M metadata files are latin-1).")


def _sniff_sep(lines: list[str]) -> str | None:
    best, best_count = None, 0
    for cand in ("\t", ",", ";", "|"):
        counts = [ln.count(cand) for ln in lines]
        if counts[0] == 0:
            continue
        consistent = all(c == counts[0] for c in counts)
        score = counts[0] + (1000 if consistent else 0)
        if score > best_count:
            best, best_count = cand, score
    if best is None and len(lines[0].split()) > 1:
        return r"\s+"
    return best


def _split_line(line: str, sep: str) -> list[str]:
    if sep == r"\s+":
        return line.split()
    return [f.strip().strip("\"'") for f in line.split(sep)]


def _has_header(lines: list[str], sep: str) -> bool:
    first = _split_line(lines[0], sep)
    if any(_norm_name(f) in names for f in first for names in _ALIASES.values()):
        return True
    if all(_is_number(f) for f in first):
        return False
    if len(lines) == 1:
        return True
    second = _split_line(lines[1], sep)
    # a text field above a numeric field in the same column: a header line
    return any(not _is_number(a) and _is_number(b) for a, b in zip(first, second))


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------
def read_ratings(path, *, format: str = "auto", sep: str | None = None,
                 user_col: str | int | None = None, item_col: str | int | None = None,
                 rating_col: str | int | bool | None = None,
                 timestamp_col: str | int | bool | None = None,
                 encoding: str | None = None) -> pd.DataFrame:
    """Read a ratings / interactions file into the canonical long format.

    Every MovieLens layout is recognised offline without configuration:

    * ML-100K ``u.data``: tab-separated, no header, ``user item rating timestamp``;
    * ML-1M / ML-10M ``ratings.dat``: ``::``-separated, no header;
    * ML-20M / 25M / 32M / latest ``ratings.csv``: header ``userId,movieId,rating,timestamp``;
    * any other CSV/TSV (``,``, tab, ``;``, ``|`` or whitespace separated, optionally
      ``.gz``/``.bz2``/``.xz``/single-file ``.zip`` compressed);
    * Parquet: a ``.parquet`` / ``.pq`` file, any file that starts with Parquet's magic
      bytes, or a folder of ``.parquet`` files (what ``dask.dataframe.to_parquet``
      writes). Needs pyarrow: ``pip install 'warprec[dask]'`` (or ``pip install
      pyarrow``).

    Columns are found by name, case-insensitively and ignoring ``_``/``-``/spaces:
    user from ``user_id, userId, user, uid``; item from ``item_id, movieId, movie_id,
    item, iid``; rating from ``rating, score, weight``; timestamp from ``timestamp,
    time, ts``. Files without a header line are read positionally as
    ``user, item[, rating[, timestamp]]`` (the MovieLens order).

    Parameters
    ----------
    path : str, os.PathLike or pandas.DataFrame
        The file (or Parquet folder) to read. A DataFrame is passed to
        :func:`standardize_frame`.
    format : str, default "auto"
        ``"auto"`` sniffs the layout. Explicit choices: ``"ml-100k"`` (tab, no header),
        ``"ml-1m"``/``"ml-10m"`` (``::``, no header), ``"ml-20m"``/``"ml-25m"``/
        ``"ml-latest"``/``"csv"`` (delimited with a header line), ``"parquet"``.
    sep : str, optional
        Field separator, overriding detection (``"::"`` is supported and fast). Not used
        for Parquet, nor is ``encoding``.
    user_col, item_col : str or int, optional
        Name (or 0-based position) of the user / item column when automatic detection
        does not apply.
    rating_col, timestamp_col : str, int or False, optional
        Same for the optional columns; ``False`` ignores the column even if present.
    encoding : str, optional
        Text encoding; UTF-8 by default. Use ``"latin-1"`` for legacy files.

    Returns
    -------
    pandas.DataFrame
        Columns ``user_id, item_id`` and, when present, ``rating`` (numeric) and
        ``timestamp``; other columns are dropped. Ids are kept as read (see the module
        docstring). Row order is the file's. **Duplicated (user, item) rows are kept as
        read**; resolve them with :func:`deduplicate`.

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    ImportError
        A Parquet file, without pyarrow (or fastparquet) installed.
    ValueError
        Empty, binary or undecodable file (the message suggests ``encoding=``), lines
        with too many fields, missing ids or ratings (truncated lines), non-numeric
        ratings, a damaged Parquet file.
    KeyError
        The user/item columns cannot be identified; the message lists the columns found
        and the ``*_col`` arguments to use.
    TypeError
        An id column mixes integers and strings.
    """
    cols = {"user_col": user_col, "item_col": item_col, "rating_col": rating_col,
            "timestamp_col": timestamp_col}
    if isinstance(path, pd.DataFrame):
        return standardize_frame(path, **cols)
    if format not in _FORMATS:
        raise ValueError(f"Unknown format {format!r}; choose one of {sorted(_FORMATS)}.")
    kind = _FORMATS[format]
    p = _check_path(path, allow_dir=True)
    if _is_parquet(p, kind):
        return _standardize(_read_parquet(p), cols, source=f"'{p}'", header=None)
    p = _check_path(path)  # a folder that holds no Parquet files: the usual error
    lines = _sniff_lines(p, encoding)
    enc = encoding or "utf-8"

    if sep is None:
        if kind == "udata":
            sep = "\t"
        elif kind == "dat" or (kind == "auto" and "::" in lines[0]):
            sep = "::"
        else:
            sep = _sniff_sep(lines)
            if sep is None:
                raise ValueError(
                    f"Could not find a field separator in '{p}' (first line: "
                    f"{lines[0][:80]!r}). Pass it explicitly, e.g. sep=','.")
    # MovieLens .csv files always have a header; u.data / .dat never do, but a header
    # line is still recognised if someone added one
    header = True if kind == "csv" else _has_header(lines, sep)

    try:
        frame = _read_delimited(p, sep, header, enc)
    except UnicodeDecodeError as exc:
        raise _decode_error(p, enc, exc) from None
    except pd.errors.ParserError as exc:
        raise ValueError(
            f"Could not parse '{p}' with separator {sep!r}: {str(exc).strip()}. Some "
            f"lines have a different number of fields; fix those lines or pass the "
            f"right sep=.") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"'{p}' has no data rows.") from None
    except _DECOMPRESSION_ERRORS as exc:
        if p.suffix.lower() not in _COMPRESSED or isinstance(exc, PermissionError):
            raise
        raise _read_compressed_error(p, exc) from None
    return _standardize(frame, cols, source=f"'{p}'", header=header)


def _is_parquet(p: Path, kind: str) -> bool:
    """Whether to read ``p`` as Parquet: asked for, named ``*.parquet`` / ``*.pq``, a
    folder holding such files (a Parquet dataset), or a file starting with ``PAR1``."""
    if kind == "parquet" or p.suffix.lower() in _PARQUET_SUFFIXES:
        return True
    if kind != "auto":
        return False
    if p.is_dir():
        return any(child.suffix.lower() in _PARQUET_SUFFIXES for child in p.iterdir())
    if p.suffix.lower() in _COMPRESSED:
        return False
    with open(p, "rb") as fh:
        return fh.read(4) == b"PAR1"


def _read_parquet(p: Path) -> pd.DataFrame:
    """A Parquet file or folder as a DataFrame (dictionary-encoded columns decoded)."""
    try:
        frame = pd.read_parquet(p)
    except ImportError:
        raise ImportError(
            f"reading the Parquet file '{p}' needs pyarrow, which warprec does not install "
            f"by default: pip install 'warprec[dask]' (or pip install pyarrow).") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError | PermissionError):
            raise
        if p.is_dir():
            raise ValueError(f"the folder '{p}' could not be read as one Parquet data set "
                             f"({str(exc).strip()}). Keep only the Parquet files of one "
                             f"table in it, or pass one file.") from None
        raise ValueError(f"'{p}' could not be read as Parquet ({str(exc).strip()}); the "
                         f"file is damaged or not Parquet. Re-create it, or give a text "
                         f"file another suffix than .parquet.") from None
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            try:
                frame[column] = frame[column].astype(frame[column].cat.categories.dtype)
            except (TypeError, ValueError):   # missing values: reported as such later
                frame[column] = frame[column].astype(object)
    return frame


def _read_delimited(p: Path, sep: str, header: bool, enc: str) -> pd.DataFrame:
    common = {"header": 0 if header else None, "encoding": enc, "low_memory": False}
    if sep == "::":
        # "::" is read as ":" by the fast C parser; fields then sit at even positions
        # and the odd positions are empty. Fall back to the slow parser if a field
        # itself contains ":".
        try:
            raw = pd.read_csv(p, sep=":", **common)
        except pd.errors.ParserError:
            raw = None
        if raw is not None:
            odd = raw.iloc[:, 1::2]
            if raw.shape[1] % 2 == 1 and bool(odd.isna().all().all()):
                out = raw.iloc[:, ::2]
                if header:
                    out.columns = [str(c).strip() for c in out.columns]
                else:
                    out.columns = range(out.shape[1])
                return out
        return pd.read_csv(p, sep="::", engine="python", header=0 if header else None,
                           encoding=enc)
    if len(sep) > 1 and sep != r"\s+":
        return pd.read_csv(p, sep=sep, engine="python", header=0 if header else None,
                           encoding=enc)
    return pd.read_csv(p, sep=sep, **common)


def standardize_frame(df: pd.DataFrame, *, user_col: str | int | None = None,
                      item_col: str | int | None = None,
                      rating_col: str | int | bool | None = None,
                      timestamp_col: str | int | bool | None = None) -> pd.DataFrame:
    """Convert any interactions DataFrame to the canonical long format.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per event. Not modified.
    user_col, item_col : str or int, optional
        Column name (exact, else case-insensitive) or 0-based position. By default the
        columns are found by name as in :func:`read_ratings`; a frame whose columns are
        the integers ``0..k-1`` (a headerless read) is taken as ``user, item[, rating[,
        timestamp]]``.
    rating_col, timestamp_col : str, int or False, optional
        Same for the optional columns; ``False`` ignores the column.

    Returns
    -------
    pandas.DataFrame
        New frame with columns ``user_id, item_id[, rating][, timestamp]`` and a fresh
        RangeIndex; other columns are dropped. Integer and string ids are kept as is
        (integral float ids become int64). Duplicated (user, item) rows are kept.

    Raises
    ------
    KeyError
        A column cannot be identified (message lists the columns and the arguments).
    ValueError
        Missing ids, missing or non-numeric ratings, missing timestamps.
    TypeError
        An id column mixes integers and strings, or has an unsupported type.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"standardize_frame expects a pandas DataFrame, got "
                        f"{type(df).__name__}; use read_ratings for files.")
    cols = {"user_col": user_col, "item_col": item_col, "rating_col": rating_col,
            "timestamp_col": timestamp_col}
    return _standardize(df, cols, source="the DataFrame", header=None)


#: Alias of :func:`standardize_frame` (accepts a DataFrame, returns the canonical frame).
load_frame = standardize_frame


def _find_column(df: pd.DataFrame, role: str, spec, positional: bool, source: str):
    """Return the column label of ``role`` (or None for an absent optional column)."""
    optional = role in ("rating", "timestamp")
    arg = _ARG_OF[role]
    columns = list(df.columns)
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
                           f"{len(columns)} columns ({_show(columns, 20)}).")
        if spec in columns:
            return spec
        matches = [c for c in columns if str(c).lower() == str(spec).lower()]
        if len(matches) == 1:
            return matches[0]
        raise KeyError(f"{arg}={spec!r} is not a column of {source}; columns found: "
                       f"{_show(columns, 20)}.")
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
    wanted = _ALIASES[role]
    found = [c for c in columns if _norm_name(c) in wanted]
    if len(found) > 1:
        found.sort(key=lambda c: wanted.index(_norm_name(c)))
        if wanted.index(_norm_name(found[0])) == wanted.index(_norm_name(found[1])):
            raise KeyError(f"Several columns of {source} could be the {role} column: "
                           f"{_show(found)}. Choose one with {arg}=.")
    if found:
        return found[0]
    if optional:
        return None
    names = {"user_id": "user_id, userId, user, uid",
             "item_id": "item_id, movieId, movie_id, item, iid"}[role]
    raise KeyError(
        f"No {role} column in {source}. Columns found: {_show(columns, 20)}; expected "
        f"one named like {names} (any case). Name it explicitly with {arg}='...' "
        f"(read_ratings/standardize_frame: user_col=, item_col=, rating_col=, "
        f"timestamp_col=).")


def _standardize(df: pd.DataFrame, cols: dict, source: str, header) -> pd.DataFrame:
    positional = (header is False) or (
        header is None and list(df.columns) == list(range(df.shape[1])))
    chosen = {}
    # explicitly named columns first, then the detected / positional defaults
    roles = sorted(CANONICAL_COLUMNS, key=lambda r: cols[_ARG_OF[r]] is None)
    for role in roles:
        spec = cols[_ARG_OF[role]]
        label = _find_column(df, role, spec, positional, source)
        if label is None:
            continue
        if label in chosen.values():
            if spec is None and role in ("rating", "timestamp"):
                continue  # the default column is already used for another role
            raise KeyError(f"Column {label!r} of {source} was chosen for two roles; "
                           f"pass user_col=, item_col=, rating_col=, timestamp_col= "
                           f"explicitly.")
        chosen[role] = label
    out = {}
    for role in ("user_id", "item_id"):
        out[role] = _normalize_ids(df[chosen[role]], role, source, header)
    if "rating" in chosen:
        out["rating"] = _numeric_ratings(df[chosen["rating"]], source, header)
    if "timestamp" in chosen:
        ts = df[chosen["timestamp"]]
        missing = np.flatnonzero(ts.isna().to_numpy())
        if missing.size:
            raise ValueError(
                f"{source}: {missing.size} rows have no timestamp ({_rows(missing, header)}),"
                f" e.g. truncated lines. Fix or drop them, or ignore the column with "
                f"timestamp_col=False.")
        out["timestamp"] = ts.reset_index(drop=True).copy()
    result = pd.DataFrame(out)
    result.index = pd.RangeIndex(len(result))
    return result


def _numeric_ratings(col: pd.Series, source: str, header) -> np.ndarray:
    if pd.api.types.is_bool_dtype(col.dtype):
        col = col.astype(np.int64)
    if not pd.api.types.is_numeric_dtype(col.dtype):
        conv = pd.to_numeric(col, errors="coerce")
        bad = np.flatnonzero(conv.isna().to_numpy() & col.notna().to_numpy())
        if bad.size:
            raise ValueError(
                f"{source}: the rating column holds {bad.size} non-numeric values "
                f"({_show(col.to_numpy()[bad])} at {_rows(bad, header)}). Fix them, choose "
                f"another column with rating_col=, or ignore ratings with rating_col=False.")
        col = conv
    missing = np.flatnonzero(col.isna().to_numpy())
    if missing.size:
        raise ValueError(
            f"{source}: {missing.size} rows have no rating ({_rows(missing, header)}), e.g. "
            f"truncated lines. Fix or drop them (df.dropna(subset=['rating'])), or ignore "
            f"ratings with rating_col=False.")
    values = col.to_numpy(copy=True)
    infinite = np.flatnonzero(np.isinf(values.astype(np.float64)))
    if infinite.size:
        raise ValueError(
            f"{source}: {infinite.size} rows have an infinite rating ({_rows(infinite, header)})."
            f" Fix or drop them, or ignore ratings with rating_col=False.")
    return values


def _ids_kind(values: np.ndarray) -> str:
    """'int', 'str' for id arrays (object arrays inspected), else raise TypeError."""
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


def _normalize_ids(col: pd.Series, role: str, source: str, header) -> pd.Series:
    """Validate an id column and return it as int64 (numeric ids) or strings."""
    missing = np.flatnonzero(col.isna().to_numpy())
    if missing.size:
        raise ValueError(
            f"{source}: {missing.size} rows have no {role.replace('_', ' ')} "
            f"({_rows(missing, header)}), e.g. truncated lines or empty fields. Fix the "
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
        kind = "float" if pd.api.types.is_float_dtype(dtype) else _ids_kind(values)
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
            f"({_show(fvalues[bad])} at {_rows(bad, header)}); ids must be integers or "
            f"strings.")
    if len(fvalues) and np.abs(fvalues).max() > 2.0**53:
        # beyond 2**53 a float no longer holds every integer: the id may already be off
        raise TypeError(
            f"{source}: the {role} column holds integral floats above 2**53, which are not "
            f"exact integer ids; read the column as integers or strings (e.g. "
            f"pd.read_csv(..., dtype={{{name!r}: str}})).")
    return pd.Series(fvalues.astype(np.int64), name=col.name)


def _huge_ids_error(source, role, name) -> TypeError:
    return TypeError(
        f"{source}: the {role} column holds integers above 2**63 - 1, which do not fit "
        f"int64 ids; read them as strings instead, e.g. df[{name!r}] = "
        f"df[{name!r}].astype(str).")


def read_interaction_lists(path, *, encoding: str = "utf-8") -> pd.DataFrame:
    """Read a file of per-user item lists, one user per line: ``user item item ...``.

    This is the layout of the LightGCN / KGAT benchmark files (``train.txt`` and
    ``test.txt`` of amazon-book, gowalla, yelp2018): whitespace-separated integer ids,
    the first token of a line the user, the rest the items that user interacted with.
    A line with a user and no item (a user without positives in that file) yields no
    row. Blank lines are skipped; compressed files are read as by :func:`read_ratings`.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.
    encoding : str, default "utf-8"

    Returns
    -------
    pandas.DataFrame
        Canonical frame with ``int64`` columns ``user_id`` and ``item_id``, one row per
        (user, item) token in file order (duplicated items of a line are kept as rows;
        see :func:`deduplicate`).

    Raises
    ------
    ValueError
        A token is not a non-negative integer (the message names the line), or the
        file holds no line at all.
    """
    p = _check_path(path)
    try:
        text = _read_bytes(p).decode(encoding)
    except UnicodeDecodeError as exc:
        raise _decode_error(p, encoding, exc) from None
    users: list[np.ndarray] = []
    items: list[np.ndarray] = []
    n_lines = 0
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        n_lines += 1
        if not all(t.isdigit() for t in tokens):
            bad = next(t for t in tokens if not t.isdigit())
            raise ValueError(f"'{p}' line {number}: {bad!r} is not a non-negative integer id; "
                             "each line must be 'user item item ...' of integer ids "
                             "separated by white space.")
        ids = np.array(tokens, dtype=np.int64)
        items.append(ids[1:])
        users.append(np.full(ids.size - 1, ids[0], dtype=np.int64))
    if n_lines == 0:
        raise ValueError(f"'{p}' holds no 'user item item ...' line.")
    return pd.DataFrame({"user_id": np.concatenate(users), "item_id": np.concatenate(items)})


def _read_text(p: Path, encoding: str | None, what: str) -> str:
    """A small metadata file's text (without a byte-order mark): UTF-8, else latin-1,
    unless ``encoding`` is given; clear errors for empty and binary files."""
    raw = _read_bytes(p)
    if not raw.strip():
        raise ValueError(f"'{p}' is empty: there are no {what} to read.")
    if encoding is None and b"\x00" in raw[:_SNIFF_BYTES]:
        raise ValueError(f"'{p}' looks like a binary file (it contains NUL bytes); pass "
                         f"encoding= if it is UTF-16 text.")
    if encoding is None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
    else:
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise _decode_error(p, encoding, exc) from None
    return text.lstrip("\ufeff")


def read_item_titles(path, *, encoding: str | None = None) -> pd.Series:
    """Read item titles from a MovieLens metadata file.

    Recognised layouts: ``movies.csv`` (ML-20M/25M/latest: ``movieId,title,genres``
    with a header; any CSV with an item-id column and a ``title`` column), ML-100K
    ``u.item`` (``|``-separated, latin-1, no header: ``id|title|...``) and ML-1M/10M
    ``movies.dat`` (``::``-separated, no header: ``id::title::genres``).

    Parameters
    ----------
    path : str or os.PathLike
        The metadata file.
    encoding : str, optional
        Text encoding. By default UTF-8 is tried first and latin-1 is used if the file
        is not valid UTF-8 (the MovieLens 100K and 1M files are latin-1).

    Returns
    -------
    pandas.Series
        Titles (``str``), indexed by the raw item id (index name ``item_id``; integer ids
        become int64), in file order. If an id appears more than once, its first title
        is kept.

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    ValueError
        Binary, empty or unparseable file.
    KeyError
        A CSV without recognisable id/title columns.
    """
    p = _check_path(path)
    text = _read_text(p, encoding, "titles")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0]
    try:
        ids_s, titles = _parse_titles(p, text, lines, first)
    except pd.errors.ParserError as exc:
        raise ValueError(f"Could not parse the titles file '{p}': {str(exc).strip()}. Check "
                         f"its quoting and number of fields.") from None
    ids_s = pd.Series(ids_s).astype(str).str.strip()
    numeric = pd.to_numeric(ids_s, errors="coerce")
    if numeric.notna().all() and (numeric == np.round(numeric)).all():
        index = pd.Index(numeric.to_numpy().astype(np.int64), name="item_id")
    else:
        index = pd.Index(ids_s.to_numpy(dtype=object), name="item_id")
    out = pd.Series(np.asarray(titles, dtype=object), index=index, name="title")
    out = out[~out.index.duplicated(keep="first")]
    return out.astype(str)


def read_features(path, kind: str = "item", *, columns: Iterable[str] | None = None,
                  encoding: str | None = None) -> pd.DataFrame:
    """Read a CSV of side features for ``WARPFactorizer.fit(..., item_features=...)``.

    The file has a header, one row per item (``kind="item"``) or user (``"user"``) and
    an id column recognised like :func:`read_ratings`' (``movieId``, ``item``,
    ``userId``, ...), renamed ``item_id`` / ``user_id``; integer-looking ids become int64
    as in :func:`read_ratings`, so they match the ratings' ids. MovieLens ``movies.csv``
    works as it is: its ``genres`` column (``"Action|Comedy"``) becomes one feature per
    genre when fit.

    Parameters
    ----------
    path : str or os.PathLike
    kind : {"item", "user"}, default "item"
    columns : iterable of str, optional
        The feature columns to keep (default: every column but the id and ``title``).
    encoding : str, optional
        Text encoding; by default UTF-8, else latin-1.

    Returns
    -------
    pandas.DataFrame
        The id column first, then the feature columns.
    """
    if kind not in ("item", "user"):
        raise ValueError(f"kind must be 'item' or 'user', got {kind!r}.")
    p = _check_path(path)
    text = _read_text(p, encoding, "features")
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"Could not parse the features file '{p}': {str(exc).strip()}.") \
            from None
    role = f"{kind}_id"
    names = {_norm_name(c): c for c in frame.columns}
    id_col = next((names[a] for a in (_norm_name(role),) + _ALIASES[role] if a in names),
                  None)
    if id_col is None:
        raise KeyError(f"'{p}' has no {kind} id column (looked for {role} and "
                       f"{', '.join(_ALIASES[role])}; columns: {_show(frame.columns)}).")
    keep = ([c for c in frame.columns if c != id_col and _norm_name(c) != "title"]
            if columns is None else list(columns))
    missing = [c for c in keep if c not in frame.columns]
    if missing:
        raise KeyError(f"'{p}' has no column {_show(missing)} (columns: "
                       f"{_show(frame.columns)}).")
    if not keep:
        raise ValueError(f"'{p}' has no feature column besides its id and title.")
    ids = frame[id_col].str.strip()
    numeric = pd.to_numeric(ids, errors="coerce")
    if numeric.notna().all() and (numeric == np.round(numeric)).all():
        ids = numeric.astype(np.int64)
    out = pd.DataFrame({role: ids.to_numpy()})
    for c in keep:
        values = frame[c]
        as_number = pd.to_numeric(values, errors="coerce")
        out[c] = as_number if as_number.notna().all() else values.to_numpy(dtype=object)
    return out


def _parse_titles(p, text, lines, first):
    """(ids, titles) of a titles file in one of the layouts of :func:`read_item_titles`."""
    if "::" in first:
        start = 0 if _is_number(first.split("::")[0]) else 1
        ids, titles = [], []
        for n, ln in enumerate(lines[start:], start=start + 1):
            parts = ln.split("::")
            if len(parts) < 2:
                raise ValueError(f"'{p}' line {n} has no '::' separated title: {ln[:80]!r}")
            ids.append(parts[0].strip())
            titles.append(parts[1])
        ids_s = pd.Series(ids)
    elif "|" in first and _is_number(first.split("|")[0]):
        frame = pd.read_csv(io.StringIO(text), sep="|", header=None, usecols=[0, 1],
                            dtype={1: object}, keep_default_na=False, quoting=3)
        ids_s, titles = frame[0], frame[1].tolist()
    else:
        with warnings.catch_warnings():
            # lines with more fields than the header (an unquoted comma in a title): keep
            # the id and the title in place instead of shifting the columns
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = pd.read_csv(io.StringIO(text), dtype=object, keep_default_na=False,
                                index_col=False)
        id_col = _find_column(frame, "item_id", None, False, f"'{p}'")
        title_cols = [c for c in frame.columns if _norm_name(c) in ("title", "name",
                                                                  "movietitle", "itemtitle")]
        if not title_cols:
            raise KeyError(f"No title column in '{p}'. Columns found: "
                           f"{_show(list(frame.columns), 20)}; expected 'title'.")
        ids_s, titles = frame[id_col], frame[title_cols[0]].tolist()
    return ids_s, titles


# --------------------------------------------------------------------------------------
# filtering and duplicates
# --------------------------------------------------------------------------------------
def _require(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} expects a pandas DataFrame, got {type(df).__name__}.")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(
            f"{what} needs the column(s) {missing}, but the frame has "
            f"{_show(list(df.columns), 20)}. Convert it first with "
            f"standardize_frame(df, user_col=..., item_col=..., rating_col=..., "
            f"timestamp_col=...).")


def positives(df: pd.DataFrame, min_rating: float | None = None) -> pd.DataFrame:
    """Keep the positive interactions: rows with ``rating >= min_rating``.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame. Not modified.
    min_rating : float, optional
        Threshold (inclusive). ``None`` keeps every row (implicit data where every event
        is a positive).

    Returns
    -------
    pandas.DataFrame
        A new frame with the kept rows in their original order and a fresh RangeIndex.
        Duplicated (user, item) rows are kept as they are (see :func:`deduplicate`).

    Raises
    ------
    KeyError
        ``min_rating`` is given but the frame has no ``rating`` column.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"positives expects a pandas DataFrame, got {type(df).__name__}.")
    if min_rating is None:
        return df.reset_index(drop=True).copy()
    if "rating" not in df.columns:
        raise KeyError(f"positives(min_rating={min_rating}) needs a 'rating' column, but "
                       f"the frame has {_show(list(df.columns), 20)}. Pass "
                       f"min_rating=None to keep every row, or name the rating column "
                       f"with standardize_frame(df, rating_col=...).")
    keep = (df["rating"] >= min_rating).to_numpy(dtype=bool)
    return df.loc[keep].reset_index(drop=True)


def _codes(values) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(np.asarray(values) if not isinstance(values, pd.Series)
                                  else values)
    return codes.astype(np.int64), len(uniques)


def _pair_codes(df: pd.DataFrame) -> np.ndarray:
    u, _ = _codes(df["user_id"])
    i, n_i = _codes(df["item_id"])
    return u * max(n_i, 1) + i


def _order_key(values: pd.Series) -> np.ndarray:
    """Integer codes that sort like ``values`` (works for numbers, datetimes, strings)."""
    arr = values.to_numpy()
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        return arr
    codes, _ = pd.factorize(values, sort=True)
    return codes.astype(np.int64)


def deduplicate(df: pd.DataFrame, how: str = "last") -> pd.DataFrame:
    """Resolve duplicated (user, item) pairs explicitly.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame. Not modified.
    how : {"last", "first", "max", "sum", "error"}, default "last"
        * ``"last"`` keeps, per pair, the row with the latest ``timestamp`` (ties and
          frames without timestamps: the last such row in frame order);
        * ``"first"`` keeps the earliest (ties / no timestamp: the first row);
        * ``"max"`` keeps the row with the highest ``rating`` (ties: latest timestamp,
          then last row); needs a ``rating`` column;
        * ``"sum"`` keeps one row per pair whose ``rating`` is the sum of the pair's
          ratings and whose ``timestamp`` (if any) is the latest; other columns come
          from the pair's first row; needs a ``rating`` column;
        * ``"error"`` raises a :class:`ValueError` if any pair is duplicated.

    Returns
    -------
    pandas.DataFrame
        One row per (user, item) pair, in the order of the kept rows (for ``"sum"``: of
        each pair's first row), with a fresh RangeIndex.

    Raises
    ------
    ValueError
        Unknown ``how``, or duplicates with ``how="error"`` (the message shows some).
    KeyError
        ``how`` needs a ``rating`` column that is absent.
    """
    _require(df, ("user_id", "item_id"), "deduplicate")
    options = ("last", "first", "max", "sum", "error")
    if how not in options:
        raise ValueError(f"how={how!r} is not one of {options}.")
    if how in ("max", "sum") and "rating" not in df.columns:
        raise KeyError(f"deduplicate(how={how!r}) needs a 'rating' column; the frame has "
                       f"{_show(list(df.columns), 20)}. Use how='last' or 'first'.")
    n = len(df)
    pair = _pair_codes(df)
    dup = pd.Series(pair).duplicated(keep=False).to_numpy()
    if not dup.any():
        return df.reset_index(drop=True).copy()
    if how == "error":
        rows = np.flatnonzero(dup)
        _, first = np.unique(pair[rows], return_index=True)
        shown = rows[np.sort(first)]
        pairs = list(zip(df["user_id"].to_numpy()[shown].tolist(),
                         df["item_id"].to_numpy()[shown].tolist()))
        n_pairs = len(first)
        raise ValueError(
            f"{n_pairs} (user, item) pairs occur more than once ({rows.size} rows), e.g. "
            f"{_show(pairs)}. Choose how to combine them: deduplicate(df, how='last' | "
            f"'first' | 'max' | 'sum').")
    pos = np.arange(n)
    has_ts = "timestamp" in df.columns
    ts = _order_key(df["timestamp"]) if has_ts else None
    if how == "sum":
        first = ~pd.Series(pair).duplicated(keep="first").to_numpy()
        keep_pos = pos[first]
        groups = pd.Series(df["rating"].to_numpy()).groupby(pair, sort=False).sum()
        out = df.iloc[keep_pos].reset_index(drop=True)
        out["rating"] = groups.loc[pair[keep_pos]].to_numpy()
        if has_ts:
            latest = pd.Series(df["timestamp"].to_numpy()).groupby(pair, sort=False).max()
            out["timestamp"] = latest.loc[pair[keep_pos]].to_numpy()
        return out
    # sort so that the row to keep comes last (or first) within each pair, stably
    keys = [pos]
    if has_ts:
        keys.append(ts)
    if how == "max":
        keys.append(df["rating"].to_numpy())
    order = np.lexsort(keys) if len(keys) > 1 else pos
    keep_rule = "first" if how == "first" else "last"
    kept = ~pd.Series(pair[order]).duplicated(keep=keep_rule).to_numpy()
    keep_pos = np.sort(order[kept])
    return df.iloc[keep_pos].reset_index(drop=True)


# --------------------------------------------------------------------------------------
# splits
# --------------------------------------------------------------------------------------
def _warn_duplicates(df: pd.DataFrame, what: str) -> None:
    dup = pd.Series(_pair_codes(df)).duplicated()
    count = int(dup.sum())
    if count:
        warnings.warn(
            f"{what}: {count} rows repeat an earlier (user, item) pair; they are split "
            f"independently, so one pair can land in both train and test. Call "
            f"deduplicate(df) first to avoid this.", WarprecWarning, stacklevel=3)


def _rank_within_user(user_codes: np.ndarray, n_users: int, *keys) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """0-based rank of each row within its user when sorted by ``keys`` (last key is
    the primary sort key among the given ones, as in :func:`numpy.lexsort`), plus the
    user's row count for every row."""
    n = len(user_codes)
    order = np.lexsort((np.arange(n),) + tuple(keys) + (user_codes,))
    counts = np.bincount(user_codes, minlength=n_users)
    starts = np.cumsum(counts) - counts
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - starts[user_codes[order]]
    return rank, counts[user_codes]


def _n_held_out(fraction: float, counts: np.ndarray) -> np.ndarray:
    """``floor(fraction * n_u)`` rows held out per user; the tiny epsilon keeps e.g.
    ``0.29 * 100`` from flooring to 28."""
    return np.floor(float(fraction) * counts + 1e-9).astype(np.int64)


def _split_by_mask(df: pd.DataFrame, test: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (df.loc[~test].reset_index(drop=True), df.loc[test].reset_index(drop=True))


def split_random(df: pd.DataFrame, test_fraction: float = 0.2,
                 random_state=0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-user random hold-out.

    For every user with ``n_u`` rows, ``floor(test_fraction * n_u)`` of them, chosen
    uniformly at random, go to the test set; users for whom that number is 0 keep all
    their rows in train. Concretely, one uniform key per row is drawn with
    ``np.random.default_rng(random_state).random(len(df))`` (in row order), each
    user's rows are ordered by their keys, and the first ``floor(...)`` are test rows.
    With ``random_state=42`` and ``test_fraction=0.2`` on the positives (rating >= 4)
    of ML-100K ``u.data`` this reproduces the shared ``ml-100k-split`` exactly.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame (needs ``user_id``). Not modified.
    test_fraction : float, default 0.2
        In ``[0, 1)``.
    random_state : int, numpy.random.Generator or None, default 0
        Anything :func:`numpy.random.default_rng` accepts. The global NumPy random state
        is never used.

    Returns
    -------
    (train, test) : tuple of pandas.DataFrame
        Disjoint sets of rows covering ``df``, each in the original row order with a
        fresh RangeIndex and the same columns as ``df``.

    Notes
    -----
    Duplicated (user, item) rows are treated as independent rows, so copies of a pair
    can land on both sides; a :class:`~warprec.exceptions.WarprecWarning` says so. Call
    :func:`deduplicate` first.
    """
    _require(df, ("user_id", "item_id"), "split_random")
    if not (0.0 <= float(test_fraction) < 1.0):
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction!r}.")
    _warn_duplicates(df, "split_random")
    rng = np.random.default_rng(random_state)
    users, n_users = _codes(df["user_id"])
    key = rng.random(len(df))
    rank, n_u = _rank_within_user(users, n_users, key)
    return _split_by_mask(df, rank < _n_held_out(test_fraction, n_u))


def split_leave_k_out(df: pd.DataFrame, k: int = 1, random_state=0,
                      by: str = "random") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hold out ``k`` rows per user.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame. Not modified.
    k : int, default 1
        Rows per user moved to test (``k >= 1``). **Users with ``k`` rows or fewer stay
        entirely in train** (so every test user still has training data).
    random_state : int, numpy.random.Generator or None, default 0
        Seed for ``by="random"`` (same key scheme as :func:`split_random`); unused for
        ``by="time"``.
    by : {"random", "time"}, default "random"
        ``"random"``: ``k`` rows chosen uniformly at random. ``"time"``: the user's
        ``k`` latest rows by ``timestamp`` (ties: later rows in frame order count as
        later); needs a ``timestamp`` column.

    Returns
    -------
    (train, test) : tuple of pandas.DataFrame
        In the original row order, fresh RangeIndex.

    Notes
    -----
    Duplicated (user, item) rows are split independently (with a warning); call
    :func:`deduplicate` first.
    """
    _require(df, ("user_id", "item_id"), "split_leave_k_out")
    if by not in ("random", "time"):
        raise ValueError(f"by must be 'random' or 'time', got {by!r}.")
    check_positive_int(k, "k")
    if by == "time":
        _require(df, ("timestamp",), "split_leave_k_out(by='time')")
        return _last_n_split(df, int(k), "split_leave_k_out")
    _warn_duplicates(df, "split_leave_k_out")
    rng = np.random.default_rng(random_state)
    users, n_users = _codes(df["user_id"])
    rank, n_u = _rank_within_user(users, n_users, rng.random(len(df)))
    return _split_by_mask(df, (rank < k) & (n_u > k))


def _last_n_split(df: pd.DataFrame, n: int, what: str):
    ts = df["timestamp"]
    if ts.isna().any():
        raise ValueError(f"{what}: {int(ts.isna().sum())} rows have no timestamp; drop "
                         f"or fill them first.")
    _warn_duplicates(df, what)
    users, n_users = _codes(df["user_id"])
    rank, n_u = _rank_within_user(users, n_users, _order_key(ts))
    return _split_by_mask(df, (rank >= n_u - n) & (n_u > n))


def split_temporal(df: pd.DataFrame, *, last_n: int | None = None,
                   time_cut=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split by time: per-user latest rows, or a global time cut.

    Give exactly one of ``last_n`` and ``time_cut``.

    Parameters
    ----------
    df : pandas.DataFrame
        Canonical frame with a ``timestamp`` column. Not modified.
    last_n : int, optional
        Each user's ``last_n`` latest rows go to test (ties: later rows in frame order
        count as later). Users with ``last_n`` rows or fewer stay entirely in train.
    time_cut : scalar, optional
        Rows with ``timestamp >= time_cut`` go to test, the rest to train (users may
        end up in only one side).

    Returns
    -------
    (train, test) : tuple of pandas.DataFrame
        In the original row order, fresh RangeIndex.

    Raises
    ------
    KeyError
        No ``timestamp`` column.
    ValueError
        Neither or both of ``last_n``/``time_cut``; missing timestamps.

    Notes
    -----
    Duplicated (user, item) rows are split independently (with a warning); call
    :func:`deduplicate` first.
    """
    _require(df, ("user_id", "item_id"), "split_temporal")
    if "timestamp" not in df.columns:
        raise KeyError(f"split_temporal needs a 'timestamp' column, but the frame has "
                       f"{_show(list(df.columns), 20)}. Use split_random or "
                       f"split_leave_k_out(by='random') for data without timestamps.")
    if (last_n is None) == (time_cut is None):
        raise ValueError("Give exactly one of last_n= (per-user latest rows) and "
                         "time_cut= (global cut).")
    if last_n is not None:
        check_positive_int(last_n, "last_n")
        return _last_n_split(df, int(last_n), "split_temporal")
    _warn_duplicates(df, "split_temporal")
    try:
        test = (df["timestamp"] >= time_cut).to_numpy(dtype=bool)
    except TypeError as exc:
        raise TypeError(f"split_temporal: cannot compare timestamps of dtype "
                        f"{df['timestamp'].dtype} with time_cut={time_cut!r} ({exc}).") \
            from None
    return _split_by_mask(df, test)


# --------------------------------------------------------------------------------------
# Interactions
# --------------------------------------------------------------------------------------
def _id_array(values, what: str) -> np.ndarray:
    """Validate an id map: unique, all integers (-> int64) or all strings (-> object)."""
    arr = _as_id_array(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}.")
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64)
    elif arr.dtype.kind in "US":
        out = arr.astype(str).astype(object)
    else:
        try:
            kind = _ids_kind(arr.astype(object))
        except TypeError as exc:
            raise TypeError(f"{what} {exc}; ids must be all integers or all strings.") \
                from None
        if kind == "int":
            out = arr.astype(np.int64)
        elif kind == "str":
            out = arr.astype(object)
        else:
            f = arr.astype(np.float64)
            if not np.all(np.isfinite(f) & (f == np.round(f))):
                raise TypeError(f"{what} holds non-integer numbers; ids must be integers "
                                f"or strings.")
            out = f.astype(np.int64)
    if len(pd.unique(out)) != len(out):
        dup = pd.Series(out)[pd.Series(out).duplicated()].unique()
        raise ValueError(f"{what} contains repeated ids ({_show(dup)}); an id map must "
                         f"be unique.")
    return out


def _map_ids(values: pd.Series, given, what: str, role: str):
    """Return (codes, id array); codes are -1 for values not in ``given``."""
    if given is None:
        codes, uniques = pd.factorize(values, sort=True)
        uniques = np.asarray(uniques)
        ids = uniques.astype(np.int64) if uniques.dtype.kind in "iu" \
            else uniques.astype(object)
        return codes.astype(np.int64), ids
    ids = _id_array(given, what)
    return IdMap(ids).indexer(values), ids


class Interactions:
    """A user x item interaction matrix with two-way raw-id maps.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix
        ``float32`` of shape ``(n_users, n_items)`` with sorted column indices, one
        entry per (user, item) pair (the weights of duplicated pairs are **summed**) and
        no explicit zeros.
    user_ids, item_ids : numpy.ndarray
        Raw ids; ``user_ids[u]`` is the raw id of matrix row ``u``. ``int64`` when every
        id is an integer, ``object`` (Python ``str``) when every id is a string. Built
        from data, they are sorted, so the maps are deterministic.

    Use :meth:`from_frame` or :meth:`from_matrix` to build one; the constructor takes
    the already-validated pieces.
    """

    def __init__(self, matrix, user_ids, item_ids):
        matrix = _clean_csr(matrix)
        user_ids = _id_array(user_ids, "user_ids")
        item_ids = _id_array(item_ids, "item_ids")
        if matrix.shape != (len(user_ids), len(item_ids)):
            raise ValueError(f"matrix shape {matrix.shape} does not match "
                             f"{len(user_ids)} user ids and {len(item_ids)} item ids.")
        self.matrix = matrix
        self.user_ids = user_ids
        self.item_ids = item_ids
        self._user_index = None
        self._item_index = None

    # ---- constructors -----------------------------------------------------------
    @classmethod
    def from_frame(cls, df: pd.DataFrame, *, user_col: str = "user_id",
                   item_col: str = "item_id", weight_col: str | None = None,
                   user_ids=None, item_ids=None, unknown: str = "error") -> Interactions:
        """Build the matrix from a long DataFrame.

        Parameters
        ----------
        df : pandas.DataFrame
            One row per event. Not modified.
        user_col, item_col : str, default "user_id", "item_id"
            Id columns.
        weight_col : str, optional
            Column of weights (finite and > 0). ``None`` gives every row weight 1.
        user_ids, item_ids : array-like, optional
            Fixed id maps (e.g. ``train.user_ids`` to build a test matrix aligned with
            a training matrix); position = index. By default the maps are the sorted
            unique ids of ``df``.
        unknown : {"error", "drop"}, default "error"
            What to do with rows whose id is not in a given map: raise a
            :class:`KeyError` naming some of them, or drop them with a
            :class:`~warprec.exceptions.WarprecWarning` giving the count.

        Returns
        -------
        Interactions

        Notes
        -----
        Duplicated (user, item) rows are combined by **summing their weights** (with
        ``weight_col=None`` a pair seen twice gets weight 2). Use :func:`deduplicate`
        first for another rule. Mixed integer/string id columns raise a
        :class:`TypeError` (see the module docstring).

        Raises
        ------
        KeyError
            Missing columns; unknown ids with ``unknown="error"``.
        ValueError
            Missing ids; non-finite or non-positive weights (the message names rows).
        TypeError
            Mixed integer/string ids.
        """
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"from_frame expects a pandas DataFrame, got "
                            f"{type(df).__name__}.")
        if unknown not in ("error", "drop"):
            raise ValueError(f"unknown must be 'error' or 'drop', got {unknown!r}.")
        needed = [user_col, item_col] + ([weight_col] if weight_col is not None else [])
        missing = [c for c in needed if c not in df.columns]
        if missing:
            raise KeyError(
                f"Interactions.from_frame: column(s) {missing} not found; the frame has "
                f"{_show(list(df.columns), 20)}. Pass user_col=, item_col=, weight_col= "
                f"or convert it with standardize_frame first.")
        users = _normalize_ids(df[user_col], "user_id", "the DataFrame", None)
        items = _normalize_ids(df[item_col], "item_id", "the DataFrame", None)
        if weight_col is None:
            weights = np.ones(len(df), dtype=np.float64)
        else:
            w = df[weight_col]
            if not pd.api.types.is_numeric_dtype(w.dtype) or \
                    pd.api.types.is_bool_dtype(w.dtype):
                raise ValueError(f"weight column {weight_col!r} must be numeric, got "
                                 f"dtype {w.dtype}.")
            weights = w.to_numpy(dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(weights) | (weights <= 0))
            if bad.size:
                raise ValueError(
                    f"Weights must be finite and > 0, but {bad.size} rows are not "
                    f"({_show(weights[bad])} at {_rows(bad, None)}). Filter them out "
                    f"(e.g. positives(df, min_rating=...)) or transform the weights.")
        rows, uids = _map_ids(users, user_ids, "user_ids", "user")
        cols, iids = _map_ids(items, item_ids, "item_ids", "item")
        bad = (rows < 0) | (cols < 0)
        if bad.any():
            n_bad = int(bad.sum())
            if unknown == "error":
                parts = []
                if (rows < 0).any():
                    parts.append(f"user ids {_show(pd.unique(users.to_numpy()[rows < 0]))}")
                if (cols < 0).any():
                    parts.append(f"item ids {_show(pd.unique(items.to_numpy()[cols < 0]))}")
                raise KeyError(
                    f"{n_bad} rows have ids not in the given maps: {'; '.join(parts)}. "
                    f"They were not in the data the maps were built from; pass "
                    f"unknown='drop' to drop those rows.")
            warnings.warn(f"Interactions.from_frame dropped {n_bad} of {len(df)} rows "
                          f"whose user or item id is not in the given id maps.",
                          WarprecWarning, stacklevel=2)
            keep = ~bad
            rows, cols, weights = rows[keep], cols[keep], weights[keep]
        matrix = sp.csr_matrix((weights, (rows, cols)), shape=(len(uids), len(iids)),
                               dtype=np.float64)
        return cls(matrix, uids, iids)

    @classmethod
    def from_matrix(cls, X, user_ids=None, item_ids=None) -> Interactions:
        """Wrap an existing user x item matrix.

        Parameters
        ----------
        X : scipy.sparse matrix/array or array-like
            Shape ``(n_users, n_items)``; entries are weights (finite, >= 0; zeros are
            treated as absent and removed). Not modified.
        user_ids, item_ids : array-like, optional
            Raw ids of the rows / columns (unique); default ``0..n-1``.

        Returns
        -------
        Interactions
            ``matrix`` is a CSR ``float32`` copy; duplicate COO entries are summed.

        Raises
        ------
        ValueError
            Negative or non-finite entries, non-2-D input, id maps of the wrong length.
        """
        matrix = _clean_csr(X)
        n_users, n_items = matrix.shape
        uids = np.arange(n_users, dtype=np.int64) if user_ids is None else user_ids
        iids = np.arange(n_items, dtype=np.int64) if item_ids is None else item_ids
        return cls(matrix, uids, iids)

    # ---- properties ------------------------------------------------------------
    @property
    def n_users(self) -> int:
        """Number of users (matrix rows)."""
        return self.matrix.shape[0]

    @property
    def n_items(self) -> int:
        """Number of items (matrix columns)."""
        return self.matrix.shape[1]

    @property
    def nnz(self) -> int:
        """Number of stored (user, item) entries."""
        return int(self.matrix.nnz)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_users, n_items)``."""
        return self.matrix.shape

    def __repr__(self) -> str:
        return (f"Interactions(n_users={self.n_users}, n_items={self.n_items}, "
                f"nnz={self.nnz})")

    # ---- id lookups ---------------------------------------------------------------
    def user_index(self, raw_ids) -> np.ndarray:
        """Row indices of raw user ids.

        Parameters
        ----------
        raw_ids : scalar or array-like
            Raw user ids.

        Returns
        -------
        numpy.ndarray of int64
            Same shape as ``np.asarray(raw_ids)`` (0-d for a scalar).

        Raises
        ------
        KeyError
            Some ids are unknown (up to 5 are listed).
        """
        if self._user_index is None:
            self._user_index = IdMap(self.user_ids)
        return _lookup(self._user_index, raw_ids, "user")

    def item_index(self, raw_ids) -> np.ndarray:
        """Column indices of raw item ids; see :meth:`user_index`."""
        if self._item_index is None:
            self._item_index = IdMap(self.item_ids)
        return _lookup(self._item_index, raw_ids, "item")

    def to_frame(self) -> pd.DataFrame:
        """Long DataFrame of the stored entries.

        Returns
        -------
        pandas.DataFrame
            Columns ``user_id``, ``item_id`` (raw ids) and ``weight`` (``float32``), one
            row per stored entry in row-major order. ``Interactions.from_frame(df,
            weight_col="weight", user_ids=..., item_ids=...)`` rebuilds the same object.
        """
        coo = self.matrix.tocoo()
        return pd.DataFrame({"user_id": self.user_ids[coo.row],
                             "item_id": self.item_ids[coo.col],
                             "weight": coo.data.astype(np.float32)})


def _as_id_array(values) -> np.ndarray:
    """``np.asarray`` that keeps Python strings intact (no fixed-width unicode, which
    would drop trailing NUL characters)."""
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.to_numpy()
    if isinstance(values, np.ndarray):
        return values.astype(object) if values.dtype.kind in "US" else values
    arr = np.asarray(values)
    if arr.dtype.kind in "US":
        arr = np.asarray(values, dtype=object)
    return arr


def _lookup(id_map: IdMap, raw_ids, what: str) -> np.ndarray:
    arr = _as_id_array(raw_ids)
    flat = arr.reshape(-1)
    if flat.size == 0:
        return np.empty(arr.shape, dtype=np.int64)
    codes = id_map.indexer(flat)
    if (codes < 0).any():
        unknown = pd.unique(flat[codes < 0])
        raise KeyError(
            f"{len(unknown)} unknown {what} id(s): {_show(unknown)}; they were not in "
            f"the data this {what} map was built from ({len(id_map)} {what}s, e.g. "
            f"{_show(id_map.ids[:3].tolist(), 3)}).")
    return codes.reshape(arr.shape)


def _clean_csr(X) -> sp.csr_matrix:
    """CSR float32 copy with summed duplicates, sorted indices and no explicit zeros."""
    if sp.issparse(X):
        # values become float64 before duplicates are summed (int8 100 + 100 wraps)
        coo = sp.coo_matrix(X)
        m = sp.csr_matrix((coo.data.astype(np.float64), (coo.row, coo.col)), shape=coo.shape)
    else:
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"Expected a 2-D matrix of numbers (scipy.sparse or array-like), "
                            f"got {type(X).__name__} with non-numeric entries.") from None
        if arr.ndim != 2:
            raise ValueError(f"Expected a 2-D matrix, got shape {arr.shape}.")
        m = sp.csr_matrix(arr)
    m.sum_duplicates()
    data = m.data
    if data.size and (not np.all(np.isfinite(data)) or data.min() < 0):
        n_bad = int(np.sum(~np.isfinite(data) | (data < 0)))
        raise ValueError(f"Interaction weights must be finite and >= 0; {n_bad} entries "
                         f"are negative or not finite.")
    if data.size and data.max() > np.finfo(np.float32).max:
        raise ValueError(f"Interaction weights above {np.finfo(np.float32).max:.3g} overflow "
                         f"float32 to infinity; rescale them.")
    m = sp.csr_matrix(m, dtype=np.float32)
    m.eliminate_zeros()
    m.sort_indices()
    return m
