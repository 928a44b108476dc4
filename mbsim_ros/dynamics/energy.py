"""Kinetic and gravitational potential energy of the moving bodies."""
from __future__ import annotations


from .checks import OK, as_vector, input_code, raise_for
from .kinematics import inertia_times_motion, joint_velocity, kinematics_step
from .._jit import kernel
from ..model.model import I_PARENT
from .workspace import carve, workspace


@kernel
def energy_kernel(joint_int, joint_real, gravity, armature, q, v, ws, out):
    """out = (kinetic, potential): sum 1/2 V_i . (Y_i V_i) + sum 1/2 armature_k v_k^2 and
    -sum m_i g . c_i (world frame; potential zero at the world origin, the fixed base's mass is
    left out)."""
    code = input_code(joint_int, q, v, v)
    if code != OK:
        return code
    nj = joint_int.shape[0]
    oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small = carve(
        ws, nj, v.shape[0])
    kinetic = 0.0
    potential = 0.0
    for i in range(nj):
        kinematics_step(i, joint_int, joint_real, q, oR, op, oS, oY, Rq, pq)
        p = joint_int[i, I_PARENT]
        joint_velocity(i, joint_int, oS, v, tmp[0])
        for r in range(6):
            ov[i, r] = tmp[0, r] + (ov[p, r] if p >= 0 else 0.0)
        inertia_times_motion(oY[i], ov[i], tmp[1])
        for r in range(6):
            kinetic += 0.5 * ov[i, r] * tmp[1, r]
        potential -= gravity[0] * oY[i, 1] + gravity[1] * oY[i, 2] + gravity[2] * oY[i, 3]
    for k in range(v.shape[0]):
        kinetic += 0.5 * armature[k] * v[k] * v[k]
    out[0] = kinetic
    out[1] = potential
    return OK


def energy(model, q, v) -> tuple[float, float]:
    """(kinetic, potential) energy in joules at (q, v) with the model's gravity."""
    import numpy as np

    q = as_vector(q, model.nq, "q")
    v = as_vector(v, model.nv, "v")
    out = np.empty(2)
    code = energy_kernel(model.joint_int, model.joint_real, model.gravity, model.armature, q,
                         v, workspace(model), out)
    if code != OK:
        raise_for(code, ("q", "v"), model)
    return float(out[0]), float(out[1])
