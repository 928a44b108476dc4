"""The model-building API (mbsim_ros.mechanism) on the post's first example (a point mass
hung from two fixed points by two springs, the blog post "Using lots of linear
algebra to create a generalized dynamics solver") against scipy, the same chain built here
and read from URDF, and bad input."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbsim_ros.dynamics import crba, rnea
from mbsim_ros.model import ModelError, chain_urdf, load_urdf
from mbsim_ros.mechanism import Builder
from mbsim_ros.scenarios import X0, two_springs, two_springs_ode
from mbsim_ros.sim import Simulator


@pytest.fixture(scope="module")
def reference():
    return solve_ivp(two_springs_ode, (0.0, 14.0), np.concatenate([X0, np.zeros(3)]),
                     rtol=1e-12, atol=1e-12, dense_output=True).sol


def max_error(mechanism, reference, dt: float, steps: int) -> float:
    sim = Simulator.from_mechanism(mechanism, dt=dt)
    error = 0.0
    for _ in range(steps):
        assert sim.step().converged
        error = max(error, float(np.abs(sim.q - reference(sim.t)[:3]).max()))
    return error


def test_two_springs_match_scipy_at_first_order(reference):
    """700 steps of 0.02 s (the post's run): the step is semi-implicit Euler, first order, so
    the error is O(dt): measured 4.0e-3 m at 0.02 s (the swing is 0.2 m), halving with dt."""
    mechanism = two_springs()
    coarse = max_error(mechanism, reference, 0.02, 700)
    fine = max_error(mechanism, reference, 0.0025, 5600)
    assert coarse < 5e-3
    assert fine < 6e-4
    assert 7.0 < coarse / fine < 9.5  # 8x smaller step, 8x smaller error: first order


def test_builder_chain_equals_the_urdf_chain():
    """Two cylinder links on revolute joints, with a fixed tip body merged into the last link:
    the same mass matrix and bias forces as the URDF chain with the tip's mass added."""
    L, m, r = 0.1, 0.1, 0.01
    b = Builder()
    for k in (1, 2):
        b.add_body(f"link{k}", m, cylinder=(r, L), com=(0, 0, -L / 2))
        b.add_joint(f"joint{k}", "revolute", "world" if k == 1 else "link1", f"link{k}",
                    origin=(0, 0, 0 if k == 1 else -L), axis=(0, 1, 0) if k == 1 else (1, 0, 0))
    b.add_body("tip", 0.05, sphere=0.01)
    b.add_joint("tip_mount", "fixed", "link2", "tip", origin=(0, 0, -L))
    ours = b.build().model
    tip = (f'<joint name="tip_mount" type="fixed"><parent link="link2"/><child link="tip"/>'
           f'<origin xyz="0 0 {-L}"/></joint><link name="tip"><inertial><mass value="0.05"/>'
           f'<inertia ixx="2e-6" iyy="2e-6" izz="2e-6" ixy="0" ixz="0" iyz="0"/></inertial>'
           f'</link></robot>')
    urdf = load_urdf(chain_urdf(2, link_length=L, link_mass=m, radius=r).replace("</robot>",
                                                                                  tip))
    q, v = np.array([0.3, -0.7]), np.array([1.1, 0.4])
    np.testing.assert_allclose(crba(ours, q), crba(urdf, q), atol=1e-14)
    np.testing.assert_allclose(rnea(ours, q, v, np.zeros(2)), rnea(urdf, q, v, np.zeros(2)),
                               atol=1e-13)
    assert ours.joint_names == urdf.joint_names


@pytest.mark.parametrize("build, message", [
    (lambda b: b.add_body("crank", 0.0), "body 'crank': the mass must be positive"),
    (lambda b: b.add_point("bob", [0, 0, 1], mass=-1.0), "body 'bob': the mass must be positive"),
    (lambda b: (b.add_point("p", [0, 0, 0]), b.add_point("m", [0, 0, 1], mass=1.0),
                b.add_spring("p", "m", stiffness=0.0), b.build()),
     "spring p-m: the stiffness must be positive"),
    (lambda b: (b.add_point("p", [0, 0, 1]), b.add_point("m", [0, 0, 1], mass=1.0),
                b.add_spring("p", "m", stiffness=5.0, rest_length=0.0), b.build()),
     "spring p-m: zero rest length between coincident points"),
    (lambda b: (b.add_point("m", [0, 0, 1], mass=1.0), b.add_closure("m", "nowhere"),
                b.build()), "closure m-nowhere: no point, body or frame named 'nowhere'"),
])
def test_bad_input_names_the_item(build, message):
    with pytest.raises(ModelError, match=message):
        build(Builder())


def test_a_point_mass_is_three_prismatic_joints():
    model = two_springs().model
    assert model.joint_names == ["freepoint_x", "freepoint_y", "freepoint_z"]
    np.testing.assert_allclose(crba(model, X0), np.eye(3))
    assert math.isclose(model.total_mass, 1.0)


def test_a_free_body_starts_at_its_pose_and_falls():
    b = Builder()
    b.add_body("brick", 2.0, box=(0.1, 0.2, 0.05))
    b.add_joint("float", "free", "world", "brick", origin=(0.1, 0.2, 1.0), rpy=(0, 0, math.pi))
    mechanism = b.build()
    np.testing.assert_allclose(mechanism.q0, [0.1, 0.2, 1.0, 0, 0, 1, 0], atol=1e-15)
    sim = Simulator.from_mechanism(mechanism, dt=1e-3)
    for _ in range(100):
        sim.step()
    assert sim.q[2] == pytest.approx(1.0 - 9.81 * 0.1 * 0.101 / 2, rel=1e-12)  # a t (t + h) / 2


def test_run_config_passes_its_closures_as_a_file(tmp_path):
    import yaml

    from mbsim_ros.cli import ros_arguments

    example = Path(__file__).resolve().parents[1] / "examples" / "four_bar" / "four_bar.yaml"
    with ros_arguments(str(example), []) as args:
        params_file = Path(args[args.index("--params-file") + 1])
        params = yaml.safe_load(params_file.read_text())
    assert not params_file.exists(), "the parameters file goes with the block"
    values = params["/**"]["ros__parameters"]
    assert "closures" not in values and values["closures_file"] == str(example)
