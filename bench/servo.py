"""Joint servos (integrators/servo.py): accuracy of a position step against the linearised
joint's closed form at 1 and 10 ms (the order of convergence), the cost of a step with the
servos on against the same step under plain efforts, per integrator, on the 7-DOF arm; and, in
the compliant integrator, what solving a step again costs when a servo saturates against a whole
step (docs/CONTROL.md), on legged robots standing under StandingController.

    python bench/servo.py [--steps N] [--robots solo12 g1_hands talos]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.contact.standing import standing_scene
from mbsim_ros.model import example_robot_urdf, shipped_urdf
from mbsim_ros.scenarios import LEGGED, StandingController
from peers.timing import best_block_us

INTEGRATORS = [("euler", {}), ("euler", {"velocity_terms": "implicit"}), ("variational", {}),
               ("variational", {"order": 4}), ("compliant", {}), ("rigid", {})]
LABELS = ["euler", "euler-implicit", "variational", "variational o4", "compliant", "rigid"]
TARGET = np.array([0.3, 0.5, -0.2, -1.0, 0.1, 0.8, 0.0])


def step_error(integrator: str, options: dict, h: float) -> float:
    """Largest |q - closed form| over 1 s of a 0.1 rad step (omega 20 rad/s, zeta 0.7) on
    the pendulum without gravity."""
    model = load_urdf(shipped_urdf("pendulum").read_text().replace(
        'lower="-3.14159" upper="3.14159"', 'lower="-100" upper="100"'))
    model.gravity = np.zeros(3)
    inertia, kp, kd, target = 1.000001, 400.0, 28.0, 0.1
    omega, zeta = np.sqrt(kp / inertia), kd / (2.0 * np.sqrt(kp * inertia))
    wd = omega * np.sqrt(1.0 - zeta ** 2)
    sim = Simulator(model, h, integrator, **options)
    sim.servos.set_gains(p={"joint1": kp}, d={"joint1": kd})
    sim.servos.command(position={"joint1": target})
    worst = 0.0
    for _ in range(round(1.0 / h)):
        sim.step()
        t = sim.t
        exact = target * (1.0 - np.exp(-zeta * omega * t) * (
            np.cos(wd * t) + zeta / np.sqrt(1.0 - zeta ** 2) * np.sin(wd * t)))
        worst = max(worst, abs(sim.q[0] - exact))
    return worst


def step_cost(integrator: str, options: dict, servo: bool, steps: int) -> float:
    """us per Simulator.step on the arm: all seven joints servoed to TARGET, or zero effort."""
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, 1e-3, integrator, **options)
    if servo:
        names = [f"joint{k}" for k in range(1, 8)]
        sim.servos.set_gains(p=dict.fromkeys(names, 1000.0), d=dict.fromkeys(names, 30.0),
                             i=dict.fromkeys(names, 3000.0))
        sim.servos.command(position=TARGET)
    for _ in range(200):
        info = sim.step()
        if not info.converged:
            print(f"  {integrator} {options}: {info.message}")
            return np.nan
    best = np.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(steps):
            sim.step()
        best = min(best, (time.perf_counter() - start) / steps)
    return best * 1e6


def solve_again_cost(label: str) -> tuple[float, float]:
    """(whole step, solved again) in us: the compliant integrator's step at one state of the
    robot standing (after 0.2 s under StandingController), and the same step solved again from
    M~ before the servos' terms with the contacts found (what a newly saturated servo costs)."""
    scene = standing_scene(example_robot_urdf(LEGGED[label]))
    sim = Simulator.from_scene(scene, dt=1e-3)
    hold = StandingController(sim, scene.q0)
    for _ in range(200):
        hold.step()
    integrator, q, v = sim.integrator, sim.q.copy(), sim.v.copy()
    tau, q_out, v_out = np.zeros(sim.model.nv), np.zeros_like(q), np.zeros_like(v)
    whole = best_block_us(lambda: integrator._step(q, v, tau, q_out, v_out), 200, 5)
    again = best_block_us(lambda: integrator._solve(q, v, tau, q_out, v_out, again=True), 200, 5)
    return whole, again


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--robots", nargs="*", default=["solo12", "g1_hands", "talos"])
    args = parser.parse_args()
    print("position step, max |q - closed form| over 1 s (rad), 0.1 rad step, omega 20 rad/s, "
          "zeta 0.7")
    print(f"{'integrator':16s} {'h = 1 ms':>10s} {'h = 10 ms':>10s} {'ratio':>8s}")
    for label, (name, options) in zip(LABELS, INTEGRATORS):
        fine, coarse = step_error(name, options, 1e-3), step_error(name, options, 1e-2)
        print(f"{label:16s} {fine:10.2e} {coarse:10.2e} {coarse / fine:8.1f}")
    print("\narm7, us per Simulator.step (best of 5 x", args.steps, "steps)")
    print(f"{'integrator':16s} {'efforts':>8s} {'servos':>8s} {'ratio':>6s}")
    for label, (name, options) in zip(LABELS, INTEGRATORS):
        plain = step_cost(name, options, False, args.steps)
        servoed = step_cost(name, options, True, args.steps)
        print(f"{label:16s} {plain:8.1f} {servoed:8.1f} {servoed / plain:6.2f}")
    print("\ncompliant, a saturating servo: a step solved again against a whole step (us, best "
          "of 5 x 200 calls at one standing state)")
    print(f"{'robot':16s} {'whole':>8s} {'again':>8s} {'ratio':>6s}")
    for label in args.robots:
        whole, again = solve_again_cost(label)
        print(f"{label:16s} {whole:8.1f} {again:8.1f} {again / whole:6.2f}")


if __name__ == "__main__":
    main()
