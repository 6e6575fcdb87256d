"""Names for the kinds of values warprec's public API takes and returns.

For annotations only: modules import these names inside ``if TYPE_CHECKING:`` blocks
(with ``from __future__ import annotations``), so nothing here runs when warprec is
imported. One name per kind of argument, as the docstrings describe them:

``InteractionData``
    What ``fit`` and the evaluation functions take as interactions: a DataFrame with
    ``user_id`` and ``item_id`` columns, a :class:`warprec.data.Interactions`, a scipy
    sparse matrix or array, or a dense 2-D numpy array (users x items).
``SparseMatrix``
    Any scipy sparse matrix or sparse array, of any format (spelled out: in scipy-stubs
    ``spmatrix`` and ``sparray`` are mixins without the formats' shared API).
``FeatureData``
    Side features of users or items: a DataFrame with an id column, a sparse matrix or
    a dense 2-D array (see :mod:`warprec._features`).
``Float32Array``, ``Int32Array``, ``Int64Array``
    numpy arrays of that dtype (any shape), as the models store and return them.
``RandomState``
    ``random_state`` of the estimators and generators: None, a seed or a
    ``numpy.random.Generator``.
``UserItems``
    New users' interactions (``fold_in``, ``recommend``'s ``user_items``): a users x
    items matrix in the model's index space, a list of raw item id lists (one per user),
    or a DataFrame of user and item ids (``fold_in`` only).
``OnUnknown``
    ``on_unknown`` of ``recommend`` and the evaluation functions: what to do with users
    the model was not fit on (``"error"``, ``"skip"`` or ``"popular"``).
``Constraint``, ``ConstraintSpec``
    A parameter constraint of :mod:`warprec._inputs` (``Interval``, ``Options``,
    ``InstanceOf``) and what a declaration may hold: one of them, None (the value None)
    or ``"boolean"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal, Protocol, TypeAlias

    import numpy as np
    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import NDArray

    from .data import Interactions

    # the shape as tuple[int, ...] (NDArray's is tuple[Any, ...]): sizes read from it
    # are ints, so numpy's overloads can tell the dtypes of arrays made from them
    Float32Array: TypeAlias = np.ndarray[tuple[int, ...], np.dtype[np.float32]]
    Int32Array: TypeAlias = np.ndarray[tuple[int, ...], np.dtype[np.int32]]
    Int64Array: TypeAlias = np.ndarray[tuple[int, ...], np.dtype[np.int64]]
    SparseMatrix: TypeAlias = (
        sp.bsr_array | sp.bsr_matrix | sp.coo_array | sp.coo_matrix | sp.csc_array
        | sp.csc_matrix | sp.csr_array | sp.csr_matrix | sp.dia_array | sp.dia_matrix
        | sp.dok_array | sp.dok_matrix | sp.lil_array | sp.lil_matrix)
    InteractionData: TypeAlias = pd.DataFrame | Interactions | SparseMatrix | NDArray[Any]
    FeatureData: TypeAlias = pd.DataFrame | SparseMatrix | NDArray[Any]
    RandomState: TypeAlias = int | np.random.Generator | None
    OnUnknown: TypeAlias = Literal["error", "skip", "popular"]
    UserItems: TypeAlias = (SparseMatrix | NDArray[Any] | pd.DataFrame
                            | Sequence[Sequence[Any]])

    class Constraint(Protocol):
        """What :func:`warprec._inputs.validate_param` asks of a constraint object."""

        def accepts_type(self, value: object) -> bool: ...

        def accepts(self, value: object) -> bool: ...

        def describe(self) -> str: ...

    ConstraintSpec: TypeAlias = Constraint | Literal["boolean"] | None
