"""Reading interaction and metadata files into canonical frames.

:func:`read_ratings` recognises every MovieLens layout and any delimited or Parquet
file of interactions by sniffing it (separator, header line, column names);
:func:`read_interaction_lists` reads the ``user item item ...`` lists of the LightGCN /
KGAT benchmarks; :func:`read_item_titles` and :func:`read_features` read item titles and
side features. Compressed files (``.gz``, ``.bz2``, ``.xz``, single-file ``.zip``) are
read transparently. The frames follow :mod:`warprec.data`'s id rules; duplicated rows
are kept as read.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Hashable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ._columns import ALIASES, find_column, norm_name, standardize
from ._files import (COMPRESSED, DECOMPRESSION_ERRORS, PARQUET_SUFFIXES, SNIFF_BYTES,
                     check_path, decode_error, decompression_error, read_bytes, read_parquet,
                     read_text)
from ._messages import show
from .frames import standardize_frame

__all__ = ["read_features", "read_interaction_lists", "read_item_titles", "read_ratings"]

#: The ``format=`` choices of :func:`read_ratings` and the layout each one means.
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


def read_ratings(path: str | os.PathLike[str] | pd.DataFrame, *, format: str = "auto",
                 sep: str | None = None,
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
        :func:`~warprec.frames.standardize_frame`.
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
        ``timestamp``; other columns are dropped. Ids are kept as read (see
        :mod:`warprec.data`). Row order is the file's. **Duplicated (user, item) rows are kept as
        read**; resolve them with :func:`~warprec.frames.deduplicate`.

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
    p = check_path(path, allow_dir=True)
    if _is_parquet(p, kind):
        return standardize(read_parquet(p), cols, source=f"'{p}'", header=None)
    p = check_path(path)  # a folder that holds no Parquet files: the usual error
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
        raise decode_error(p, enc, exc) from None
    except pd.errors.ParserError as exc:
        raise ValueError(
            f"Could not parse '{p}' with separator {sep!r}: {str(exc).strip()}. Some "
            f"lines have a different number of fields; fix those lines or pass the "
            f"right sep=.") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"'{p}' has no data rows.") from None
    except DECOMPRESSION_ERRORS as exc:
        if p.suffix.lower() not in COMPRESSED or isinstance(exc, PermissionError):
            raise
        raise decompression_error(p, exc) from None
    return standardize(frame, cols, source=f"'{p}'", header=header)


def read_interaction_lists(path: str | os.PathLike[str], *,
                           encoding: str = "utf-8") -> pd.DataFrame:
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
        see :func:`~warprec.frames.deduplicate`).

    Raises
    ------
    ValueError
        A token is not a non-negative integer (the message names the line), or the
        file holds no line at all.
    """
    p = check_path(path)
    try:
        text = read_bytes(p).decode(encoding)
    except UnicodeDecodeError as exc:
        raise decode_error(p, encoding, exc) from None
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


def read_item_titles(path: str | os.PathLike[str], *,
                     encoding: str | None = None) -> pd.Series:
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
    p = check_path(path)
    text = read_text(p, encoding, "titles")
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


def read_features(path: str | os.PathLike[str], kind: str = "item", *,
                  columns: Iterable[str] | None = None,
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
    p = check_path(path)
    text = read_text(p, encoding, "features")
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"Could not parse the features file '{p}': {str(exc).strip()}.") \
            from None
    role = f"{kind}_id"
    names = {norm_name(c): c for c in frame.columns}
    id_col = next((names[a] for a in (norm_name(role),) + ALIASES[role] if a in names),
                  None)
    if id_col is None:
        raise KeyError(f"'{p}' has no {kind} id column (looked for {role} and "
                       f"{', '.join(ALIASES[role])}; columns: {show(frame.columns)}).")
    keep = ([c for c in frame.columns if c != id_col and norm_name(c) != "title"]
            if columns is None else list(columns))
    missing = [c for c in keep if c not in frame.columns]
    if missing:
        raise KeyError(f"'{p}' has no column {show(missing)} (columns: "
                       f"{show(frame.columns)}).")
    if not keep:
        raise ValueError(f"'{p}' has no feature column besides its id and title.")
    ids: pd.Series = frame[id_col].str.strip()
    numeric = pd.to_numeric(ids, errors="coerce")
    if numeric.notna().all() and (numeric == np.round(numeric)).all():
        ids = numeric.astype(np.int64)
    out = pd.DataFrame({role: ids.to_numpy()})
    for c in keep:
        values = frame[c]
        as_number = pd.to_numeric(values, errors="coerce")
        out[c] = as_number if as_number.notna().all() else values.to_numpy(dtype=object)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text.strip().strip("\"'"))
    except ValueError:
        return False
    return True


def _sniff_lines(path: Path, encoding: str | None, n_lines: int = 50) -> list[str]:
    """First non-blank lines of a text file, with clear errors for binary/undecodable files."""
    raw = read_bytes(path, SNIFF_BYTES)
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
        if len(raw) == SNIFF_BYTES and exc.start >= len(raw) - 4:
            text = raw[:exc.start].decode(enc)  # a multi-byte character cut by the sniff
        else:
            raise decode_error(path, enc, exc) from None
    except LookupError:
        raise ValueError(f"Unknown encoding {encoding!r} given for '{path}'.") from None
    lines = text.lstrip("\ufeff").splitlines()
    if len(raw) == SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut in the middle
    lines = [ln for ln in lines if ln.strip()][:n_lines]
    if not lines:  # e.g. only a byte order mark
        raise ValueError(f"'{path}' is empty: there are no ratings to read.")
    return lines


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
    if any(norm_name(f) in names for f in first for names in ALIASES.values()):
        return True
    if all(_is_number(f) for f in first):
        return False
    if len(lines) == 1:
        return True
    second = _split_line(lines[1], sep)
    # a text field above a numeric field in the same column: a header line
    return any(not _is_number(a) and _is_number(b) for a, b in zip(first, second))


def _is_parquet(p: Path, kind: str) -> bool:
    """Whether to read ``p`` as Parquet: asked for, named ``*.parquet`` / ``*.pq``, a
    folder holding such files (a Parquet dataset), or a file starting with ``PAR1``."""
    if kind == "parquet" or p.suffix.lower() in PARQUET_SUFFIXES:
        return True
    if kind != "auto":
        return False
    if p.is_dir():
        return any(child.suffix.lower() in PARQUET_SUFFIXES for child in p.iterdir())
    if p.suffix.lower() in COMPRESSED:
        return False
    with open(p, "rb") as fh:
        return fh.read(4) == b"PAR1"


def _read_delimited(p: Path, sep: str, header: bool, enc: str) -> pd.DataFrame:
    head = 0 if header else None
    if sep == "::":
        # "::" is read as ":" by the fast C parser; fields then sit at even positions
        # and the odd positions are empty. Fall back to the slow parser if a field
        # itself contains ":".
        try:
            raw = pd.read_csv(p, sep=":", header=head, encoding=enc, low_memory=False)
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
        return pd.read_csv(p, sep="::", engine="python", header=head, encoding=enc)
    if len(sep) > 1 and sep != r"\s+":
        return pd.read_csv(p, sep=sep, engine="python", header=head, encoding=enc)
    return pd.read_csv(p, sep=sep, header=head, encoding=enc, low_memory=False)


def _parse_titles(p: Path, text: str, lines: list[str],
                  first: str) -> tuple[pd.Series, list[Hashable]]:
    """(ids, titles) of a titles file in one of the layouts of :func:`read_item_titles`."""
    if "::" in first:
        start = 0 if _is_number(first.split("::")[0]) else 1
        ids: list[str] = []
        titles: list[Hashable] = []
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
        id_col = find_column(frame, "item_id", None, False, f"'{p}'")
        title_cols = [c for c in frame.columns if norm_name(c) in ("title", "name",
                                                                  "movietitle", "itemtitle")]
        if not title_cols:
            raise KeyError(f"No title column in '{p}'. Columns found: "
                           f"{show(list(frame.columns), 20)}; expected 'title'.")
        ids_s, titles = frame[id_col], frame[title_cols[0]].tolist()
    return ids_s, titles
