"""examples/ekf_node.py (its own process): an EKF on the node's encoders and gyro, over real
DDS in lockstep pacing. Its commands are replayed offline for the truth (a lockstep node is
bit for bit the offline Simulator); the filter must beat its own sensors."""
from __future__ import annotations

import numpy as np
from ros_harness import run_example

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.config import initial_configuration, read_config
from mbsim_ros.model import shipped_urdf

CONFIG = "examples/ekf_config.yaml"
STEPS = 2000
SETTLE = 200  # steps left out: the filter starts from the first reading


def test_ekf_example_beats_its_encoders(tmp_path):
    """Over 2 s: the filter's position error RMS below the encoders' (1e-3 rad noise and
    4096-count quantisation: 1.1e-3 rad), its velocity error RMS below a fifth of the
    encoders' velocity noise (0.05 rad/s): the process model carries the velocity."""
    out = tmp_path / "ekf.npz"
    run_example(__name__, tmp_path, ["--config", CONFIG],
                ["examples/ekf_node.py", "--ros-args", "-p", f"steps:={STEPS}",
                 "-p", f"out:={out}"])
    run = np.load(out)
    model = load_urdf(shipped_urdf("double_pendulum"))
    sim = Simulator(model, 1e-3, "variational")
    sim.reset(initial_configuration(model, read_config(CONFIG).initial_positions))
    truth_q, truth_v = [sim.q.copy()], [sim.v.copy()]
    for u in run["u"][1:]:
        assert sim.step(u).converged
        truth_q.append(sim.q.copy())
        truth_v.append(sim.v.copy())
    truth_q, truth_v = np.array(truth_q)[SETTLE:], np.array(truth_v)[SETTLE:]
    z = run["z"][SETTLE:]
    rms = lambda e: float(np.sqrt(np.mean(e ** 2)))  # noqa: E731
    encoder_q, encoder_v = rms(z[:, :2] - truth_q), rms(z[:, 2:] - truth_v)
    ekf_q, ekf_v = rms(run["q_hat"][SETTLE:] - truth_q), rms(run["v_hat"][SETTLE:] - truth_v)
    print(f"encoders q {encoder_q:.2e} v {encoder_v:.2e}; EKF q {ekf_q:.2e} v {ekf_v:.2e}")
    assert encoder_q > 5e-4, "the encoders are noisy (else the test proves nothing)"
    assert ekf_q < encoder_q
    assert ekf_v < 0.2 * encoder_v
