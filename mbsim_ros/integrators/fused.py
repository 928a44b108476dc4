"""Steps that commit into the state in the same compiled call: the integrators with a compiled
step (euler, variational) pair it with the state's update, so that ``Simulator.step`` costs one
dispatch beyond the step itself, and ``Simulator.rollout`` runs N steps with no Python between
them. These are the pieces they share. A fused step returns BAD_ARG0 for a tau that is not
finite, before touching anything, and OUT_OF_BOUNDS for a result outside the physical bounds
(mbsim_ros/integrators/bounds.py), before writing it."""
from __future__ import annotations

import numpy as np
from numba import typeof

from .._jit import step
from ..dynamics.checks import all_finite


def bound_entry(kernel, arguments: tuple, nv: int):
    """The compiled entry point of ``kernel(tau, *arguments)`` for a C-contiguous float64 tau
    of nv entries: called directly it skips numba's dispatch on the argument types (about 50 ns
    an argument: 1.1 us of a 4.7 us Euler step on arm7). Its caller must pass exactly such a
    tau (a strided or integer one would be read as if it were one)."""
    signature = tuple(typeof(a) for a in (np.zeros(nv), *arguments))
    kernel.compile(signature)  # from numba's cache when it is there
    return kernel.overloads[signature].entry_point


@step
def begin_fused(tau, effort) -> bool:
    """The effort the step applies is its command (no servos, no actuators on this path);
    False (and nothing written) when tau is not finite: the step must not run."""
    if not all_finite(tau):
        return False
    for k in range(tau.shape[0]):
        effort[k] = tau[k]
    return True


@step
def within_bounds(q, v, bounds) -> bool:
    """|v| <= speed and lower <= q <= upper entry by entry (bounds = [speed (nv), lower (nq),
    upper (nq)]: bounds.PhysicalBounds.packed); a NaN is outside."""
    nv, nq = v.shape[0], q.shape[0]
    for k in range(nv):
        if not abs(v[k]) <= bounds[k]:
            return False
    for k in range(nq):
        if not (bounds[nv + k] <= q[k] and q[k] <= bounds[nv + nq + k]):
            return False
    return True


@step
def commit_state(q, v, q_next, v_next, acceleration, inv_dt, bounds) -> bool:
    """q, v <- the step's result; acceleration = (v_next - v) / dt (the mean acceleration the
    step did, as sim.step computes it). False, and nothing written, when the result is outside
    the physical bounds (within_bounds: the divergence guard, OUT_OF_BOUNDS)."""
    if not within_bounds(q_next, v_next, bounds):
        return False
    for k in range(q.shape[0]):
        q[k] = q_next[k]
    for k in range(v.shape[0]):
        acceleration[k] = (v_next[k] - v[k]) * inv_dt
        v[k] = v_next[k]
    return True


@step
def store_rollout_row(s, q, v, Q, V):
    """Row s of the rollout's trajectories: the state after step s."""
    for k in range(q.shape[0]):
        Q[s, k] = q[k]
    for k in range(v.shape[0]):
        V[s, k] = v[k]
