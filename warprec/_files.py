"""Opening the files warprec reads: path checks, transparent decompression, text
decoding and Parquet, each with an error message that says what is wrong.

Files ending in ``.gz``, ``.bz2``, ``.xz``/``.lzma`` or ``.zip`` (an archive of one
file) are decompressed on the fly; Parquet needs pyarrow (``pip install
'warprec[dask]'``).

Internal API (used by :mod:`warprec.readers` and :mod:`warprec.cli`): the constants
:data:`PARQUET_SUFFIXES`, :data:`SNIFF_BYTES`, :data:`COMPRESSED` and
:data:`DECOMPRESSION_ERRORS`, and :func:`check_path`, :func:`read_bytes`,
:func:`read_text`, :func:`read_parquet`, :func:`decompression_error` and
:func:`decode_error`. Not part of warprec's public API; may change without notice.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import zipfile
from pathlib import Path
from typing import IO

import pandas as pd

from ._messages import show

__all__ = ["COMPRESSED", "DECOMPRESSION_ERRORS", "PARQUET_SUFFIXES", "SNIFF_BYTES",
           "check_path", "decode_error", "decompression_error", "read_bytes",
           "read_parquet", "read_text"]

#: File (or dataset folder) suffixes read as Parquet.
PARQUET_SUFFIXES = (".parquet", ".pq")
#: How many (decompressed) bytes of a file are looked at to sniff its layout.
SNIFF_BYTES = 1 << 16
#: Suffixes of the files decompressed on the fly.
COMPRESSED = (".gz", ".bz2", ".xz", ".lzma", ".zip")
#: What reading a damaged compressed file raises.
DECOMPRESSION_ERRORS = (OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError)


def check_path(path: str | os.PathLike[str], allow_dir: bool = False) -> Path:
    """``path`` as an existing :class:`~pathlib.Path` (``~`` expanded).

    Raises TypeError for a non-path, FileNotFoundError for a missing path and
    ValueError for a directory unless ``allow_dir`` (naming the MovieLens files it holds).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"Expected a file path (str or os.PathLike), got "
                        f"{type(path).__name__}: {path!r:.80}.")
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"No such file: '{p}' (resolved to '{p.resolve()}')")
    if p.is_dir() and not allow_dir:
        known = [c for c in ("u.data", "ratings.dat", "ratings.csv", "movies.csv",
                             "u.item", "movies.dat") if (p / c).exists()]
        hint = f"; it contains {show(known)}" if known else ""
        raise ValueError(f"'{p}' is a directory, not a file{hint}. Pass the file path.")
    return p


def _open_bytes(path: Path) -> io.BufferedIOBase | IO[bytes]:
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
                f"the ratings file itself (found: {show(names)})")
        return archive.open(names[0])
    return open(path, "rb")


def read_bytes(path: Path, size: int = -1) -> bytes:
    """The (decompressed) bytes of ``path`` (the first ``size`` of them if ``size >= 0``),
    with a clear error for damaged archives."""
    try:
        with _open_bytes(path) as fh:
            return fh.read(size)
    except DECOMPRESSION_ERRORS as exc:
        if path.suffix.lower() not in COMPRESSED or isinstance(exc, PermissionError):
            raise
        raise decompression_error(path, exc) from None


def decompression_error(path: Path, exc: Exception) -> ValueError:
    """The error for a compressed file ``path`` that failed to decompress with ``exc``."""
    return ValueError(
        f"'{path}' could not be decompressed as {path.suffix.lower()[1:]} ({exc}); the file "
        f"is truncated, corrupted or not compressed. Re-download it, or rename it without "
        f"the {path.suffix!r} suffix if it is plain text.")


def decode_error(path: Path, enc: str, exc: UnicodeDecodeError) -> ValueError:
    """The error for a file ``path`` that is not valid text in the encoding ``enc``."""
    return ValueError(
        f"'{path}' is not valid {enc} text ({exc.reason} at byte {exc.start}). Pass the "
        f"file's encoding, e.g. read_ratings(path, encoding='latin-1') (MovieLens 100K "
        f"and 1M metadata files are latin-1).")


def read_text(p: Path, encoding: str | None, what: str) -> str:
    """A small metadata file's text (without a byte-order mark): UTF-8, else latin-1,
    unless ``encoding`` is given; clear errors for empty and binary files (``what``
    names the file's content in them, e.g. ``"titles"``)."""
    raw = read_bytes(p)
    if not raw.strip():
        raise ValueError(f"'{p}' is empty: there are no {what} to read.")
    if encoding is None and b"\x00" in raw[:SNIFF_BYTES]:
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
            raise decode_error(p, encoding, exc) from None
    return text.lstrip("\ufeff")


def read_parquet(p: Path) -> pd.DataFrame:
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
