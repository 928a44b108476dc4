"""Loop closures (the "generalized dynamics solver" blog post): a planar four-bar linkage
built with the builder, its mobility (1
DOF, redundant rows reported), its closure error under projection, and its motion against the
loop equation solved independently (a 1-DOF Lagrangian in the crank angle, scipy)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbsim_ros.cli import main
from mbsim_ros.dynamics.closures import ConstraintKinematics, mobility
from mbsim_ros.mechanism import Builder
from mbsim_ros.scenarios import COUPLER, CRANK, GROUND, LENGTH, MASS, ROCKER, WIDTH, four_bar
from mbsim_ros.sim import Simulator

G = 9.81


def unit(angle: float) -> np.ndarray:
    """The bar direction after turning about +y by angle, as (x, z)."""
    return np.array([np.cos(angle), -np.sin(angle)])


def loop_positions(crank_angle: float, branch: float):
    """Bar angles (world) and centres of mass (x, z) from the loop equation
    a e(t1) + b e(t2) = d e_x + c e(t3): the coupler's end where the circles about the crank's
    tip (radius b) and the rocker's pivot (radius c) meet, on the given branch."""
    tip, pivot = CRANK * unit(crank_angle), np.array([GROUND, 0.0])
    span = pivot - tip
    distance = np.linalg.norm(span)
    along = (distance ** 2 + COUPLER ** 2 - ROCKER ** 2) / (2 * distance)
    across = np.sqrt(COUPLER ** 2 - along ** 2)
    axis = span / distance
    end = tip + along * axis + branch * across * np.array([-axis[1], axis[0]])
    angles = np.array([crank_angle, np.arctan2(-(end - tip)[1], (end - tip)[0]),
                       np.arctan2(-(end - pivot)[1], (end - pivot)[0])])
    return angles, [tip / 2, (tip + end) / 2, (pivot + end) / 2]


def loop_equation_solution(crank_angle0: float, branch: float, duration: float):
    """The crank angle over time from Lagrange's equation in the one coordinate:
    M(t1) t1'' + 1/2 M'(t1) t1'^2 + V'(t1) = 0, M and V from the loop positions."""
    masses = list(MASS.values())
    inertias = [m * (LENGTH[n] ** 2 + WIDTH ** 2) / 12 for n, m in MASS.items()]

    def mass_and_potential(t1: float, h: float = 1e-6):
        (a1, c1), (a0, c0) = loop_positions(t1 + h, branch), loop_positions(t1 - h, branch)
        coms = loop_positions(t1, branch)[1]
        mass = sum(m * np.sum(((p1 - p0) / (2 * h)) ** 2) + i * ((w1 - w0) / (2 * h)) ** 2
                   for m, i, p1, p0, w1, w0 in zip(masses, inertias, c1, c0, a1, a0))
        return mass, sum(m * G * com[1] for m, com in zip(masses, coms))

    def rhs(t, y, h=1e-5):
        (m_up, v_up), (m_down, v_down) = mass_and_potential(y[0] + h), \
            mass_and_potential(y[0] - h)
        slope = (m_up - m_down) / (2 * h)
        return [y[1], -(0.5 * slope * y[1] ** 2 + (v_up - v_down) / (2 * h))
                / mass_and_potential(y[0])[0]]

    # rtol 1e-8: within 7e-7 rad of rtol 1e-10 over 2 s (whose finite-difference right-hand
    # side makes the solver crawl: 33 s), far below the first-order errors compared
    return solve_ivp(rhs, (0.0, duration), [crank_angle0, 0.0], rtol=1e-8, atol=1e-8,
                     dense_output=True).sol


def run(mechanism, dt: float, duration: float, reference):
    """(max crank-angle error, max closure error) of a simulated run."""
    sim = Simulator.from_mechanism(mechanism, dt=dt)
    kinematics = ConstraintKinematics(mechanism.model)
    angle_error = closure_error = 0.0
    for _ in range(int(round(duration / dt))):
        assert sim.step().converged
        closure_error = max(closure_error, np.abs(kinematics.rows(mechanism.constraints,
                                                                  sim.q)[1]).max())
        angle_error = max(angle_error, abs(sim.q[0] - reference(sim.t)[0]))
    return angle_error, closure_error


@pytest.fixture(scope="module")
def mechanism():
    return four_bar()


@pytest.fixture(scope="module")
def reference(mechanism):
    q0 = Simulator.from_mechanism(mechanism, dt=1e-3).q  # projected onto the loop
    branch = next(s for s in (1.0, -1.0)
                  if abs(np.angle(np.exp(1j * (loop_positions(q0[0], s)[0][1]
                                               - q0[0] - q0[1])))) < 1e-9)
    return loop_equation_solution(q0[0], branch, 10.0)


def test_four_bar_has_one_dof(mechanism):
    q0 = Simulator.from_mechanism(mechanism, dt=1e-3).q
    found = mobility(ConstraintKinematics(mechanism.model), mechanism.constraints, q0)
    assert (found.dof, found.rank, found.redundant, found.singular) == (1, 2, [], False)
    assert found.closure_error < 1e-12


def test_redundant_closure_rows_are_reported_not_fatal():
    """A revolute-like closure (all but ry) on a planar loop: y, rx and rz repeat the plane."""
    mechanism = four_bar(("x", "y", "z", "rx", "rz"))
    sim = Simulator.from_mechanism(mechanism, dt=1e-3)
    found = mobility(ConstraintKinematics(mechanism.model), mechanism.constraints, sim.q)
    assert found.dof == 1
    assert [r.split()[-1] for r in found.redundant] == ["y", "rx", "rz"]
    for _ in range(50):
        assert sim.step().converged


def test_four_bar_motion_matches_the_loop_equation(mechanism, reference):
    """10 s at 2 ms: closure error < 1e-8 m with projection (measured < 1e-12); crank angle
    within 4 mrad of the loop-equation solution (measured 3.2e-3 over the first 2 s at 2 ms,
    1.6e-3 at 1 ms: first order)."""
    coarse, closure = run(mechanism, 2e-3, 10.0, reference)
    assert closure < 1e-8
    assert coarse < 6e-3
    fine, _ = run(mechanism, 1e-3, 2.0, reference)
    assert fine < 2e-3


def test_a_stretched_out_closure_is_a_singular_configuration():
    """Two links closed on a world point at full reach: the closure's x row vanishes there."""
    b = Builder("stretched")
    for k, parent in ((1, "world"), (2, "link1")):
        b.add_body(f"link{k}", 1.0, box=(0.5, 0.02, 0.02), com=(0.25, 0, 0))
        b.add_joint(f"joint{k}", "revolute", parent, f"link{k}",
                    origin=(0 if k == 1 else 0.5, 0, 0), axis=(0, 1, 0))
    b.add_point("tip", [0.5, 0, 0], body="link2")
    b.add_point("target", [1.0, 0, 0])
    b.add_closure("tip", "target", ["x", "z"])
    mechanism = b.build()
    found = mobility(ConstraintKinematics(mechanism.model), mechanism.constraints,
                     mechanism.q0)
    assert found.singular and (found.rank, found.generic_rank) == (1, 2)


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "four_bar" / "four_bar.yaml"


def test_inspect_reports_the_true_dof_of_a_urdf_with_closures(capsys):
    assert main(["inspect", "--config", str(EXAMPLE), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["nv"] == 3 and summary["dof"] == 1
    mobility_found = summary["mobility"]
    assert mobility_found["redundant_constraints"] == []
    assert not mobility_found["singular_configuration"]
    assert mobility_found["closure_error"] < 1e-12


def test_the_urdf_closure_moves_like_the_builder_one(tmp_path):
    out = tmp_path / "four_bar.npz"
    assert main(["simulate", "--config", str(EXAMPLE), "--integrator", "compliant",
                 "--dt", "0.002", "--steps", "200", "--out", str(out)]) == 0
    built = Simulator.from_mechanism(four_bar(), dt=2e-3)
    for _ in range(200):
        built.step()
    np.testing.assert_allclose(np.load(out)["q"][-1], built.q, atol=1e-9)


def test_a_closure_naming_an_unknown_link_is_refused(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text(EXAMPLE.read_text().replace("frame_b: rocker_tip", "frame_b: nowhere")
                      .replace("four_bar.urdf", str(EXAMPLE.parent / "four_bar.urdf")))
    with pytest.raises(SystemExit) as refused:
        main(["inspect", "--config", str(config)])
    assert refused.value.code == 2
    assert "closures[0].frame_b: 'nowhere' is not a link of the model" in capsys.readouterr().err


def test_plot_draws_forces_and_animates_the_linkage(tmp_path):
    out, png, gif = tmp_path / "four_bar.npz", tmp_path / "four_bar.png", tmp_path / "bar.gif"
    assert main(["simulate", "--config", str(EXAMPLE), "--integrator", "compliant",
                 "--dt", "0.002", "--steps", "30", "--forces", "--out", str(out)]) == 0
    data = np.load(out)
    assert data["joint_wrenches"].shape == (31, 3, 6)
    assert list(data["closure_labels"]) == ["closures[0] coupler_tip-rocker_tip x",
                                            "closures[0] coupler_tip-rocker_tip z"]
    assert main(["plot", str(out), "--out", str(png), "--animate", str(gif)]) == 0
    assert png.stat().st_size > 10000 and gif.stat().st_size > 10000
