"""Guards at the door of every public dynamics function: shapes in Python (cheap), finiteness
and unit quaternions inside the kernel (one pass, no temporaries), named errors out."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .._jit import kernel, step
from ..codes import BAD_ARG0, BAD_ARG1, BAD_ARG2, BAD_QUATERNION, DIVERGED, OK, SINGULAR
from ..model.model import FREE_FLYER, I_IDX_Q, I_NQ, I_TYPE, ModelError

QUATERNION_TOLERANCE = 1e-6
FLOAT64 = np.dtype(np.float64)


def as_vector(x, n: int, name: str) -> np.ndarray:
    """x as a contiguous float64 vector of length n, or ValueError naming the argument."""
    if type(x) is not np.ndarray or x.dtype is not FLOAT64:
        try:
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a vector of {n} numbers: {exc}") from None
    if x.shape != (n,) or x.ndim != 1:
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    return x


def kernel_vectors(model, vectors: tuple, names: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """``vectors`` as ``as_vector`` checks them (the one named "q": the model's nq entries, the
    others its nv), each C-contiguous and writable (copied if not): the argument types a
    convenience function's kernel is compiled for."""
    out = []
    for x, name in zip(vectors, names):
        x = as_vector(x, model.nq if name == "q" else model.nv, name)
        out.append(x if x.flags.c_contiguous and x.flags.writeable else np.array(x))
    return tuple(out)


@step
def fits_model(joint_int, armature, q, v, w) -> bool:
    """q has the model's nq entries, v and w its nv (the armature's length)."""
    nj = joint_int.shape[0]
    nq = joint_int[nj - 1, I_IDX_Q] + joint_int[nj - 1, I_NQ] if nj > 0 else 0
    nv = armature.shape[0]
    return q.shape[0] == nq and v.shape[0] == nv and w.shape[0] == nv


@step
def all_finite(x) -> bool:
    total = 0.0
    for k in range(x.shape[0]):
        total += x[k] * 0.0
    return total == 0.0


@step
def max_abs(x, m) -> float:
    """max |x[k]| over the first m entries; infinity if one of them is NaN (a NaN must never
    pass a test as small)."""
    largest = 0.0
    for k in range(m):
        a = abs(x[k])
        if a > largest or a != a:
            largest = a if a == a else math.inf
    return largest


@step
def input_code(joint_int, q, arg1, arg2) -> int:
    """0 when q, arg1, arg2 are finite and every free-flyer quaternion in q is unit."""
    if not all_finite(q):
        return BAD_ARG0
    if not all_finite(arg1):
        return BAD_ARG1
    if not all_finite(arg2):
        return BAD_ARG2
    for i in range(joint_int.shape[0]):
        if joint_int[i, I_TYPE] == FREE_FLYER:
            iq = joint_int[i, I_IDX_Q]
            n2 = q[iq + 3] ** 2 + q[iq + 4] ** 2 + q[iq + 5] ** 2 + q[iq + 6] ** 2
            if math.fabs(n2 - 1.0) > QUATERNION_TOLERANCE:
                return BAD_QUATERNION
    return OK


def raise_for(code: int, names: tuple[str, ...], model) -> None:
    """Turn a kernel's input code into the ValueError a caller can act on."""
    if code in (BAD_ARG0, BAD_ARG1, BAD_ARG2):
        raise ValueError(f"{names[code - 1]} contains NaN or infinity")
    if code == BAD_QUATERNION:
        raise ValueError(f"{names[0]}: a free-flyer quaternion (qx, qy, qz, qw) is not of unit "
                         f"norm (tolerance {QUATERNION_TOLERANCE})")
    if code == SINGULAR:
        raise ValueError(f"model '{model.name}': the joint-space inertia is singular at this "
                         f"configuration")
    if code == DIVERGED:
        raise ValueError(f"model '{model.name}': the result is not finite (diverged)")
    raise AssertionError(f"unknown kernel code {code}")


@kernel
def all_finite_kernel(x) -> bool:
    return all_finite(x)


@kernel
def state_code_kernel(joint_int, q, v) -> int:
    """input_code of a state (q, v): all that ``energy`` checks before it computes."""
    return input_code(joint_int, q, v, v)


def check_state(model, q: np.ndarray, v: np.ndarray) -> None:
    """The ValueError ``energy(model, q, v)`` raises, without its kernel (compiling a small
    one costs a tenth of the time): q and v finite, every free-flyer quaternion unit."""
    code = state_code_kernel(model.joint_int, q, v)
    if code != OK:
        raise_for(code, ("q", "v"), model)


def singular_joints(model, mass_matrix: Callable[[np.ndarray], np.ndarray] | None = None
                    ) -> list[str]:
    """The joints along which the joint-space inertia M (armature included) is singular at the
    model's neutral configuration clamped into its limits (joints whose moving bodies have no
    mass or inertia along them, and no armature): a Cholesky factorisation that records each
    pivot below 1e-12 of M's largest diagonal entry, zeroes that column and goes on, so that
    every such joint is found in one pass (the k-th pivot is the part of M_kk not explained by
    the joints before k). ``mass_matrix(q)``: M from a kernel the caller compiles anyway (an
    integrator's, Integrator.mass_matrix); the CRBA by default."""
    from .crba import crba  # crba's module imports this one

    if model.nv == 0:
        return []
    q = model.clamped(model.neutral())[0]
    M = crba(model, q) if mass_matrix is None else mass_matrix(q)
    scale = max(float(np.abs(np.diag(M)).max()), 1e-300)
    L = np.zeros_like(M)
    singular = []
    for k in range(M.shape[0]):
        pivot = M[k, k] - L[k, :k] @ L[k, :k]
        if pivot <= 1e-12 * scale:
            joint = model.joint_names[int(np.searchsorted(model.idx_v, k, side="right")) - 1]
            if joint not in singular:
                singular.append(joint)
            continue
        L[k, k] = math.sqrt(pivot)
        L[k + 1:, k] = (M[k + 1:, k] - L[k + 1:, :k] @ L[k, :k]) / L[k, k]
    return singular


def check_mass_matrix(model, mass_matrix: Callable[[np.ndarray], np.ndarray] | None = None
                      ) -> None:
    """ModelError (one line) naming every joint along which M is singular (singular_joints,
    ``mass_matrix`` as there), with the remedy: armature on them. The Simulator and the
    ProcessModel call it with their integrator's mass_matrix."""
    joints = singular_joints(model, mass_matrix)
    if joints:
        example = ", ".join(f"'{name}': 1e-4" for name in joints[:2])
        raise ModelError(f"model '{model.name}': the joint-space inertia is singular: the bodies "
                         f"that joints {', '.join(joints)} move have no mass or inertia along "
                         f"them; give these joints armature (rotor inertia, kg m^2 or kg), e.g. "
                         f"model.set_armature({{{example}}}) or the config/scene key "
                         f"armature: {{joint: value}}")
