"""Steps of many particles in one compiled call: the integrators' own step kernels run per
particle, over contiguous chunks of particles, one chunk per thread (``prange``), each chunk with
its own preallocated workspaces (nothing is allocated per call). The serial and the parallel
entry points share one chunk routine, so both give the same bits as ``Simulator.step``."""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from .._jit import allocating, kernel, parallel_kernel, routine, step
from ..layout import Layout
from ..dynamics.checks import BAD_QUATERNION, OK, QUATERNION_TOLERANCE, all_finite
from ..integrators.euler import EULER_ROWS, euler_step_kernel
from ..integrators.servo import SERVO_ROWS
from ..integrators.variational import variational_step_kernel
from ..model.model import FREE_FLYER, I_IDX_Q, I_TYPE

BAD_X = 1

# Each chunk's float buffer (one row of the ProcessModel's per-chunk buffers), declared once.
VARIATIONAL_CHUNK = Layout("VariationalChunkViews", [
    ("q", ("nq",)), ("p", ("nv",)), ("q_out", ("nq",)), ("p_out", ("nv",)),
    ("v_out", ("nv",)), ("residual", (1,))], __name__)
EULER_CHUNK = Layout("EulerChunkViews", [
    ("q", ("nq",)), ("v", ("nv",)), ("q_out", ("nq",)), ("v_out", ("nv",)),
    ("work", (EULER_ROWS, "nv"))], __name__)
carve_variational_chunk = VARIATIONAL_CHUNK.carve  # (buf, nv, nq) -> VariationalChunkViews
carve_euler_chunk = EULER_CHUNK.carve              # (buf, nv, nq) -> EulerChunkViews


@kernel
def first_bad_row(joint_int, X) -> tuple:
    """(row, code) of the first state row with NaN/inf (code 1) or a free-flyer quaternion off
    unit norm (BAD_QUATERNION); (-1, OK) when every row is valid."""
    for n in range(X.shape[0]):
        row = X[n]
        if not all_finite(row):
            return n, BAD_X
        for i in range(joint_int.shape[0]):
            if joint_int[i, I_TYPE] == FREE_FLYER:
                iq = joint_int[i, I_IDX_Q]
                n2 = row[iq + 3] ** 2 + row[iq + 4] ** 2 + row[iq + 5] ** 2 + row[iq + 6] ** 2
                if math.fabs(n2 - 1.0) > QUATERNION_TOLERANCE:
                    return n, BAD_QUATERNION
    return -1, OK


@step
def load_row(X, n, q, second):
    """(q, second) = row n of X (copied, so that out may be X itself)."""
    nq = q.shape[0]
    for k in range(nq):
        q[k] = X[n, k]
    for k in range(second.shape[0]):
        second[k] = X[n, nq + k]


@step
def store_row(code, q, second, n, out):
    """Row n of out = (q, second), or NaN when the step failed (code != OK)."""
    nq = q.shape[0]
    for k in range(nq):
        out[n, k] = q[k] if code == OK else math.nan
    for k in range(second.shape[0]):
        out[n, nq + k] = second[k] if code == OK else math.nan


@allocating
def unservoed(nv):
    """A servo table, iq and saturation flags for steps without joint servos (the process
    model steps under efforts alone: docs/ESTIMATION.md)."""
    iq = np.empty(nv, dtype=np.int64)
    for j in range(nv):
        iq[j] = -1
    return np.zeros((SERVO_ROWS, nv)), iq, np.zeros(nv, dtype=np.int64)


@routine
def variational_chunk(joint_int, joint_real, gravity, damping, friction, armature, Yb, dt,
                      substeps, settings, ig3, broyden, tol, X, U, start, end, ws, vws, buf,
                      stats, codes, out):
    """Particles start..end-1: x = (q, p) -> (q', p') by variational_step_kernel.
    buf: the chunk's state vectors (VARIATIONAL_CHUNK)."""
    nv = U.shape[1]
    nq = X.shape[1] - nv
    q, p, q_out, p_out, v_out, residual = carve_variational_chunk(buf, nv, nq)
    servo, iq, saturated = unservoed(nv)
    for n in range(start, end):
        load_row(X, n, q, p)
        code = variational_step_kernel(joint_int, joint_real, gravity, damping, friction,
                                       armature, Yb, dt, substeps, q, p,
                                       U[0 if U.shape[0] == 1 else n], servo, iq, saturated,
                                       settings, ig3, broyden, tol, ws, vws, q_out, p_out,
                                       v_out, stats, residual)
        codes[n] = code
        store_row(code, q_out, p_out, n, out)


@routine
def euler_chunk(joint_int, joint_real, gravity, damping, friction, armature, dt, implicit,
                explicit, X, U, start, end, ws, buf, matrices, ints, codes, out):
    """Particles start..end-1: x = (q, v) -> (q', v') by euler_step_kernel.
    buf: the chunk's state vectors and Euler's work rows (EULER_CHUNK); matrices, ints: as
    euler_buffers makes them."""
    nv = U.shape[1]
    nq = X.shape[1] - nv
    q, v, q_out, v_out, work = carve_euler_chunk(buf, nv, nq)
    servo, iq, saturated = unservoed(nv)
    for n in range(start, end):
        load_row(X, n, q, v)
        code = euler_step_kernel(joint_int, joint_real, gravity, damping, friction, armature, dt,
                                 implicit, explicit, q, v, U[0 if U.shape[0] == 1 else n],
                                 servo, iq, saturated, ws, work, matrices, ints, q_out, v_out)
        codes[n] = code
        store_row(code, q_out, v_out, n, out)


@kernel
def variational_batch(joint_int, joint_real, gravity, damping, friction, armature, Yb, dt,
                      substeps, settings, ig3, broyden, tol, X, U, WS, VWS, BUF, STATS, codes,
                      out):
    """All particles in this thread (the first chunk's workspaces)."""
    variational_chunk(joint_int, joint_real, gravity, damping, friction, armature, Yb, dt,
                      substeps, settings, ig3, broyden, tol, X, U, 0, X.shape[0], WS[0], VWS[0],
                      BUF[0], STATS[0], codes, out)


@parallel_kernel
def variational_batch_parallel(joint_int, joint_real, gravity, damping, friction, armature, Yb,
                               dt, substeps, settings, ig3, broyden, tol, X, U, WS, VWS, BUF,
                               STATS, codes, out):
    """The particles in WS.shape[0] contiguous chunks, one per thread."""
    chunks, n = WS.shape[0], X.shape[0]
    for c in prange(chunks):
        variational_chunk(joint_int, joint_real, gravity, damping, friction, armature, Yb, dt,
                          substeps, settings, ig3, broyden, tol, X, U, c * n // chunks,
                          (c + 1) * n // chunks, WS[c],
                          VWS[c], BUF[c], STATS[c], codes, out)


@kernel
def euler_batch(joint_int, joint_real, gravity, damping, friction, armature, dt, implicit,
                explicit, X, U, WS, BUF, MATS, INTS, codes, out):
    euler_chunk(joint_int, joint_real, gravity, damping, friction, armature, dt, implicit,
                explicit, X, U, 0, X.shape[0], WS[0], BUF[0], MATS[0], INTS[0], codes, out)


@parallel_kernel
def euler_batch_parallel(joint_int, joint_real, gravity, damping, friction, armature, dt,
                         implicit, explicit, X, U, WS, BUF, MATS, INTS, codes, out):
    chunks, n = WS.shape[0], X.shape[0]
    for c in prange(chunks):
        euler_chunk(joint_int, joint_real, gravity, damping, friction, armature, dt, implicit,
                    explicit, X, U, c * n // chunks, (c + 1) * n // chunks, WS[c], BUF[c], MATS[c],
                    INTS[c], codes, out)


def thread_count() -> int:
    """The threads the parallel kernels run on (NUMBA_NUM_THREADS, set_num_threads)."""
    return numba.get_num_threads()
