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

#: Serial hot loops compiled without Numba's reference counting (NRT): every row view
#: and helper call would otherwise count references with atomic instructions on the
#: shared arrays' memory-info blocks (cache lines bouncing between threads, and calls
#: that spill vector registers; ML-100K epochs took about 1.3x as long at 1 thread).
#: Such a kernel must not allocate: its callers pass work arrays in. The helpers it
#: calls, inlined or not, are compiled with the same flags and obey the same rule (the
#: ordinal loss, which sorts and allocates, has its own slice compiled with NRT).
#: ``_nrt`` is a private Numba option (checked with numba 0.68).
JIT_NO_NRT = dict(JIT, _nrt=False)

#: Keyword arguments for ``numba.njit`` on kernels that use ``prange``.
PJIT = dict(JIT, parallel=True)
