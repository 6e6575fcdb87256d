"""Compilation flags shared by every kernel.

``FASTMATH`` allows reassociation (so reductions vectorise) but deliberately leaves
out ``nnan`` and ``ninf``: the training kernel checks every update for NaN/Inf, and with
those flags LLVM may fold such checks away (umap removed blanket fastmath from its
SGD for this reason). ``nsz`` is left out too: together with ``reassoc`` it let LLVM
fold the finiteness check of an update away (tests/test_train_kernel.py catches this).
"""

FASTMATH = {"reassoc", "contract", "arcp", "afn"}

#: Keyword arguments for ``numba.njit`` on kernels that run serially.
JIT = dict(nogil=True, cache=True, fastmath=FASTMATH, error_model="numpy")

#: Keyword arguments for ``numba.njit`` on kernels that use ``prange``.
PJIT = dict(JIT, parallel=True)
