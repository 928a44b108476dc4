"""Controllers that test/test_campaign.py names as module:function (imported by Ray workers
from this folder, which the tests put on PYTHONPATH)."""
import os
import signal
from pathlib import Path


def killer(sim, options):
    """A factory: the first run to reach it (no marker file yet) kills its own worker process
    mid-run, as a crash would; every later run, the retried one included, runs through."""
    marker = Path(options["marker"])

    def control(t, state, readings):
        if t > 0.05 and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return {"position": {"joint2": 0.6}}

    return control


def hold_joint2(t, state, readings):
    return {"position": {"joint2": 0.6}}


def joint_pd(sim, options):
    """A factory: an explicit joint PD (options kp, kd) on the start posture, as efforts on
    every one-DOF joint (with a command delay of a step: the delayed PD that diverges on
    Solo12, test/test_divergence.py)."""
    import numpy as np

    model = sim.model
    dofs = [(model.idx_q[i], model.idx_v[i]) for i in range(model.njoints)
            if model.joint_kinds[i] != "free_flyer"]
    iq, iv = (np.array(column) for column in zip(*dofs))
    target, effort = sim.q[iq].copy(), np.zeros(model.nv)

    def control(t, state, readings):
        effort[iv] = options["kp"] * (target - state.q[iq]) - options["kd"] * state.v[iv]
        return {"effort": effort}

    return control
