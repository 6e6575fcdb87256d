"""Borrowed array views for hot loops: no reference counting, no shared atomics.

Numba counts references to the memory behind every array: each row view (``V[j]``),
each array passed to a helper and each alias increments and later decrements a counter
in the array's memory-info block, with an atomic instruction. Training threads share
the parameter arrays, so those counters sit on cache lines that every thread writes
many times per positive; the lines bounce between cores and an update costs several
times its arithmetic.

:func:`borrow` returns the same array (data, shape, strides) without a memory-info
block. Numba skips reference counting for such arrays (the counting functions return
at once on a null block), and views taken from them are borrowed too. A kernel may
borrow the arrays it was called with, because the caller keeps them alive for the
whole call; a borrowed array must never be returned or stored beyond the call.
"""

from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


@intrinsic
def borrow(typingctx, array):
    """``array`` without its memory-info block (see the module docstring)."""
    if not isinstance(array, types.Array):
        return None
    sig = array(array)

    def codegen(context, builder, signature, args):
        source = make_array(signature.args[0])(context, builder, args[0])
        out = make_array(signature.return_type)(context, builder)
        populate_array(out, data=source.data, shape=source.shape, strides=source.strides,
                       itemsize=source.itemsize, meminfo=None)
        return out._getvalue()

    return sig, codegen
