"""examples/controllers/solo12_pd.py's law as an in-process campaign controller
(``type: python``, factory): the reference a ROS controller in lockstep must equal bit for
bit."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "controllers"))

from solo12_pd import gravity_feedforward, standing_posture  # noqa: E402

from mbsim_ros.ros.commands import ActuatedJoints  # noqa: E402


def make(sim, options):
    joints = ActuatedJoints(sim.model)
    posture = standing_posture(0.8, -1.6)
    feedforward = gravity_feedforward(posture)
    target = np.array([posture[name] for name in joints.names])
    tau_ff = np.array([feedforward[name] for name in joints.names])
    kp, kd = options["kp"], options["kd"]
    effort = np.zeros(sim.model.nv)

    def control(t, state, readings):
        q, v = state.q[joints.idx_q], state.v[joints.idx_v]
        effort[joints.idx_v] = kp * (target - q) - kd * v + tau_ff
        return {"effort": effort}

    return control
