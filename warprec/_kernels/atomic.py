"""Atomic integer add for Numba kernels (LLVM's ``atomicrmw add``).

The training kernel hands out chunks of the epoch's order to its threads through one
shared counter: a thread that finishes early (or whose core was taken by another
process) claims the next chunk instead of waiting for a fixed share of the others.
"""

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def fetch_add(typingctx, array, index, value):
    """Atomically add ``value`` to ``array[index]`` (a 1-D int64 array) and return the
    value it held before. Monotonic ordering: the counter itself is the only shared
    state it orders."""
    if not (isinstance(array, types.Array) and array.ndim == 1 and array.dtype == types.int64
            and isinstance(index, types.Integer) and isinstance(value, types.Integer)):
        return None
    sig = types.int64(array, index, value)

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        ary = context.make_array(array_type)(context, builder, args[0])
        idx = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, array_type, ary, [idx])
        val = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, val, "monotonic")

    return sig, codegen
