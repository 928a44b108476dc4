"""Steps of many particles through contact in one compiled call: the compliant integrator's
compiled step (integrators/compliant_step.compliant_advance) per particle, each particle
detecting its own contacts and starting from the held memory, over a contiguous chunk of
particles on the buffers of an integrator of its own (estimation/contact.py). In parallel, one
chunk per thread: each thread makes one such call, which releases the GIL (numba's ``prange``
cannot take the chunk, a tuple of arrays, into its outlined loop body). One routine for every
particle, so every row gives the bits of ``ProcessModel.step`` (and of ``Simulator.step``).

A chunk is the tuple ``(arguments, memory, impacts, held, held_impacts)``: compliant_advance's
arguments after tau bound to the chunk's integrator and state (``Integrator.fused``), the
integrator's active-set memory and impact memory (the arrays inside ``arguments``) and the held
copies every particle starts from. A particle whose step the compiled path hands back
(UNFINISHED: a buffer to grow, the clarabel fallback) keeps that code in ``codes`` and its
row of ``out`` untouched; the ProcessModel runs it on the general path.
"""
from __future__ import annotations

from numba import njit

from .._jit import KERNEL_OPTIONS, step
from ..codes import OK, UNFINISHED
from ..integrators.compliant_step import compliant_advance, unpack_compliant
from .batch import load_row, store_row

# an entry point (_jit.kernel: without NRT, so that unboxing the chunk's arrays makes no
# reference-counted meminfos, 15 a call with it) that releases the GIL: the threads of a
# parallel batch run it side by side
threaded_kernel = njit(cache=True, nogil=True, **KERNEL_OPTIONS)


@step
def restore_memory(memory, impacts, held, held_impacts):
    """The held active-set memory and impact phases into the integrator's."""
    for i in range(memory.shape[0]):
        for j in range(memory.shape[1]):
            memory[i, j] = held[i, j]
    keys, points, count, _, _ = impacts
    held_keys, held_points, held_count = held_impacts
    for e in range(held_count[0]):
        for j in range(keys.shape[1]):
            keys[e, j] = held_keys[e, j]
            points[e, j] = held_points[e, j]
    count[0] = held_count[0]


@threaded_kernel
def contact_batch(X, U, start, end, chunk, codes, out):
    """Particles start..end-1: x = (q, v) -> (q', v') by compliant_advance from the held
    memory (it commits into its table's q and v)."""
    arguments, memory, impacts, held, held_impacts = chunk
    bound = unpack_compliant(arguments[0])
    q, v = bound.q, bound.v
    for n in range(start, end):
        restore_memory(memory, impacts, held, held_impacts)
        load_row(X, n, q, v)
        code = compliant_advance(U[0 if U.shape[0] == 1 else n], *arguments)
        codes[n] = code
        if code != UNFINISHED:  # (handed back: the row is left as it was, out may be X)
            store_row(code, q, v, n, out)
    return OK
