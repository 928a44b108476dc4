"""The compiled pass behind a recording's /tf: every joint's transform from its parent body's
frame to its own body's frame at q (the URDF joint's placement times the joint's motion), as
tf2's TransformStamped holds it: translation (x, y, z), rotation quaternion (x, y, z, w)."""
from __future__ import annotations

from .._jit import kernel
from ..dynamics.kinematics import joint_motion
from ..model.model import FREE_FLYER, I_IDX_Q, I_TYPE, R_AXIS, R_POS, R_ROT
from ..sensors.kernels import matrix_quaternion

AXIS0, POS0, ROT0 = R_AXIS.start, R_POS.start, R_ROT.start


@kernel
def link_transforms(joint_int, joint_real, q, Rq, pq, R, out):
    """out[i] = (translation, quaternion x y z w) of body i in its parent body's frame (the
    world for a root joint). A free-flyer whose placement is the identity copies its q (no
    rounding: /tf then equals the odometry bit for bit). Rq, R: 3x3 and pq: 3 scratch."""
    for i in range(joint_int.shape[0]):
        row = joint_real[i]
        jtype, iq = joint_int[i, I_TYPE], joint_int[i, I_IDX_Q]
        if (jtype == FREE_FLYER and row[ROT0] == 1.0 and row[ROT0 + 4] == 1.0
                and row[ROT0 + 8] == 1.0 and row[POS0] == 0.0 and row[POS0 + 1] == 0.0
                and row[POS0 + 2] == 0.0):
            for k in range(7):
                out[i, k] = q[iq + k]
            continue
        joint_motion(jtype, row[AXIS0:AXIS0 + 3], q, iq, Rq, pq)
        for r in range(3):
            out[i, r] = (row[POS0 + r] + row[ROT0 + 3 * r] * pq[0]
                         + row[ROT0 + 3 * r + 1] * pq[1] + row[ROT0 + 3 * r + 2] * pq[2])
            for c in range(3):
                R[r, c] = (row[ROT0 + 3 * r] * Rq[0, c] + row[ROT0 + 3 * r + 1] * Rq[1, c]
                           + row[ROT0 + 3 * r + 2] * Rq[2, c])
        matrix_quaternion(R, out[i])
