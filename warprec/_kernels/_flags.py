"""Compilation flags shared by every kernel.

``FASTMATH`` allows reassociation (so reductions vectorise) but deliberately leaves
out ``nnan`` and ``ninf``: the training kernel checks every update for NaN/Inf, and with
those flags LLVM may fold such checks away (umap removed blanket fastmath from its
SGD for this reason). ``nsz`` is left out too: together with ``reassoc`` it let LLVM
fold the finiteness check of an update away (tests/test_train_kernel.py catches this).

Inlining. Numba's IR-level inlining (``njit(inline=...)``) copies the callee's code into
the caller and types it again at every call site; with many small helpers inlined that
way, this pass is most of the training kernels' compile time. The arithmetic helpers of
the training kernel (``score``, ``dot``, the Adagrad and SGD coordinate steps, the bias
steps, the rank weight, the reset of non-finite values and max-norm clipping) are
therefore plain ``njit`` functions, typed once, that LLVM inlines when it optimises the
linked module. IR-level inlining (:func:`inlined`) stays on helpers that take row views
(see ``JIT_NO_NRT``), on ``draw_negative`` (LLVM's heuristics leave it a call, inside the
loop of negative trials), on the random streams' and filter's small helpers (called in
that loop too) and on the epoch skeleton and the losses' steps plugged into it. The
timings behind these choices are in docs/design.md ("What was tried and measured").

Numba copies an inlined function block by block, and the copy of each block copies the
function's whole table of variables: the cost grows with the product of the two, so a
helper that has absorbed its own helpers (a loss's step, with its violator search and
its updates) costs many times the sum of its parts to inline. :func:`inlined` helpers
are therefore inlined into the function being compiled only, never into another helper
while that one is prepared for inlining: a helper's own calls are inlined once its code
has been copied into the compiled function (the same code in the end, each piece copied
once, at its own size).
"""

from numba import njit

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
#: (:func:`inlined`), so that it is compiled with the kernel's flags; compiled on its
#: own, with NRT, it would count references (see the module docstring).
#: ``_nrt`` is a private Numba option (checked with numba 0.68).
JIT_NO_NRT = dict(JIT, _nrt=False)

#: Keyword arguments for ``numba.njit`` on kernels that use ``prange``. (Not the training
#: epochs: their slices run on Python threads, see ``epoch.compile_epoch``.)
PJIT = dict(JIT, parallel=True)


def _into_compiled_functions(expr, caller, callee):
    """Numba's inlining cost model of :func:`inlined` helpers (called with the call
    expression and the caller's and the callee's ``FunctionIR``): inline unless the
    caller is itself an :func:`inlined` helper."""
    return not getattr(caller.func_id.func, "inlined", False)


def inlined(func):
    """``numba.njit`` (serial flags) for a helper inlined at Numba's IR level into the
    compiled functions that call it, directly or through other such helpers (see the
    module docstring). Called from Python, it runs as a compiled function of its own
    (whose helpers are then calls)."""
    func.inlined = True
    return njit(inline=_into_compiled_functions, **JIT)(func)
