"""Software prefetch for Numba kernels (LLVM's ``llvm.prefetch`` intrinsic).

Training visits positives in random order, so on large data nearly every row it touches
is a cache miss. Asking for the rows of the next few samples (and of the next negative
candidates) while the current one is computed overlaps those memory latencies. A
prefetch is only a hint: it never faults and never changes results.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._flags import inlined

_LINE_BYTES = 64


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that ``array[index]`` (its first element for a row of a 2-D array) will be read."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        ary = context.make_array(array_type)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        idx = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, array_type, ary,
                                       [idx] + [zero] * (array_type.ndim - 1))
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@inlined
def prefetch_row(matrix, row):
    """Prefetch every cache line of ``matrix[row]`` (a C-contiguous 2-D array)."""
    step = max(_LINE_BYTES // matrix.itemsize, 1)
    flat = matrix[row]
    for offset in range(0, flat.shape[0], step):
        prefetch(flat, offset)
