"""Compilation flags shared by every kernel.

``FASTMATH`` allows reassociation (so reductions vectorise) but deliberately leaves
out ``nnan`` and ``ninf``: the training kernel checks every update for NaN/Inf, and with
those flags LLVM may fold such checks away (umap removed blanket fastmath from its
SGD for this reason). ``nsz`` is left out too: together with ``reassoc`` it let LLVM
fold the finiteness check of an update away (tests/test_train_kernel.py catches this).

Inlining. Numba's ``inline="always"`` inlines at the level of Numba's IR and types the
callee again at every call site; with many small helpers inlined that way, this pass is
most of the training slice's compile time. The arithmetic helpers of the training
kernel (``score``, ``_dot``, the Adagrad and SGD coordinate steps, the bias steps, the
rank weight, the reset of non-finite values and max-norm clipping) are therefore plain
``njit`` functions, typed once, that LLVM inlines when it optimises the linked module.
``inline="always"`` stays on helpers that take row views (see ``JIT_NO_NRT``), on
``draw_negative`` (LLVM's heuristics leave it a call, inside the loop of negative
trials) and on the random streams' and filter's small helpers (called in that loop too;
typing them at each call site adds little compile time). The timings behind these
choices are in docs/design.md ("What was tried and measured").
"""

FASTMATH = {"reassoc", "contract", "arcp", "afn"}

#: Keyword arguments for ``numba.njit`` on kernels that run serially.
JIT = dict(nogil=True, cache=True, fastmath=FASTMATH, error_model="numpy")

#: Serial hot loops compiled without Numba's reference counting (NRT): every row view
#: and helper call would otherwise count references with atomic instructions on the
#: shared arrays' memory-info blocks (cache lines bouncing between threads, and calls
#: that spill vector registers).
#: Such a kernel must not allocate: its callers pass work arrays in. The helpers it
#: calls obey the same rule (the ordinal loss, which sorts and allocates, has its own
#: slice compiled with NRT). A helper that takes row views (``U[u]``) is inlined by Numba
#: (``inline="always"``), so that it is compiled with the kernel's flags; compiled on
#: its own, with NRT, it would count references (see the module docstring).
#: ``_nrt`` is a private Numba option (checked with numba 0.68).
JIT_NO_NRT = dict(JIT, _nrt=False)

#: Keyword arguments for ``numba.njit`` on kernels that use ``prange``.
PJIT = dict(JIT, parallel=True)

#: A parallel kernel without reference counting: the epoch kernels of WARP and BPR, whose
#: ``prange`` body inlines the serial hot loop (the rules of ``JIT_NO_NRT`` apply to it).
PJIT_NO_NRT = dict(PJIT, _nrt=False)
