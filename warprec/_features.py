"""Side features of users and items as sparse matrices with fixed columns.

A feature table is either a matrix (scipy.sparse or dense; one row per entity in the
model's index space, one column per feature, the values as weights) or a DataFrame with
an id column (``user_id`` / ``item_id``) and feature columns: a numeric column is one
feature whose value is the weight, any other column (strings, categories, booleans) is
one-hot encoded, one feature ``"column=value"`` per distinct value; a value holding
``"|"`` is a list of values (MovieLens' ``"Action|Comedy"`` genres), one feature each.
:class:`FeatureEncoder` learns the columns at fit time and encodes new rows the same way
later.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._inputs import IdMap
from .exceptions import WarprecWarning

if TYPE_CHECKING:
    from typing import Any, Literal, overload

    from numpy.typing import NDArray

    from ._typing import FeatureData, Int64Array

__all__ = ["FeatureEncoder"]


def _tokens(value: object) -> list[str]:
    """The categories of one cell: its text, or the parts of a ``"a|b"`` list."""
    text = str(value)
    return [part for part in text.split("|") if part] if "|" in text else [text]


def _is_numeric(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


class FeatureEncoder:
    """The feature columns of one side (``kind`` is ``"user"`` or ``"item"``).

    Attributes (after :meth:`fit`)
    ----------
    names_ : ndarray of str
        One name per feature column: ``"0", "1", ...`` for matrix input, ``"column"`` or
        ``"column=value"`` for a DataFrame's numeric or one-hot columns.
    spec_ : dict
        What :meth:`transform` needs (JSON-serialisable: saved with the model).
    """

    names_: NDArray[Any]
    spec_: dict[str, Any]

    def __init__(self, kind: Literal["user", "item"]) -> None:
        self.kind = kind
        self.id_column = f"{kind}_id"

    # ------------------------------------------------------------------ fit
    def fit(self, features: FeatureData, ids: NDArray[Any] | None,
            n_rows: int) -> sp.csr_matrix:
        """Learn the columns and encode ``features`` for the ``n_rows`` entities of the
        training data, whose raw ids are ``ids`` (None: indices). Returns the CSR matrix
        (float32, n_rows x n_features); entities without a row have no features."""
        if isinstance(features, pd.DataFrame):
            columns = [c for c in features.columns if c != self.id_column]
            if not columns:
                raise ValueError(f"{self.kind}_features has no feature column besides "
                                 f"{self.id_column!r}.")
            spec = []
            for column in columns:
                series = features[column]
                if _is_numeric(series):
                    spec.append(dict(column=str(column), numeric=True))
                else:
                    values = sorted({token for v in series.dropna() for token in _tokens(v)})
                    spec.append(dict(column=str(column), numeric=False, values=values))
            self.spec_ = dict(frame=True, columns=spec)
            matrix, rows = self._encode_frame(features, ids, n_rows, training=True)
            out = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, np.arange(len(rows)))),
                                shape=(n_rows, len(rows))) @ matrix
        else:
            out = self.as_matrix(features)
            if out.shape[0] != n_rows:
                raise ValueError(f"{self.kind}_features has {out.shape[0]} rows; it needs one "
                                 f"per {self.kind} of X ({n_rows}), in X's index space.")
            self.spec_ = dict(frame=False, width=int(out.shape[1]))
        self.names_ = self._names()
        return sp.csr_matrix(out, dtype=np.float32)

    def _names(self) -> NDArray[Any]:
        if not self.spec_["frame"]:
            return np.array([str(k) for k in range(self.spec_["width"])], dtype=object)
        names = []
        for col in self.spec_["columns"]:
            if col["numeric"]:
                names.append(col["column"])
            else:
                names += [f"{col['column']}={v}" for v in col["values"]]
        return np.array(names, dtype=object)

    @property
    def n_features_(self) -> int:
        return len(self.names_)

    # ------------------------------------------------------------------ transform
    def transform(self, features: FeatureData) -> tuple[sp.csr_matrix, NDArray[Any] | None]:
        """Encode rows of new (or known) entities with the fitted columns. Returns
        ``(matrix, ids)``: the CSR matrix (float32, n_rows x n_features) and, for a
        DataFrame, its id column (None for matrix input)."""
        if isinstance(features, pd.DataFrame):
            if not self.spec_["frame"]:
                raise TypeError(f"the model's {self.kind} features were a matrix; pass a "
                                f"matrix with {self.spec_['width']} columns.")
            if self.id_column not in features.columns:
                raise ValueError(f"{self.kind}_features needs a {self.id_column!r} column "
                                 f"(it labels the rows).")
            matrix, _ = self._encode_frame(features, None, None, training=False)
            return matrix, features[self.id_column].to_numpy()
        if self.spec_["frame"]:
            columns = ", ".join(c["column"] for c in self.spec_["columns"])
            raise TypeError(f"the model's {self.kind} features came from a DataFrame; pass a "
                            f"DataFrame with its columns ({columns}).")
        matrix = self.as_matrix(features)
        if matrix.shape[1] != self.spec_["width"]:
            raise ValueError(f"{self.kind}_features has {matrix.shape[1]} columns; the model "
                             f"was fit with {self.spec_['width']}.")
        return matrix, None

    # ------------------------------------------------------------------ helpers
    def as_matrix(self, features: FeatureData) -> sp.csr_matrix:
        """A feature matrix given as a matrix (sparse or dense 2-D), checked and in
        canonical CSR form (float32, finite, no explicit zeros, sorted indices); a
        TypeError for any other input (a DataFrame goes through :meth:`fit`)."""
        if sp.issparse(features) or (isinstance(features, np.ndarray) and features.ndim == 2):
            try:
                matrix = sp.csr_matrix(features, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{self.kind}_features must hold numbers: {exc}") from None
            if not np.isfinite(matrix.data).all():
                raise ValueError(f"{self.kind}_features holds NaN or infinite values.")
            matrix.sum_duplicates()
            matrix.eliminate_zeros()
            matrix.sort_indices()
            return matrix
        raise TypeError(f"{self.kind}_features must be a scipy.sparse matrix, a dense 2-D "
                        f"array or a DataFrame with a {self.id_column!r} column, not "
                        f"{type(features).__name__}.")

    if TYPE_CHECKING:  # the rows' indices come with training=True only
        @overload
        def _encode_frame(self, frame: pd.DataFrame, ids: NDArray[Any] | None, n_rows: int,
                          training: Literal[True]) -> tuple[sp.csr_matrix, Int64Array]: ...

        @overload
        def _encode_frame(self, frame: pd.DataFrame, ids: None, n_rows: None,
                          training: Literal[False]) -> tuple[sp.csr_matrix, None]: ...

    def _encode_frame(self, frame: pd.DataFrame, ids: NDArray[Any] | None, n_rows: int | None,
                      training: bool) -> tuple[sp.csr_matrix, Int64Array | None]:
        """(CSR of the frame's rows in frame order, the rows' entity indices or None)."""
        if self.id_column not in frame.columns:
            raise ValueError(f"{self.kind}_features needs a {self.id_column!r} column.")
        id_values = frame[self.id_column].to_numpy()
        rows = None
        if training:
            if frame[self.id_column].duplicated().any():
                dup = frame[self.id_column][frame[self.id_column].duplicated()].iloc[0]
                raise ValueError(f"{self.kind}_features has several rows for {self.kind} "
                                 f"{dup!r}; give one row per {self.kind}.")
            if ids is None:
                rows = pd.to_numeric(pd.Series(id_values), errors="coerce").to_numpy()
                bad = ~np.isfinite(rows) | (rows < 0) | (rows >= n_rows) | (rows % 1 != 0)
            else:
                rows = IdMap(ids).indexer(id_values).astype(float)
                bad = rows < 0
            if bad.any():
                first = id_values[np.flatnonzero(bad)[0]]
                first = first.item() if hasattr(first, "item") else first
                entity = "an item" if self.kind == "item" else "a user"
                warnings.warn(f"{self.kind}_features has {int(bad.sum())} rows whose "
                              f"{self.id_column} is not {entity} of X (first: "
                              f"{first!r}); they are left out of "
                              f"the fit (nothing to learn from). Pass them to recommend or "
                              f"{self.kind}_embeddings as {self.kind}_features to use them.",
                              WarprecWarning, stacklevel=5)
                frame = frame[~bad]
                id_values, rows = id_values[~bad], rows[~bad]
            rows = rows.astype(np.int64)
        blocks, unseen = [], {}
        for col in self.spec_["columns"]:
            name = col["column"]
            if name not in frame.columns:
                raise ValueError(f"{self.kind}_features lacks the column {name!r} the model "
                                 f"was fit with.")
            series = frame[name]
            if col["numeric"]:
                values = pd.to_numeric(series, errors="coerce").to_numpy(np.float64)
                if not np.isfinite(values).all():
                    raise ValueError(f"{self.kind}_features column {name!r} needs finite "
                                     f"numbers (found NaN, inf or text); fill it first.")
                blocks.append(sp.csr_matrix(values.reshape(-1, 1)))
            else:
                position = {v: k for k, v in enumerate(col["values"])}
                hit_rows, hit_cols, missed = [], [], set()
                for r, value in enumerate(series):
                    if pd.isna(value):
                        continue
                    for token in _tokens(value):
                        if token in position:
                            hit_rows.append(r)
                            hit_cols.append(position[token])
                        else:
                            missed.add(token)
                if missed:
                    unseen[name] = sorted(missed)[:5]
                blocks.append(sp.csr_matrix((np.ones(len(hit_rows)), (hit_rows, hit_cols)),
                                            shape=(len(frame), len(col["values"]))))
        if unseen:
            detail = "; ".join(f"{c}: {', '.join(v)}" for c, v in unseen.items())
            warnings.warn(f"{self.kind}_features has values the model was not fit with, "
                          f"which have no embedding and are left out ({detail}).",
                          WarprecWarning, stacklevel=4)
        matrix = sp.hstack(blocks, format="csr", dtype=np.float32)
        matrix.eliminate_zeros()
        return matrix, rows

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> str:
        return json.dumps(dict(kind=self.kind, spec=self.spec_))

    @classmethod
    def from_json(cls, text: str) -> FeatureEncoder:
        data = json.loads(text)
        encoder = cls(data["kind"])
        encoder.spec_ = data["spec"]
        encoder.names_ = encoder._names()
        return encoder
