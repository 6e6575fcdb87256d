"""Compilation flags shared by every kernel.

``FASTMATH`` allows reassociation (so reductions vectorise) but deliberately leaves
out ``nnan`` and ``ninf``: the training loop checks parameters for NaN/Inf, and with
those flags LLVM may fold such checks away (umap removed blanket fastmath from its
SGD for this reason).
"""

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}

#: Keyword arguments for ``numba.njit`` on kernels that run serially.
JIT = dict(nogil=True, cache=True, fastmath=FASTMATH, error_model="numpy")

#: Keyword arguments for ``numba.njit`` on kernels that use ``prange``.
PJIT = dict(JIT, parallel=True)
