"""Approximate top-k over a fitted model's items: HNSW graphs of the optional ``usearch``.

Two kinds of index, each built once over the item side and kept by the model:

* ``"recommend"``: maximum inner product. Item ``i`` is stored as ``[V_i, b_i]`` and a
  user is queried as ``[U_u, 1]``, so the inner product is the model's score
  ``<U_u, V_i> + b_i``, bias included. The graph only proposes candidates; their
  scores are recomputed exactly from the float32 factors (so the index may hold the
  vectors in half precision), and the best ``k`` of them are returned.
* ``"similar_items"``: cosine similarity of the item factors (``similar_items``).

Items a user must not get (seen items, ``filter_items``, items outside ``items``) are
removed from an over-fetched candidate list: ``k`` plus the number of items the user
must not get. A user whose list would be longer than :data:`MAX_FETCH`, or whose
filtered candidates fall short of ``k`` eligible items, is scored exactly instead.

The index is the library's own binary format, held as bytes in the model file (no
pickle). References: Malkov and Yashunin, "Efficient and robust approximate nearest
neighbor search using Hierarchical Navigable Small World graphs" (IEEE TPAMI 2020),
section 4; the bias as an extra coordinate: Bachrach et al., "Speeding up the Xbox
recommender system using a Euclidean transformation for inner-product spaces" (RecSys
2014), section 3.
"""

from __future__ import annotations

import json
import numbers
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ._inputs import Interval, validate_param

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from numpy.typing import NDArray

    from ._typing import Float32Array, Int32Array

    IndexKind = Literal["recommend", "similar_items"]

__all__ = ["INSTALL_HINT", "KINDS", "MAX_FETCH", "IndexParams", "ItemIndex", "load_library",
           "top_k"]

#: How to install the optional library, quoted by every error that needs it.
INSTALL_HINT = "pip install 'warprec[ann]' (or pip install usearch)"
#: The kinds of index a model can hold.
KINDS = ("recommend", "similar_items")
#: Longest candidate list asked of the index for one user; users needing more (many seen
#: or filtered items) are scored exactly.
MAX_FETCH = 4096


def load_library() -> Any:
    """``usearch.index``, or an ImportError that says how to install it."""
    try:
        from usearch import index
    except ImportError as exc:
        raise ImportError(f"approximate top-k needs the optional library usearch: "
                          f"{INSTALL_HINT}.") from exc
    return index


@dataclass(frozen=True)
class IndexParams:
    """The HNSW graph's settings (usearch's names; the paper's ``M``, ``efConstruction``
    and ``ef``). ``expansion_search`` is raised to the candidate count when a query asks
    for more."""

    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 64

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            validate_param(name, value, [Interval(numbers.Integral, 2, None)])


class ItemIndex:
    """One HNSW index over a model's items (see the module docstring for the kinds)."""

    def __init__(self, kind: IndexKind, index: Any, params: IndexParams, n_items: int,
                 n_components: int) -> None:
        self.kind, self.index, self.params = kind, index, params
        self.n_items, self.n_components = n_items, n_components

    @classmethod
    def build(cls, kind: IndexKind, item_factors: Float32Array, item_biases: Float32Array,
              params: IndexParams, n_threads: int | None) -> ItemIndex:
        library = load_library()
        n, d = item_factors.shape
        vectors = _item_vectors(kind, item_factors, item_biases)
        index = library.Index(ndim=vectors.shape[1], metric="ip" if kind == "recommend"
                              else "cos", dtype="f16", connectivity=params.connectivity,
                              expansion_add=params.expansion_add,
                              expansion_search=params.expansion_search)
        if n:
            index.add(np.arange(n, dtype=np.uint64), vectors, threads=_threads(n_threads))
        return cls(kind, index, params, n, d)

    def candidates(self, queries: Float32Array, count: int, n_threads: int | None,
                   ) -> NDArray[np.int64]:
        """The ``count`` (at most) best items of each query row by the index, shape
        ``(n_queries, count)``, -1 in unfilled slots. ``queries`` are user factors
        (``"recommend"``) or item factors (``"similar_items"``)."""
        out = np.full((queries.shape[0], count), -1, dtype=np.int64)
        if not queries.shape[0] or not self.n_items:
            return out
        if self.kind == "recommend":
            queries = np.hstack([queries, np.ones((queries.shape[0], 1), np.float32)])
        index = self.index
        index.expansion_search = max(self.params.expansion_search, count)
        matches = index.search(np.ascontiguousarray(queries, dtype=np.float32), count,
                               threads=_threads(n_threads))
        if hasattr(matches, "counts"):   # BatchMatches: rows padded beyond their counts
            keys = np.asarray(matches.keys, dtype=np.int64).reshape(queries.shape[0], -1)
            counts = np.asarray(matches.counts).reshape(-1)
        else:                            # Matches (one query): the keys found
            keys = np.asarray(matches.keys, dtype=np.int64).reshape(1, -1)
            counts = np.array([keys.shape[1]])
        filled = np.arange(keys.shape[1])[None, :] < counts[:, None]
        out[:, :keys.shape[1]] = np.where(filled, keys, -1)
        return out

    # ------------------------------------------------------------------ persistence
    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The index as model-file arrays: its bytes (usearch's format) and a JSON header."""
        meta = dict(kind=self.kind, library="usearch", n_items=self.n_items,
                    n_components=self.n_components, **asdict(self.params))
        return {f"{prefix}_bytes": np.frombuffer(bytes(self.index.save()), dtype=np.uint8),
                f"{prefix}_meta": np.array(json.dumps(meta))}

    @classmethod
    def from_arrays(cls, prefix: str, data: dict[str, np.ndarray], n_items: int,
                    n_components: int) -> ItemIndex:
        """Rebuild an index written by :meth:`to_arrays` (ValueError if it does not fit
        the model's items)."""
        library = load_library()
        meta = json.loads(str(data[f"{prefix}_meta"]))
        if (meta.get("library") != "usearch" or meta.get("kind") not in KINDS
                or meta.get("n_items") != n_items or meta.get("n_components") != n_components):
            raise ValueError(f"the saved {prefix} does not match the model's items "
                             f"({n_items} x {n_components}): {meta}")
        index = library.Index.restore(data[f"{prefix}_bytes"].tobytes())
        if index is None or len(index) != n_items:
            raise ValueError(f"the saved {prefix} is unreadable or holds "
                             f"{0 if index is None else len(index)} items, not {n_items}")
        params = IndexParams(meta["connectivity"], meta["expansion_add"],
                             meta["expansion_search"])
        return cls(meta["kind"], index, params, n_items, n_components)


def _item_vectors(kind: IndexKind, item_factors: Float32Array,
                  item_biases: Float32Array) -> Float32Array:
    if kind == "recommend":
        return np.hstack([item_factors, item_biases[:, None]]).astype(np.float32)
    return np.ascontiguousarray(item_factors, dtype=np.float32)


def _threads(n_threads: int | None) -> int:
    return 0 if n_threads is None else int(n_threads)   # usearch: 0 = every core


def top_k(index: ItemIndex, queries: Float32Array, item_factors: Float32Array,
          item_biases: Float32Array, excluded: sp.csr_matrix | None,
          allowed: NDArray[np.bool_] | None, k: int, n_threads: int | None,
          exact: Callable[[NDArray[np.int64]], tuple[Int32Array, Float32Array]],
          ) -> tuple[Int32Array, Float32Array]:
    """Best ``k`` items of every query row: candidates from ``index``, exact scores.

    ``queries`` holds one user vector (or, for ``"similar_items"``, one unit item vector)
    per row; ``excluded`` one row per query of items never to return; ``allowed`` the
    items that may be returned (None: all). The score of a candidate is
    ``queries[r] . item_factors[i] + item_biases[i]`` in float32; ties go to the lower
    item index. Rows whose candidate list would exceed :data:`MAX_FETCH`, or which end
    up with fewer than ``min(k, n_items)`` eligible candidates, get ``exact(rows)``
    instead (the exact top-k of those rows). Returns ``(items, scores)`` like
    :func:`warprec.scoring.topk_items`: int32 indices and float32 scores, shape
    ``(n_queries, min(k, n_items))``, -1 and -inf in unfilled slots.
    """
    n, n_items = queries.shape[0], item_factors.shape[0]
    k_eff = min(k, n_items)
    out_items = np.full((n, k_eff), -1, dtype=np.int32)
    out_scores = np.full((n, k_eff), -np.inf, dtype=np.float32)
    n_excluded = (np.zeros(n, np.int64) if excluded is None
                  else np.diff(excluded.indptr).astype(np.int64))
    n_disallowed = 0 if allowed is None else int(n_items - np.count_nonzero(allowed))
    fetch = k_eff + n_excluded + n_disallowed
    short = fetch > min(MAX_FETCH, n_items)
    rows = np.flatnonzero(~short)
    # one search per power-of-two candidate count: users with few seen items do not pay
    # for the heavy ones
    buckets = np.maximum(k_eff, 2 ** np.ceil(np.log2(np.maximum(fetch[rows], 1))).astype(
        np.int64))
    for count in np.unique(buckets):
        group = rows[buckets == count]
        count = int(min(count, n_items))
        candidates = index.candidates(queries[group], count, n_threads)
        valid = candidates >= 0
        safe = np.where(valid, candidates, 0)
        if allowed is not None:
            valid &= allowed[safe]
        if excluded is not None:
            valid &= ~_stored(excluded[group], safe)
        scores = (np.einsum("rd,rcd->rc", queries[group], item_factors[safe],
                            dtype=np.float32) + item_biases[safe])
        scores = np.where(valid & ~np.isnan(scores), scores, -np.inf).astype(np.float32)
        # best first, ties to the lower index: sort by (-score, item)
        order = np.lexsort((safe, -scores), axis=-1)[:, :k_eff]
        top_scores = np.take_along_axis(scores, order, axis=1)
        top_items = np.take_along_axis(safe, order, axis=1)
        complete = (top_scores > -np.inf).all(axis=1)
        out_items[group[complete]] = top_items[complete]
        out_scores[group[complete]] = top_scores[complete]
        short[group[~complete]] = True
    redo = np.flatnonzero(short)
    if redo.size:
        out_items[redo], out_scores[redo] = exact(redo)
    return out_items, out_scores


def _stored(matrix: sp.csr_matrix, columns: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Whether ``matrix[r, columns[r, c]]`` is a stored entry, for every ``(r, c)``."""
    n_cols = matrix.shape[1]
    rows = np.repeat(np.arange(matrix.shape[0], dtype=np.int64), np.diff(matrix.indptr))
    keys = np.sort(rows * n_cols + matrix.indices.astype(np.int64))
    query = np.arange(columns.shape[0], dtype=np.int64)[:, None] * n_cols + columns
    if not keys.size:
        return np.zeros(columns.shape, dtype=bool)
    at = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    return keys[at] == query
