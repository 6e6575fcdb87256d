"""Inference shared by every model that scores with ``<U_u, V_i> + b_i``.

:class:`FactorRecommender` holds the fitted arrays (``user_factors_``, ``item_factors_``,
``item_biases_``, id maps, ``train_matrix_``) and provides ``predict``, ``recommend``,
``similar_items``, ``score`` (NDCG@10, scikit-learn's convention) and the glue
:func:`warprec.metrics.evaluate` calls. Subclasses only implement ``fit``.
"""

from __future__ import annotations

import numbers
import warnings
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from . import _ann
from ._inputs import (ON_UNKNOWN, IdMap, Options, as_interaction_matrix, check_k,
                      lookup_ids, validate_param)
from ._kernels.scores import score_bound
from .exceptions import NotFittedError, WarprecWarning

if TYPE_CHECKING:
    from typing import Any, Literal, overload

    import pandas as pd
    from numpy.typing import ArrayLike, NDArray
    from typing_extensions import TypeIs

    from ._typing import (Float32Array, FeatureData, Int64Array, InteractionData,
                          OnUnknown, UserItems)
    from .data import Interactions

__all__ = ["FactorRecommender", "UnknownUsers", "fit_input", "raw_ids",
           "report_unknown_test_users", "top_frame", "training_frame", "warn_if_explicit"]

_F32_MAX = float(np.finfo(np.float32).max)


class FactorRecommender:
    """Base class of fitted factor models (see :class:`warprec.WARPFactorizer`)."""

    n_threads: int | None = None
    #: Internal API: whether ``recommend`` warns about the unknown users it skips or
    #: serves popular items (warprec.dask's workers do not: its client warns once).
    reports_unknown_users: bool = True

    # the fitted state (set by ``fit``; annotations only: unfitted models lack them)
    user_factors_: Float32Array
    item_factors_: Float32Array
    item_biases_: Float32Array
    user_ids_: NDArray[Any] | None
    item_ids_: NDArray[Any] | None
    train_matrix_: sp.csr_matrix

    if TYPE_CHECKING:  # implemented by every subclass
        def fold_in(self, user_items: UserItems, *, epochs: int | None = None,
                    user_col: str | int | None = None, item_col: str | int | None = None,
                    on_unknown: Literal["error", "skip"] = "error") -> Float32Array:
            ...

    def _parameters_finite(self) -> bool:
        return bool(np.isfinite(self.user_factors_).all() and np.isfinite(self.item_factors_).all()
                    and np.isfinite(self.item_biases_).all())

    def _score_bound(self) -> float:
        """An upper bound on ``|f(u, i)|`` over all pairs: ``d max|U| max|V| + max|b|``.

        Scores are float32; once this bound reaches float32's maximum, some scores may
        overflow to +-inf (or NaN) even though every parameter is finite.
        """
        # one compiled pass per array (the fitted arrays are float32 and contiguous: no
        # copies); values beyond float32's range become inf here, as in scoring
        U, V, b = (np.ascontiguousarray(a, dtype=np.float32)
                   for a in (self.user_factors_, self.item_factors_, self.item_biases_))
        return float(score_bound(U, V, b))

    def _parameters_usable(self) -> bool:
        """Finite parameters whose float32 scores cannot overflow.

        The bound alone decides: a NaN parameter makes it NaN and an infinite one makes it
        inf or NaN, and neither compares below float32's maximum (no separate isfinite
        pass over the arrays, which this check runs after every epoch).
        """
        return self._score_bound() < _F32_MAX

    # ------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        if not hasattr(self, "user_factors_"):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet: call fit(X) "
                                 "first.")

    @property
    def n_users_(self) -> int:
        """Number of users the model knows."""
        self._check_fitted()
        return self.user_factors_.shape[0]

    @property
    def n_items_(self) -> int:
        """Number of items the model knows."""
        self._check_fitted()
        return self.item_factors_.shape[0]

    def _user_index(self, users: object) -> Int64Array:
        return lookup_ids(users, self._id_map("user"), "user", self.n_users_)

    def _item_index(self, items: object) -> Int64Array:
        return lookup_ids(items, self._id_map("item"), "item", self.n_items_)

    def _id_map(self, kind: Literal["user", "item"]) -> IdMap | None:
        ids = self.user_ids_ if kind == "user" else self.item_ids_
        if ids is None:
            return None
        # cached per id array: a refit (or load) installs a new array and a new map
        cache = f"_{kind}_map"
        cached = self.__dict__.get(cache)
        if cached is None or cached[0] is not ids:
            cached = (ids, IdMap(ids))
            self.__dict__[cache] = cached
        return cached[1]

    def _raw_items(self, index: NDArray[np.integer[Any]]) -> NDArray[Any]:
        """Map item indices (-1 = no item) to raw ids (fill: -1 numeric, None otherwise)."""
        return raw_ids(index, self.item_ids_)

    def predict(self, user_ids: ArrayLike | None = None, item_ids: ArrayLike | None = None, *,
                user_features: FeatureData | None = None,
                item_features: FeatureData | None = None) -> Float32Array:
        """Scores ``f(u, i)`` of (user, item) pairs.

        Parameters
        ----------
        user_ids, item_ids : scalar or 1-D array_like
            Raw ids (or indices for a model fit on a matrix); broadcast against each other.
        user_features, item_features : optional
            Instead of ids: feature rows (one per user / item, in the form the model was
            fit with), for users or items the model has not seen.

        Returns
        -------
        ndarray of float32
            One score per pair (a 0-d result becomes a 1-element array).

        Raises
        ------
        KeyError
            An id was not seen at fit time.
        """
        self._check_fitted()
        if user_features is not None:
            if user_ids is not None:
                raise ValueError("pass user_ids or user_features, not both.")
            U = self._embed_features("user", user_features)[0]
            u: NDArray[np.integer[Any]] = np.arange(U.shape[0])
        else:
            U, u = self.user_factors_, self._user_index(user_ids)
        if item_features is not None:
            if item_ids is not None:
                raise ValueError("pass item_ids or item_features, not both.")
            V, b = self._embed_features("item", item_features)[:2]
            i: NDArray[np.integer[Any]] = np.arange(V.shape[0])
        else:
            V, b, i = self.item_factors_, self.item_biases_, self._item_index(item_ids)
        if u.size != i.size and u.size != 1 and i.size != 1:
            raise ValueError(f"user_ids ({u.size}) and item_ids ({i.size}) must have the same "
                             "length (or one of them a single id).")
        u, i = np.broadcast_arrays(u, i)
        scores = np.einsum("ij,ij->i", U[np.atleast_1d(u)], V[np.atleast_1d(i)],
                           dtype=np.float32)
        return scores + b[np.atleast_1d(i)]

    if TYPE_CHECKING:  # the return type follows as_frame
        @overload
        def recommend(self, users: ArrayLike, k: int = 10, exclude_seen: bool = True,
                      filter_items: ArrayLike | None = None, *,
                      user_items: UserItems | None = None,
                      recalculate_user: bool = False, user_features: FeatureData | None = None,
                      item_features: FeatureData | None = None, items: ArrayLike | None = None,
                      as_frame: Literal[False] = False, n_threads: int | None = None,
                      on_unknown: OnUnknown = "error", approximate: bool = False,
                      ) -> tuple[NDArray[Any], Float32Array]: ...

        @overload
        def recommend(self, users: ArrayLike, k: int = 10, exclude_seen: bool = True,
                      filter_items: ArrayLike | None = None, *,
                      user_items: UserItems | None = None,
                      recalculate_user: bool = False, user_features: FeatureData | None = None,
                      item_features: FeatureData | None = None, items: ArrayLike | None = None,
                      as_frame: Literal[True], n_threads: int | None = None,
                      on_unknown: OnUnknown = "error",
                      approximate: bool = False) -> pd.DataFrame: ...

        @overload
        def recommend(self, users: ArrayLike, k: int = 10, exclude_seen: bool = True,
                      filter_items: ArrayLike | None = None, *,
                      user_items: UserItems | None = None,
                      recalculate_user: bool = False, user_features: FeatureData | None = None,
                      item_features: FeatureData | None = None, items: ArrayLike | None = None,
                      as_frame: bool = False, n_threads: int | None = None,
                      on_unknown: OnUnknown = "error", approximate: bool = False,
                      ) -> tuple[NDArray[Any], Float32Array] | pd.DataFrame: ...

    def recommend(self, users: ArrayLike, k: int = 10, exclude_seen: bool = True,
                  filter_items: ArrayLike | None = None, *,
                  user_items: UserItems | None = None,
                  recalculate_user: bool = False, user_features: FeatureData | None = None,
                  item_features: FeatureData | None = None, items: ArrayLike | None = None,
                  as_frame: bool = False, n_threads: int | None = None,
                  on_unknown: OnUnknown = "error", approximate: bool = False,
                  ) -> tuple[NDArray[Any], Float32Array] | pd.DataFrame:
        """Top-k items for one user or a batch of users.

        Parameters
        ----------
        users : scalar or 1-D array_like
            Raw user id(s) (indices for a model fit on a matrix). With
            ``recalculate_user`` or ``user_features`` they only label the output and
            may be ids the model has never seen.
        k : int, default 10
            Number of items per user. Values above the number of items are clipped to it.
        exclude_seen : bool, default True
            Leave out the user's known positives: those of ``user_items`` if given, else
            those of the matrix the model was fit on (for known users and items).
        filter_items : array_like, optional
            Items never to recommend (raw ids / indices), as in implicit.
        user_items : scipy.sparse matrix or list of lists, optional
            One row per requested user (implicit's convention) over the candidate items
            (the model's, or the rows of ``item_features``), whose stored entries are
            excluded instead of the training positives; or, over the model's items, one
            list of raw item ids per requested user (see :meth:`user_item_rows`).
        recalculate_user : bool, default False
            Compute each user's embedding from its row of ``user_items`` with the items
            held fixed (:meth:`fold_in`) instead of looking it up, for example for users
            who signed up after training. Needs ``user_items``.
        user_features : optional
            Feature rows of the requested users (one per user, in order), in the form the
            model was fit with (see ``WARPFactorizer.fit``): their embeddings come from
            their features (:meth:`user_embeddings`), e.g. for new users.
        item_features : optional
            Feature rows of the candidate items, in the form the model was fit with:
            rank the items they describe (a catalogue that may include items unseen at
            fit) instead of the model's items. The returned items are the rows' item ids
            (a DataFrame's ``item_id`` column; row indices for a matrix).
        items : array_like, optional
            Restrict the candidates to these items.
        as_frame : bool, default False
            Return a pandas DataFrame with columns ``user_id, item_id, score, rank``
            (rank 1 = best; one row per filled slot) instead of the two arrays; with
            ``on_unknown="popular"`` also a boolean column ``fallback``, True on the rows
            of the users who got the most popular items.
        n_threads : int, optional
            Threads for scoring (default: the model's ``n_threads``).
        on_unknown : {"error", "skip", "popular"}, default "error"
            What to do with requested users the model was not fit on (unseen raw ids;
            out-of-range indices for a model fit on a matrix), in the spirit of
            scikit-learn's ``handle_unknown``. ``"error"``: a KeyError naming them.
            ``"skip"``: they get no recommendations (their slots are unfilled, so the
            frame has no rows for them) and a
            :class:`~warprec.exceptions.WarprecWarning` says how many there were.
            ``"popular"``: they get the candidates with the most training positives
            (:attr:`item_popularity_`; the score is that count, ties broken by lower
            item index), subject to ``items``, ``filter_items`` and their row of
            ``user_items`` if given, but not to the training positives (the model knows
            no history of theirs); a WarprecWarning says how many, and the frame marks
            their rows in its ``fallback`` column. It applies only where users are looked
            up: with ``recalculate_user`` or ``user_features`` every user has an
            embedding.
        approximate : bool, default False
            Take each user's candidates from an HNSW index over the items (built on
            first use, or by :meth:`build_index`; saved with the model) instead of
            scoring every item, then score the candidates exactly: the returned scores
            are the model's, bias included, but an item of the exact top-k may be
            missed. Items excluded (seen, ``filter_items``, outside ``items``) are
            removed from an over-fetched candidate list (``k`` plus their number); users
            with more than 4096 of them, or with too few eligible candidates left, are
            scored exactly. Not with ``item_features`` (the index covers the model's
            items). Needs the optional library usearch (``pip install
            'warprec[ann]'``). Unknown users follow ``on_unknown`` as above.

        Returns
        -------
        items : ndarray
            Shape (k,) for a single user, (n_users, k) for a batch; best first, ties broken
            by lower item index. When a user has fewer than k eligible items the remaining
            slots hold -1 (numeric ids) or None (other ids).
        scores : ndarray of float32
            Matching scores; -inf in unfilled slots.

        Raises
        ------
        KeyError
            With ``on_unknown="error"``: a requested user was not seen at fit time.
        """
        self._check_fitted()
        k = check_k(k)
        validate_param("on_unknown", on_unknown, [ON_UNKNOWN])
        validate_param("approximate", approximate, ["boolean"])
        if approximate and item_features is not None:
            raise ValueError("approximate=True searches the index over the model's items; "
                             "with item_features the candidates are other rows: score them "
                             "exactly (approximate=False).")
        single = _is_single(users)
        n_requested = 1 if single else len(np.asarray(users, dtype=object).reshape(-1))
        if recalculate_user and user_features is not None:
            raise ValueError("pass either recalculate_user=True (embeddings from user_items) "
                             "or user_features, not both.")
        if recalculate_user and user_items is None:
            raise ValueError("recalculate_user=True computes the users' embeddings from "
                             "their interactions: pass them as user_items (one row per "
                             "requested user over the model's items).")
        # the candidate items
        if item_features is not None:
            if items is not None or filter_items is not None:
                raise ValueError("with item_features the candidates are its rows: select "
                                 "the rows instead of passing items or filter_items.")
            item_factors, item_biases, item_labels = self._embed_features("item",
                                                                          item_features)
        else:
            item_factors, item_biases, item_labels = self.item_factors_, self.item_biases_, None
        n_candidates = item_factors.shape[0]
        ui = None
        if isinstance(user_items, (list, tuple)) and item_features is None:
            ui = self.user_item_rows(user_items)
        elif user_items is not None:
            ui = as_interaction_matrix(user_items, "user_items")  # type: ignore[arg-type]
            if ui.shape != (n_requested, n_candidates):
                raise ValueError(f"user_items must have one row per requested user and one "
                                 f"column per candidate item: expected "
                                 f"{(n_requested, n_candidates)}, got {ui.shape}.")
        # the users: a looked-up index into user_factors, or rows of their own
        u: NDArray[np.integer[Any]]
        if recalculate_user:
            # ui is set: recalculate_user without user_items raised above
            user_factors, u = self.fold_in(ui), np.arange(n_requested)  # type: ignore[arg-type]
        elif user_features is not None:
            user_factors = self._embed_features("user", user_features)[0]
            if user_factors.shape[0] != n_requested:
                raise ValueError(f"user_features has {user_factors.shape[0]} rows for "
                                 f"{n_requested} requested users.")
            u = np.arange(n_requested)
        else:
            user_factors, u = self.user_factors_, self.requested_users(users, on_unknown)
        known_users = not (recalculate_user or user_features is not None)
        allowed = None
        if filter_items is not None or items is not None:
            allowed = np.ones(self.n_items_, dtype=bool)
            if items is not None:
                allowed[:] = False
                allowed[self._item_index(items)] = True
            if filter_items is not None:
                allowed[self._item_index(filter_items)] = False
        threads = self.n_threads if n_threads is None else n_threads
        if approximate:
            self._item_index_of("recommend", threads)   # (a missing library fails first)
        unknown = u < 0
        if not unknown.any():
            index, scores = self._top_items(user_factors, u, ui, item_factors, item_biases,
                                            item_labels, exclude_seen, known_users, allowed, k,
                                            threads, approximate)
        else:
            index, scores = self._top_with_unknown(
                unknown, user_factors, u, ui, item_factors, item_biases, item_labels,
                exclude_seen, allowed, k, threads, on_unknown, users, approximate)
        out = self._raw_items(index) if item_labels is None else raw_ids(index, item_labels)
        if as_frame:
            fallback = None if on_unknown != "popular" else unknown
            return top_frame(users, single, index, out, scores, fallback)
        if single:
            return out[0], scores[0]
        return out, scores

    def user_item_rows(self, user_items: UserItems, *, user_col: str | int | None = None,
                       item_col: str | int | None = None,
                       on_unknown: Literal["error", "skip"] = "error") -> sp.csr_matrix:
        """New users' interactions as a users x items matrix in the model's index space
        (what :meth:`fold_in` trains on).

        Parameters
        ----------
        user_items : scipy.sparse matrix, 2-D array, list of lists or DataFrame
            A matrix (one row per user over the model's items; every stored non-zero is
            a positive) is checked and returned. A list (or tuple) holds one list of raw
            item ids (indices for a model fit on a matrix) per user, in order. A
            DataFrame holds one (user, item) pair per row in a user and an item column
            (``user_col``, ``item_col``; by default found as ``fit`` finds them): one
            row per distinct user, in the order of their first appearance
            (``pandas.unique(frame[user column])``). Repeated items count once.
        user_col, item_col : str or int, optional
            The id columns of a DataFrame.
        on_unknown : {"error", "skip"}, default "error"
            Items the model was not fit on: a KeyError naming them, or left out (with a
            :class:`~warprec.exceptions.WarprecWarning` that says how many); a user left
            with no known item gets an empty row.

        Returns
        -------
        scipy.sparse.csr_matrix, shape (n_users, n_items_)
        """
        self._check_fitted()
        validate_param("on_unknown", on_unknown, [Options(("error", "skip"))])
        rows: NDArray[np.integer[Any]]
        if isinstance(user_items, (list, tuple)):
            lists = [_item_list(row, r) for r, row in enumerate(user_items)]
            rows = np.repeat(np.arange(len(lists)), [len(x) for x in lists])
            values = (np.concatenate(lists) if lists and rows.size
                      else np.empty(0, dtype=object))
            n_rows = len(lists)
        elif _is_frame(user_items):
            frame: pd.DataFrame = training_frame(  # type: ignore[assignment]  # (a frame)
                user_items, user_col=user_col, item_col=item_col, check_ratings=False)
            users = frame["user_id"].to_numpy(dtype=object)
            labels = _unique_in_order(users)
            rows, values, n_rows = _codes(users, labels), frame["item_id"].to_numpy(), len(labels)
        else:
            if user_col is not None or item_col is not None:
                raise TypeError("user_col and item_col name the columns of a DataFrame "
                                f"user_items; it is a {type(user_items).__name__}.")
            matrix = as_interaction_matrix(user_items, "user_items")  # type: ignore[arg-type]
            if matrix.shape[1] != self.n_items_:
                raise ValueError(f"user_items must have one column per item of the model "
                                 f"({self.n_items_}); got shape {matrix.shape}. Or pass one "
                                 f"list of raw item ids per user.")
            return matrix
        imap, n = self._id_map("item"), self.n_items_
        if imap is None:   # a model fit on a matrix: items are column indices
            columns = np.fromiter((int(v) if isinstance(v, numbers.Integral) and
                                   not isinstance(v, (bool, np.bool_)) and 0 <= int(v) < n
                                   else -1
                                   for v in np.asarray(values, dtype=object).tolist()),
                                  dtype=np.int64, count=len(values))
        else:
            columns = imap.indexer(np.asarray(values, dtype=object), bools_as_ints=True)
        unknown = columns < 0
        if unknown.any():
            shown = ", ".join(repr(v) for v in np.asarray(values, dtype=object)[unknown][:5])
            if on_unknown == "error":
                raise KeyError(f"{int(unknown.sum())} item id(s) of user_items were not seen "
                               f"at fit time: {shown}. The model has no embedding for them: "
                               f"leave them out, or pass on_unknown='skip'.")
            warnings.warn(f"{int(unknown.sum())} item id(s) of user_items unseen at fit time "
                          f"were left out (on_unknown='skip'): {shown}.", WarprecWarning,
                          stacklevel=3)
        keep = ~unknown
        matrix = sp.csr_matrix((np.ones(int(keep.sum()), np.float32),
                                (np.asarray(rows)[keep], columns[keep])),
                               shape=(n_rows, self.n_items_))
        matrix.sum_duplicates()
        matrix.data[:] = 1.0
        return as_interaction_matrix(matrix, "user_items")

    def requested_users(self, users: ArrayLike, on_unknown: OnUnknown = "error",
                        ) -> Int64Array:
        """Internal API (for :mod:`warprec.dask`; may change without notice): the user
        index of every requested user (``recommend``'s lookup), -1 for users unseen at
        fit time unless ``on_unknown="error"``, which raises a KeyError naming them and
        the option."""
        try:
            return self._user_index(users)
        except KeyError as exc:
            if on_unknown == "error":
                raise KeyError(f"{exc.args[0]} To recommend for the others anyway, pass "
                               f"on_unknown='skip' (no recommendations for unknown users) "
                               f"or on_unknown='popular' (the most popular items; the "
                               f"command line's --on-unknown).") from None
        values = np.atleast_1d(np.asarray(users, dtype=object))
        umap, n = self._id_map("user"), self.n_users_
        if umap is None:   # a model fit on a matrix: users are indices (integers checked)
            known = np.fromiter((0 <= v < n for v in values.tolist()), dtype=bool,
                                count=values.size)
        else:
            known = umap.indexer(values, bools_as_ints=True) >= 0
        index = np.full(values.size, -1, dtype=np.int64)
        if known.any():
            index[known] = self._user_index(values[known])
        return index

    def _top_items(self, user_factors: Float32Array, u: NDArray[np.integer[Any]],
                   ui: sp.csr_matrix | None, item_factors: Float32Array,
                   item_biases: Float32Array, item_labels: NDArray[Any] | None,
                   exclude_seen: bool, known_users: bool, allowed: NDArray[np.bool_] | None,
                   k: int, n_threads: int | None, approximate: bool = False,
                   ) -> tuple[NDArray[np.int32], Float32Array]:
        """:meth:`recommend`'s top-k of the users ``u`` (rows of ``user_factors``), each
        known to the model when ``known_users``; candidates from the item index when
        ``approximate``."""
        from .scoring import topk_items

        if known_users and item_labels is None and (ui is None or not exclude_seen):
            # the common case: rows of the model's factors and training matrix by index
            rows = u
            exclude = self.train_matrix_ if exclude_seen else None
        else:
            user_factors, rows = user_factors[u], np.arange(u.size)
            exclude = None
            if exclude_seen:
                if ui is not None:
                    exclude = ui
                elif known_users:
                    # item_labels is set: the common case above took known users without
                    exclude = self._seen_among(self.train_matrix_[u],
                                               item_labels)  # type: ignore[arg-type]
        if not approximate:
            return topk_items(user_factors, item_factors, item_biases, rows, k,
                              exclude=exclude, allowed_items=allowed, n_threads=n_threads)
        queries = np.ascontiguousarray(user_factors[rows], dtype=np.float32)
        excluded = None if exclude is None else sp.csr_matrix(exclude)[rows]

        def exact(redo: Int64Array) -> tuple[NDArray[np.int32], Float32Array]:
            return topk_items(queries, item_factors, item_biases, redo, k,
                              exclude=excluded, allowed_items=allowed, n_threads=n_threads)

        return _ann.top_k(self._item_index_of("recommend", n_threads), queries,
                          item_factors, item_biases, excluded, allowed, k, n_threads, exact)

    def _top_with_unknown(self, unknown: NDArray[np.bool_], user_factors: Float32Array,
                          u: NDArray[np.integer[Any]], ui: sp.csr_matrix | None,
                          item_factors: Float32Array, item_biases: Float32Array,
                          item_labels: NDArray[Any] | None, exclude_seen: bool,
                          allowed: NDArray[np.bool_] | None, k: int, n_threads: int | None,
                          on_unknown: OnUnknown, users: ArrayLike,
                          approximate: bool = False,
                          ) -> tuple[NDArray[np.int32], Float32Array]:
        """:meth:`recommend`'s top-k when some requested users are unknown (``u`` is -1
        there): the known users' as usual, the others' by ``on_unknown``."""
        from .scoring import topk_items

        n_slots = min(k, item_factors.shape[0])
        index = np.full((u.size, n_slots), -1, dtype=np.int32)
        scores = np.full((u.size, n_slots), -np.inf, dtype=np.float32)
        known = ~unknown
        if known.any():
            index[known], scores[known] = self._top_items(
                user_factors, u[known], None if ui is None else ui[known], item_factors,
                item_biases, item_labels, exclude_seen, True, allowed, k, n_threads,
                approximate)
        n_unknown = int(unknown.sum())
        shown = ", ".join(repr(v) for v in np.atleast_1d(
            np.asarray(users, dtype=object))[unknown][:5].tolist())
        if on_unknown == "skip":
            if self.reports_unknown_users:
                warnings.warn(f"{n_unknown} requested user(s) unseen at fit time got no "
                              f"recommendations (on_unknown='skip'): {shown}.",
                              WarprecWarning, stacklevel=3)
            return index, scores
        popularity = self.item_popularity_.astype(np.float32)
        if item_labels is not None:   # the candidates' counts: 0 for items unseen at fit
            column = self._known("item", item_labels)
            popularity = np.where(column >= 0, popularity[np.maximum(column, 0)],
                                  0).astype(np.float32)
        n_candidates = popularity.size
        exclude = ui[unknown] if exclude_seen and ui is not None else None
        index[unknown], scores[unknown] = topk_items(
            np.zeros((n_unknown, 1), np.float32), np.zeros((n_candidates, 1), np.float32),
            popularity, np.arange(n_unknown), k, exclude=exclude, allowed_items=allowed,
            n_threads=n_threads)
        if self.reports_unknown_users:
            warnings.warn(f"{n_unknown} requested user(s) unseen at fit time got the most "
                          f"popular items instead of personal recommendations "
                          f"(on_unknown='popular'): {shown}.", WarprecWarning, stacklevel=3)
        return index, scores

    @property
    def item_popularity_(self) -> NDArray[np.int64]:
        """Training positives per item: the stored entries of each column of
        ``train_matrix_`` (the positives of the last fit; for a model loaded from a file,
        those it was saved with). What ``recommend(..., on_unknown="popular")`` ranks
        unknown users' items by."""
        self._check_fitted()
        matrix = self.train_matrix_
        cached = self.__dict__.get("_popularity")
        if cached is None or cached[0] is not matrix:
            cached = (matrix, np.bincount(matrix.indices, minlength=self.n_items_)
                      .astype(np.int64))
            self.__dict__["_popularity"] = cached
        return cached[1]

    def _seen_among(self, seen: sp.csr_matrix, labels: NDArray[Any]) -> sp.csr_matrix:
        """``seen`` (rows over the model's items) over the candidates ``labels`` instead:
        a candidate whose id is a known item keeps that item's entries."""
        column = self._known("item", labels)
        keep = column >= 0
        to_candidate = sp.csr_matrix((np.ones(int(keep.sum()), np.float32),
                                      (column[keep], np.flatnonzero(keep))),
                                     shape=(self.n_items_, len(labels)))
        return (seen @ to_candidate).tocsr()

    def _known(self, kind: Literal["user", "item"], labels: ArrayLike) -> Int64Array:
        """The model's user (``kind="user"``) or item index of every label, -1 where it
        knows none."""
        n = self.n_users_ if kind == "user" else self.n_items_
        if self._id_map(kind) is None:   # fit on a matrix: the labels are indices
            values = np.asarray(labels)
            if not np.issubdtype(values.dtype, np.integer):
                return np.full(len(values), -1)
            return np.where((values >= 0) & (values < n), values, -1)
        return self._id_map(kind).indexer(np.asarray(labels))  # type: ignore[union-attr]

    def user_embeddings(self, user_features: FeatureData | None = None,
                        users: ArrayLike | None = None) -> Float32Array:
        """User factors: of the given feature rows (new users; see
        ``WARPFactorizer.fit``'s ``user_features``), of the given users, or (neither
        given) of every user the model knows.

        Returns
        -------
        ndarray of float32, shape (n, n_components)
        """
        self._check_fitted()
        if user_features is not None:
            if users is not None:
                raise ValueError("pass user_features or users, not both.")
            return self._embed_features("user", user_features)[0]
        if users is None:
            return self.user_factors_.copy()
        return self.user_factors_[np.atleast_1d(self._user_index(users))]

    def item_embeddings(self, item_features: FeatureData | None = None,
                        items: ArrayLike | None = None) -> tuple[Float32Array, Float32Array]:
        """Item factors and biases: of the given feature rows (items unseen at fit, too),
        of the given items, or (neither given) of every item the model knows.

        Returns
        -------
        factors : ndarray of float32, shape (n, n_components)
        biases : ndarray of float32, shape (n,)
        """
        self._check_fitted()
        if item_features is not None:
            if items is not None:
                raise ValueError("pass item_features or items, not both.")
            return self._embed_features("item", item_features)[:2]
        if items is None:
            return self.item_factors_.copy(), self.item_biases_.copy()
        i = np.atleast_1d(self._item_index(items))
        return self.item_factors_[i], self.item_biases_[i]

    if TYPE_CHECKING:  # items have biases, users none
        @overload
        def _embed_features(self, kind: Literal["user"], features: FeatureData,
                            ) -> tuple[Float32Array, None, NDArray[Any]]: ...

        @overload
        def _embed_features(self, kind: Literal["item"], features: FeatureData,
                            ) -> tuple[Float32Array, Float32Array, NDArray[Any]]: ...

    def _embed_features(self, kind: Literal["user", "item"], features: FeatureData,
                        ) -> tuple[Float32Array, Float32Array | None, NDArray[Any]]:
        """``(factors, biases, labels)`` of entities described by feature rows; only models
        fit with side features have them."""
        raise ValueError(f"this {type(self).__name__} has no side features: fit "
                         f"warprec.WARPFactorizer with {kind}_features=... to embed "
                         f"{kind}s from their features.")

    def similar_items(self, items: ArrayLike, k: int = 10, *, n_threads: int | None = None,
                      approximate: bool = False) -> tuple[NDArray[Any], Float32Array]:
        """Items most similar to the given ones by cosine similarity of item factors.

        The query item itself is left out. Returns ``(items, similarities)`` shaped like
        :meth:`recommend`'s output (1-D for a single query item). Items with an all-zero
        factor vector have similarity 0 with everything. With ``approximate=True`` the
        candidates come from an HNSW index of the item factors by cosine (built on first
        use or by ``build_index("similar_items")``, saved with the model; needs
        ``pip install 'warprec[ann]'``) and are scored exactly, as in :meth:`recommend`.
        """
        return self._most_similar("item", items, k, n_threads, approximate)

    def build_index(self, kind: Literal["recommend", "similar_items"] = "recommend", *,
                    connectivity: int = 16, expansion_add: int = 128,
                    expansion_search: int = 64, n_threads: int | None = None,
                    ) -> FactorRecommender:
        """Build the item index that ``approximate=True`` searches, now.

        ``recommend(..., approximate=True)`` and ``similar_items(..., approximate=True)``
        build their index on first use with the default settings; call this to pay the
        build time up front (before serving, or before :meth:`save`, which stores the
        indexes built) or to choose the settings. The index follows the model: ``fit``
        and ``partial_fit`` make it stale, and it is built again on next use. Needs the
        optional library usearch (``pip install 'warprec[ann]'``).

        Parameters
        ----------
        kind : {"recommend", "similar_items"}, default "recommend"
            ``"recommend"``: maximum inner product over ``[V_i, b_i]`` (queried with
            ``[U_u, 1]``, so the bias counts exactly); ``"similar_items"``: cosine
            similarity of the item factors.
        connectivity, expansion_add, expansion_search : int, default 16, 128, 64
            The HNSW graph's links per node, search depth while adding, and search depth
            while querying (Malkov and Yashunin's ``M``, ``efConstruction``, ``ef``).
            Larger values find more of the exact top-k, more slowly. The search depth is
            raised to the number of candidates a query asks for.
        n_threads : int, optional
            Threads for the build (default: the model's ``n_threads``, else every core).

        Returns
        -------
        self
        """
        self._check_fitted()
        validate_param("kind", kind, [Options(_ann.KINDS)])
        params = _ann.IndexParams(connectivity, expansion_add, expansion_search)
        threads = self.n_threads if n_threads is None else n_threads
        if kind == "recommend":
            V, b = self.item_factors_, self.item_biases_
        else:
            V, b = self._unit_item_factors(), np.zeros(self.n_items_, np.float32)
        index = _ann.ItemIndex.build(kind, V, b, params, threads)
        self._ann_cache()[kind] = index
        return self

    def _factor_state(self) -> tuple[object, ...]:
        """What an item index depends on, compared by identity: the item arrays, the
        training matrix (every ``fit`` and ``partial_fit`` installs a new one) and the
        epoch count."""
        return (self.item_factors_, self.item_biases_, self.train_matrix_,
                getattr(self, "epochs_done_", None))

    def _ann_cache(self) -> dict[str, Any]:
        """The item indexes built or loaded for the current factors, by kind (an index
        still serialised, as loaded from a file, is a dict of its arrays)."""
        state = self._factor_state()
        cached = self.__dict__.get("_ann_indexes")
        if cached is None or len(cached[0]) != len(state) or not all(
                a is b or (isinstance(a, int) and a == b) for a, b in zip(cached[0], state)):
            cached = (state, {})
            self.__dict__["_ann_indexes"] = cached
        return cached[1]

    def _item_index_of(self, kind: Literal["recommend", "similar_items"],
                       n_threads: int | None) -> _ann.ItemIndex:
        """The current index of ``kind``: loaded, restored from a model file's bytes, or
        built with the default settings."""
        cache = self._ann_cache()
        index = cache.get(kind)
        if isinstance(index, dict):   # as read from a model file: restore it on first use
            _ann.load_library()
            index = cache[kind] = _ann.ItemIndex.from_arrays(
                f"ann_{kind}", index, self.n_items_, self.item_factors_.shape[1])
        if index is None:
            self.build_index(kind, n_threads=n_threads)
            index = cache[kind]
        return index

    def index_arrays(self) -> dict[str, np.ndarray]:
        """Internal API (for ``save``): the arrays of the item indexes built for the
        current factors (none when no index is), as the model file stores them."""
        self._check_fitted()
        arrays: dict[str, np.ndarray] = {}
        for kind, index in self._ann_cache().items():
            prefix = f"ann_{kind}"
            arrays.update(index if isinstance(index, dict) else index.to_arrays(prefix))
        return arrays

    def restore_indexes(self, data: dict[str, np.ndarray]) -> None:
        """Internal API (for ``load``): keep the item indexes stored in a model file's
        arrays ``data`` for the loaded factors; each is read on first use (so loading
        does not need the optional library)."""
        cache = self._ann_cache()
        for kind in _ann.KINDS:
            prefix = f"ann_{kind}"
            if f"{prefix}_bytes" in data and f"{prefix}_meta" in data:
                cache[kind] = {f"{prefix}_bytes": data[f"{prefix}_bytes"],
                               f"{prefix}_meta": data[f"{prefix}_meta"]}

    def _unit_item_factors(self) -> Float32Array:
        factors = self.item_factors_
        norms = np.linalg.norm(factors, axis=1)
        return (factors / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32)

    def similar_users(self, users: ArrayLike, k: int = 10, *, n_threads: int | None = None,
                      ) -> tuple[NDArray[Any], Float32Array]:
        """Users most similar to the given ones by cosine similarity of user factors.

        The query user itself is left out. Returns ``(users, similarities)`` shaped like
        :meth:`recommend`'s output (1-D for a single query user): raw user ids (indices
        for a model fit on a matrix; -1 or None in unfilled slots). Users with an all-zero
        factor vector have similarity 0 with everything.
        """
        return self._most_similar("user", users, k, n_threads)

    def _most_similar(self, kind: Literal["user", "item"], ids: ArrayLike, k: int,
                      n_threads: int | None, approximate: bool = False,
                      ) -> tuple[NDArray[Any], Float32Array]:
        """:meth:`similar_items` (``kind="item"``) or :meth:`similar_users` (``"user"``):
        the top-k rows of that side's factors by cosine similarity to the rows of ``ids``,
        each query row itself excluded."""
        from .scoring import topk_items

        self._check_fitted()
        k = check_k(k)
        validate_param("approximate", approximate, ["boolean"])
        single = _is_single(ids)
        if kind == "item":
            factors, query, raw = self.item_factors_, self._item_index(ids), self.item_ids_
        else:
            factors, query, raw = self.user_factors_, self._user_index(ids), self.user_ids_
        if kind == "item":
            unit = self._unit_item_factors()
        else:
            norms = np.linalg.norm(factors, axis=1)
            unit = (factors / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32)
        n = factors.shape[0]
        self_mask = sp.csr_matrix((np.ones(query.size, np.float32),
                                   (np.arange(query.size), query)), shape=(query.size, n))
        threads = self.n_threads if n_threads is None else n_threads
        zeros, queries = np.zeros(n, np.float32), unit[query]

        def exact(rows: Int64Array) -> tuple[NDArray[np.int32], Float32Array]:
            return topk_items(queries, unit, zeros, rows, k, exclude=self_mask,
                              n_threads=threads)

        if approximate:
            index, scores = _ann.top_k(self._item_index_of("similar_items", threads),
                                       queries, unit, zeros, self_mask, None, k, threads,
                                       exact)
        else:
            index, scores = exact(np.arange(query.size))
        out = raw_ids(index, raw)
        if single:
            return out[0], scores[0]
        return out, scores

    # ------------------------------------------------------------------ evaluation glue
    def score(self, X: InteractionData, y: object = None) -> float:
        """NDCG@10 of held-out interactions (scikit-learn's ``score``: higher is better).

        The value is ``warprec.metrics.evaluate(self, X, train=self.train_matrix_,
        k=10, metrics=["ndcg"])["ndcg@10"]``: for every user with a row in ``X``, the
        model ranks all items except that user's positives of the last fit
        (``train_matrix_``), and the binary NDCG@10 of the ranking against the user's
        items in ``X`` is averaged over those users. This is what scikit-learn's
        searches (``GridSearchCV`` and others, e.g. with
        ``cv=warprec.model_selection.PerUserHoldout()``) maximise by default.

        Parameters
        ----------
        X : DataFrame, warprec.data.Interactions or scipy.sparse matrix
            Held-out positives, in any form :func:`warprec.metrics.evaluate` takes as
            ``test``: raw-id rows (``user_id``, ``item_id``) for a model fit on raw ids,
            a users x items matrix in the model's index space otherwise.
        y : None
            Ignored; present for scikit-learn compatibility.

        Returns
        -------
        float
            Mean NDCG@10 in [0, 1]; NaN (with a
            :class:`~warprec.exceptions.WarprecWarning`) when no user of ``X`` can be
            evaluated.

        Notes
        -----
        As in :func:`warprec.metrics.evaluate`: rows of users unseen at fit time are
        left out with a :class:`~warprec.exceptions.WarprecWarning` (the model cannot
        score them); items unseen at fit time count as relevant items that cannot be
        hit; rows of ``X`` that are also training positives are excluded from the
        ranking but stay relevant (with a warning). Scoring uses the model's
        ``n_threads``.
        """
        from .evaluation import evaluate

        self._check_fitted()
        result = evaluate(self, X, train=self.train_matrix_, k=10, metrics=["ndcg"],
                          n_threads=self.n_threads)
        return float(result["ndcg@10"])

    def _as_index_matrix(self, X: InteractionData, name: str, count_unknown_items: bool,
                         ) -> tuple[sp.csr_matrix, Int64Array]:
        """``X`` as CSR in this model's index space, plus per-user unknown-item counts;
        rows of users unseen at fit time are left out with a WarprecWarning."""
        matrix, extra, unknown = self.index_space(X, name, count_unknown_items)
        if unknown.n_rows:
            warnings.warn(f"{name}: {unknown.n_rows} row(s) of {len(unknown.users)} user(s) "
                          "unseen at fit time were left out (the model cannot score them).",
                          WarprecWarning, stacklevel=3)
        return matrix, extra

    def index_space(self, X: InteractionData, name: str, count_unknown_items: bool,
                    fallback: bool = False,
                    ) -> tuple[sp.csr_matrix, Int64Array, UnknownUsers]:
        """Internal API (for :mod:`warprec.dask`; may change without notice): ``X`` as
        CSR in this model's index space, the per-user counts of relevant items unknown
        to the model (when ``count_unknown_items``; zeros otherwise), and the rows of
        users unseen at fit time, which the matrix leaves out (with, when ``fallback``,
        their own matrix over the model's items: see :class:`UnknownUsers`). Stored
        values are gains: the ``rating`` or ``weight`` column of a frame if any (a
        duplicated pair keeps its largest value), else 1. Nothing is warned here."""
        n_users, n_items = self.n_users_, self.n_items_
        if _is_frame(X) or _is_interactions(X):
            if self.user_ids_ is None:
                raise TypeError(f"{name} has raw ids but the model was fit on a matrix; pass a "
                                "sparse matrix in the same index space.")
            frame = X.to_frame() if _is_interactions(X) else X
            for col in ("user_id", "item_id"):
                if col not in frame.columns:
                    raise KeyError(f"{name} needs columns 'user_id' and 'item_id'; found "
                                   f"{list(frame.columns)}.")
            umap, imap = self._id_map("user"), self._id_map("item")
            # both maps exist: a model fit on raw ids (user_ids_ checked above)
            u = umap.indexer(frame["user_id"], bools_as_ints=True)  # type: ignore[union-attr]
            i = imap.indexer(frame["item_id"], bools_as_ints=True)  # type: ignore[union-attr]
            gain_col = next((c for c in ("rating", "weight") if c in frame.columns), None)
            gains = (np.ones(len(frame), np.float32) if gain_col is None
                     else frame[gain_col].to_numpy(dtype=np.float32))
            unknown_users = u < 0
            labels = _unique_in_order(frame["user_id"].to_numpy(dtype=object)[unknown_users])
            unknown = UnknownUsers(int(unknown_users.sum()), labels)
            known = ~unknown_users
            matrix, extra = _gain_matrix(u, i, gains, known, frame["item_id"], n_users,
                                         n_items, count_unknown_items)
            if fallback and unknown.n_rows:
                # the unknown users' rows, numbered in order of first appearance
                codes = np.full(len(frame), -1, dtype=np.int64)
                codes[unknown_users] = _codes(frame["user_id"].to_numpy(dtype=object)
                                              [unknown_users], labels)
                unknown.test, unknown.n_relevant = _gain_matrix(
                    codes, i, gains, unknown_users, frame["item_id"], len(labels), n_items,
                    count_unknown_items)
                unknown.n_relevant = (unknown.n_relevant
                                      + np.diff(unknown.test.indptr).astype(np.int64))
            return matrix, extra, unknown
        matrix = as_interaction_matrix(X, name, frames=True)
        if matrix.shape != (n_users, n_items):
            raise ValueError(f"{name} has shape {matrix.shape} but the model knows "
                             f"{n_users} users x {n_items} items.")
        return matrix, np.zeros(n_users, np.int64), UnknownUsers(0, np.empty(0, object))

    def _evaluation_inputs(self, test: InteractionData, train: InteractionData | None,
                           on_unknown: OnUnknown = "skip") -> dict[str, Any]:
        """Arrays for :func:`warprec.metrics.evaluate_factors` (index space), plus, with
        ``on_unknown="popular"``, those of the test users unseen at fit time
        (``"fallback"``: their test matrix, relevant counts, raw ids and the item
        popularity that ranks their items)."""
        self._check_fitted()
        validate_param("on_unknown", on_unknown, [ON_UNKNOWN])
        test_m, extra, unknown = self.index_space(test, "test", True,
                                                  fallback=on_unknown == "popular")
        report_unknown_test_users(unknown, on_unknown, stacklevel=3)
        train_m = None if train is None else self._as_index_matrix(train, "train", False)[0]
        n_relevant = np.diff(test_m.indptr).astype(np.int64) + extra
        inputs = dict(user_factors=self.user_factors_, item_factors=self.item_factors_,
                      item_biases=self.item_biases_, test=test_m, train=train_m,
                      n_relevant=n_relevant)
        if getattr(self, "user_ids_", None) is not None:   # (per-user rows by raw id)
            inputs["user_ids"] = self.user_ids_
        if unknown.test is not None:
            inputs["fallback"] = dict(test=unknown.test, n_relevant=unknown.n_relevant,
                                      users=unknown.users,
                                      popularity=self.item_popularity_.astype(np.float32))
        return inputs


class UnknownUsers:
    """Rows of users a model was not fit on, found by
    :meth:`FactorRecommender.index_space` (internal API).

    Attributes
    ----------
    n_rows : int
        How many rows name such users.
    users : ndarray of object
        Their distinct raw ids, in order of first appearance.
    test, n_relevant : scipy.sparse.csr_matrix and ndarray of int64, or None
        When asked for (``fallback=True``): their rows over the model's items (one row
        per entry of ``users``; the gains as in the main matrix) and their numbers of
        relevant items, those unknown to the model included.
    """

    def __init__(self, n_rows: int, users: NDArray[Any]) -> None:
        self.n_rows, self.users = n_rows, users
        self.test: sp.csr_matrix | None = None
        self.n_relevant: Int64Array | None = None


def report_unknown_test_users(unknown: UnknownUsers, on_unknown: OnUnknown,
                              stacklevel: int = 2) -> None:
    """What the evaluation functions do about test rows of users unseen at fit time:
    raise (``"error"``) or warn that they were left out (``"skip"``) or ranked by
    popularity (``"popular"``). Internal API (for :mod:`warprec.dask`)."""
    if not unknown.n_rows:
        return
    shown = ", ".join(repr(v) for v in unknown.users[:5].tolist())
    what = f"test: {unknown.n_rows} row(s) of {len(unknown.users)} user(s) unseen at fit time"
    if on_unknown == "error":
        raise KeyError(f"{what} ({shown}). The model cannot score them: pass "
                       f"on_unknown='skip' to leave them out, or on_unknown='popular' to "
                       f"rank the most popular items for them.")
    if on_unknown == "skip":
        warnings.warn(f"{what} were left out (the model cannot score them; "
                      f"on_unknown='popular' ranks the most popular items for them).",
                      WarprecWarning, stacklevel=stacklevel + 1)
    else:
        warnings.warn(f"{what} were ranked by item popularity (on_unknown='popular').",
                      WarprecWarning, stacklevel=stacklevel + 1)


# ---------------------------------------------------------------------- helpers
def raw_ids(index: NDArray[np.integer[Any]], ids: NDArray[Any] | None) -> NDArray[Any]:
    """Map indices (-1 = none) to the raw ids ``ids`` (None: the indices themselves);
    the fill is -1 for numeric ids and None otherwise. Internal API (also for
    :mod:`warprec.dask`)."""
    if ids is None:
        return index.astype(np.int64)
    out = ids[np.maximum(index, 0)]
    missing = index < 0
    if missing.any():
        if np.issubdtype(ids.dtype, np.number):
            out = out.astype(ids.dtype)
            out[missing] = -1
        else:
            out = out.astype(object)
            out[missing] = None
    return out


def top_frame(users: ArrayLike, single: bool, index: NDArray[np.integer[Any]],
              items: NDArray[Any], scores: Float32Array,
              fallback: NDArray[np.bool_] | None = None) -> pd.DataFrame:
    """``recommend(..., as_frame=True)``'s DataFrame: one row per filled slot, with a
    ``fallback`` column (the requested user's entry of ``fallback``) when it is given."""
    import pandas as pd

    labels = np.asarray([users] if single else users, dtype=object).reshape(-1)
    filled = index >= 0
    rows, ranks = np.nonzero(filled)
    user_col = pd.Series(labels[rows])
    if len(labels) and all(isinstance(x, (int, np.integer)) for x in labels):
        user_col = user_col.astype(np.int64)
    frame = pd.DataFrame({"user_id": user_col, "item_id": items[filled],
                          "score": scores[filled], "rank": ranks + 1})
    if fallback is not None:
        frame["fallback"] = np.asarray(fallback, dtype=bool)[rows]
    return frame


def fit_input(X: InteractionData, user_ids: NDArray[Any] | None = None,
              item_ids: NDArray[Any] | None = None, *, user_col: str | int | None = None,
              item_col: str | int | None = None, check_ratings: bool = True,
              ) -> tuple[sp.csr_matrix, NDArray[Any] | None, NDArray[Any] | None]:
    """The training input of every recommender as a canonical CSR matrix plus id arrays.

    Parameters
    ----------
    X : DataFrame, warprec.data.Interactions, scipy.sparse matrix or 2-D array
        A DataFrame (its id columns found by :func:`training_frame`) goes through
        :meth:`warprec.data.Interactions.from_frame`; an ``Interactions`` gives its
        matrix and id maps; a matrix is checked by
        :func:`warprec._inputs.as_interaction_matrix`.
    user_ids, item_ids : ndarray, optional
        Fixed id maps for a DataFrame (e.g. a model's maps for ``partial_fit``); by
        default the maps are the DataFrame's sorted unique ids. Ignored for other input.
    user_col, item_col, check_ratings
        As in :func:`training_frame`.

    Returns
    -------
    matrix : scipy.sparse.csr_matrix
        float32 values, sorted unique indices, no stored zeros.
    user_ids, item_ids : ndarray or None
        Raw ids of the rows and columns; None for matrix input.
    """
    X = training_frame(X, user_col=user_col, item_col=item_col, check_ratings=check_ratings)
    if _is_frame(X):
        from .interactions import Interactions
        X = Interactions.from_frame(X, user_ids=user_ids, item_ids=item_ids)
    user_ids = item_ids = None
    if _is_interactions(X):
        user_ids, item_ids = np.asarray(X.user_ids), np.asarray(X.item_ids)
        X = X.matrix
    return as_interaction_matrix(X, "X", frames=True), user_ids, item_ids


def training_frame(X: InteractionData, *, user_col: str | int | None = None,
                   item_col: str | int | None = None, check_ratings: bool = True,
                   ) -> InteractionData:
    """A DataFrame ``X`` as the frame of its two id columns, named ``user_id`` and
    ``item_id`` (``X`` itself when it has those two only); other input unchanged.

    The columns are ``user_col`` and ``item_col`` when given (names or 0-based
    positions), else found as :func:`warprec.data.read_ratings` finds them (``user_id``,
    ``userId``, ``user``, ``uid``...; ``item_id``, ``movieId``, ``item``...; any case).
    With ``check_ratings``, a rating column (``rating``, ``score``, ``weight``...) of more
    than two distinct values gives a :class:`~warprec.exceptions.WarprecWarning`: such
    ratings look explicit, yet every row becomes a positive, unless they were thresholded
    with :func:`warprec.data.positives` (whose ``min_rating`` the frame's ``attrs``
    record). Internal API (the recommenders' ``fit``).
    """
    if not _is_frame(X):
        if user_col is not None or item_col is not None:
            raise TypeError(f"user_col and item_col name the columns of a DataFrame X; X is "
                            f"a {type(X).__name__}.")
        return X
    from ._columns import id_columns

    user, item = id_columns(X, user_col, item_col, "X")
    if check_ratings:
        warn_if_explicit(X, (user, item), stacklevel=3)
    if (user, item) == ("user_id", "item_id"):
        # (no other column: the checks are not repeated by a caller of a caller)
        return X if X.shape[1] == 2 else X[["user_id", "item_id"]]
    import pandas as pd

    return pd.DataFrame({"user_id": X[user], "item_id": X[item]})


def warn_if_explicit(X: pd.DataFrame, id_columns: tuple[Any, ...] = ("user_id", "item_id"),
                     source: str = "X", stacklevel: int = 2) -> None:
    """A :class:`~warprec.exceptions.WarprecWarning` when ``X`` has a rating column (found
    as :func:`warprec.data.read_ratings` finds it) of more than two distinct values that
    :func:`warprec.data.positives` did not threshold: ratings that look explicit, of which
    fit would take every row as a positive. Binary or constant values (implicit data) do
    not warn. Internal API (``fit`` and the command line)."""
    from ._columns import MIN_RATING_ATTR, find_column

    if X.attrs.get(MIN_RATING_ATTR) is not None:
        return
    try:
        column = find_column(X, "rating", None, False, source)
    except KeyError:   # several candidates: not ours to choose
        return
    if column is None or column in id_columns:
        return
    values = X[column]
    n = int(values.nunique())
    if n <= 2:
        return
    low, high = (v.item() if hasattr(v, "item") else v for v in (values.min(), values.max()))
    warnings.warn(
        f"the rating column {column!r} of {source} holds {n} distinct values (from {low!r} "
        f"to {high!r}): they look like explicit ratings, yet every row becomes a positive, "
        f"the lowest ratings included. Keep the positives first: --min-rating on the "
        f"command line, warprec.data.positives(frame, min_rating=...) in Python; or weight "
        f"the rows: fit warprec.Interactions.from_frame(..., weight_col={column!r}) with "
        f"sample_weight='values'.", WarprecWarning, stacklevel=stacklevel + 1)


def _gain_matrix(u: Int64Array, i: Int64Array, gains: NDArray[np.float32],
                 rows: NDArray[np.bool_], item_ids: pd.Series, n_rows: int, n_items: int,
                 count_unknown_items: bool) -> tuple[sp.csr_matrix, Int64Array]:
    """The entries ``rows`` of (row ``u``, item ``i``, ``gains``) as an (n_rows, n_items)
    CSR matrix (a duplicated pair keeps its largest gain; items ``i < 0`` left out), and
    per row the number of distinct unknown items (``item_ids`` where ``i < 0``) when
    ``count_unknown_items``."""
    keep = rows & (i >= 0)
    uu, ii, gg = u[keep], i[keep], gains[keep]
    order = np.lexsort((-gg, ii, uu))
    uu, ii, gg = uu[order], ii[order], gg[order]
    first = np.ones(uu.size, bool)
    first[1:] = (uu[1:] != uu[:-1]) | (ii[1:] != ii[:-1])
    matrix = sp.csr_matrix((gg[first], (uu[first], ii[first])), shape=(n_rows, n_items))
    extra = np.zeros(n_rows, np.int64)
    unknown_items = rows & (i < 0)
    if count_unknown_items and unknown_items.any():
        # each distinct unknown item of a row counts once in |relevant|
        from ._grouping import factorize_ids
        item_codes, _ = factorize_ids(item_ids.to_numpy()[unknown_items])
        pairs = np.unique(np.stack([u[unknown_items], item_codes]), axis=1)
        extra = np.bincount(pairs[0], minlength=n_rows)
    return matrix, extra


def _item_list(row: Any, r: int) -> NDArray[Any]:
    """One user's raw item ids of a list of lists, as a 1-D object array."""
    if isinstance(row, (str, bytes)) or np.ndim(row) != 1:   # (a ragged row is 1-D too)
        raise TypeError(f"user_items as a list holds one list of item ids per user; entry "
                        f"{r} is {type(row).__name__} {row!r:.60}.")
    return np.asarray(list(row), dtype=object)


def _unique_in_order(values: NDArray[Any]) -> NDArray[Any]:
    """The distinct values of ``values`` in order of first appearance (object array)."""
    import pandas as pd

    return np.asarray(pd.unique(pd.Series(values, dtype=object)), dtype=object)


def _codes(values: NDArray[Any], labels: NDArray[Any]) -> Int64Array:
    """The position of every value of ``values`` in ``labels`` (which holds them all)."""
    return IdMap(labels).indexer(values)


def _is_single(ids: ArrayLike) -> bool:
    """Whether ``ids`` is one id (a scalar) rather than a sequence of ids."""
    if isinstance(ids, (str, bytes)):
        return True
    try:
        return np.ndim(ids) == 0
    except ValueError:  # ragged nesting: not a scalar; lookup_ids explains the problem
        return False


def _is_frame(X: object) -> TypeIs[pd.DataFrame]:
    return type(X).__name__ == "DataFrame" and hasattr(X, "columns")


def _is_interactions(X: object) -> TypeIs[Interactions]:
    return hasattr(X, "matrix") and hasattr(X, "user_ids") and hasattr(X, "item_ids")

