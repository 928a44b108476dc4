"""BLAS's matrix product for kernels compiled without NRT (mbsim_ros._jit.kernel, routine).

numba's ``np.dot(a, b, out)`` lowers to BLAS's dgemm (numba_xxgemm, scipy's BLAS) but is
implemented as an overload returning ``out``, which numba types only with NRT on: a kernel
that multiplies matrices had to be compiled ``allocating``, and every view it takes is then
reference counted. ``gemm(a, b, out)`` is the same lowering (numba's own ``dot_3_mm``: the
shapes checked, dgemm, or dgemv / ddot where a side is a vector) as a statement returning
nothing, so that it compiles either way.
"""
from __future__ import annotations

from numba import types
from numba.core.errors import TypingError
from numba.core.typing import signature
from numba.extending import intrinsic
from numba.np.linalg import dot_3_mm, ensure_blas


@intrinsic
def gemm(typingctx, a, b, out):
    """out = a b (float64 matrices; a and b C- or F-ordered, out C-ordered), by BLAS's dgemm:
    numba's np.dot(a, b, out) without its return value (ValueError where the shapes do not
    agree)."""
    matrices = (a, b, out)
    if not all(isinstance(x, types.Array) and x.ndim == 2 and x.dtype == types.float64
               for x in matrices) or a.layout not in "CF" or b.layout not in "CF" \
            or out.layout != "C":
        raise TypingError(f"gemm: float64 matrices, a and b C- or F-ordered and out C-ordered, "
                          f"got {a}, {b}, {out}")

    def codegen(context, builder, sig, args):
        ensure_blas()
        dot_3_mm(context, builder, signature(out, a, b, out), args)
        return context.get_dummy_value()
    return signature(types.none, a, b, out), codegen
