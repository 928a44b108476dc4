"""Figures of docs/CLOSED_LOOPS.md: the examples of the blog post "Using lots of linear algebra
to create a generalized dynamics solver", run with the builder.

    python bench/closed_loops.py      -> docs/figures/closed_loops_*.png, closed_loops_four_bar.gif
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

from mbsim_ros.mechanism import Builder  # noqa: E402
from mbsim_ros.plotting import ForceRecorder, animate, plot  # noqa: E402
from mbsim_ros.scenarios import X0, four_bar, two_springs, two_springs_ode  # noqa: E402
from mbsim_ros.sim import Simulator  # noqa: E402

FIGURES = ROOT / "docs" / "figures"


def springs_figure() -> None:
    """The two-spring point mass, 700 steps of 0.02 s, against scipy (rtol 1e-12)."""
    sim = Simulator.from_mechanism(two_springs(), dt=0.02)
    t, z = [0.0], [sim.q[2]]
    for _ in range(700):
        sim.step()
        t.append(sim.t)
        z.append(sim.q[2])
    reference = solve_ivp(two_springs_ode, (0, 14), np.concatenate([X0, np.zeros(3)]),
                          rtol=1e-12, atol=1e-12, dense_output=True).sol
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(t, z, label="builder + compliant, dt = 0.02 s")
    ax.plot(t, reference(np.array(t))[2], "--", label="scipy solve_ivp")
    ax.set(xlabel="t [s]", ylabel="z of the point [m]", title="the blog post's two springs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(FIGURES / "closed_loops_springs.png", dpi=110)


def pendulum_figure() -> None:
    """The post's rigid pendulum: the vertical force on the fixed point over time."""
    b = Builder("pendulum")
    pivot = b.add_point("pivot", [0, 0, 1.0])
    bob = b.add_point("bob", [math.sin(1.2), 0, 1.0 - math.cos(1.2)], mass=1.0)
    b.add_link(pivot, bob)
    mechanism = b.build()
    sim = Simulator.from_mechanism(mechanism, dt=1e-3)
    link = mechanism.constraints[0]
    t, vertical = [], []
    for _ in range(4000):
        sim.step()
        n = (sim.q - np.array([0, 0, 1.0])) / np.linalg.norm(sim.q - np.array([0, 0, 1.0]))
        tension = -sim.closure_forces()[link.name][0]
        t.append(sim.t)
        vertical.append(tension * -n[2])   # the rod pulls the pivot towards the bob
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(t, vertical)
    ax.set(xlabel="t [s]", ylabel="vertical force on the pivot [N]",
           title="the blog post's rigid pendulum, 1 kg, 1 m, dt = 1 ms")
    fig.tight_layout()
    fig.savefig(FIGURES / "closed_loops_pendulum.png", dpi=110)


def four_bar_figures() -> None:
    sim = Simulator.from_mechanism(four_bar(), dt=2e-3)
    steps = 1000
    recorder = ForceRecorder(sim, steps)
    t, q, energy = np.zeros(steps + 1), np.zeros((steps + 1, 3)), np.zeros(steps + 1)
    for k in range(steps + 1):
        if k:
            sim.step()
        t[k], q[k], energy[k] = sim.t, sim.q, sim.energy()
        recorder.record(k)
    data = {"t": t, "q": q, "energy": energy, "joint_names": np.array(sim.model.joint_names),
            **recorder.result(steps)}
    plot(data, FIGURES / "closed_loops_four_bar.png", "four-bar linkage, dt = 2 ms")
    animate({**data, **{k: v[:300] for k, v in data.items() if k in
                        ("t", "origins", "segments", "limbs")}},
            FIGURES / "closed_loops_four_bar.gif", frames=30, fps=10)


if __name__ == "__main__":
    springs_figure()
    pendulum_figure()
    four_bar_figures()
    print(f"written    {FIGURES}/closed_loops_*")
