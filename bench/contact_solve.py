"""The warm-started contact solve (docs/SPEED.md, "A warm-started contact solve"): Newton steps
per step and the cost of a step, ours with the warm start (the default) and without it (the
interior-point method alone), beside MuJoCo, all in one process; how far the warm start
moves each run's trajectory (from the cold one's, and from clarabel's); and the pieces of the
warm step: whole and without contact (step_parts), and bench/profile_step.py's contact_row
(the cone solve, the velocity terms) on Solo12.

- inclined box (bench/peers/contact.py): 0.5 s at 1 ms, friction 0.3 (slides) and 0.7
  (sticks); MuJoCo's default settings on the same scene;
- Solo12 standing under joint PD (bench/peers/quadruped.py): 1 s; MuJoCo with elliptic cones.

Step times are medians over the steps (per_call). Run:
`.venv/bin/python bench/contact_solve.py`.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (bench/peers/__main__.py says why)

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers.contact import MuJoCoScene, OursScene, box_scene, simulate  # noqa: E402
from profile_step import contact_row  # noqa: E402
from peers.timing import best_block_us  # noqa: E402

from mbsim_ros.integrators.compliant_step import C_STEPS, F_DETECTION  # noqa: E402
from peers.quadruped import (DT, ENGINES, KP, KD, OursStanding, solo12, stand,  # noqa: E402
                             standing, start_position)

SOLVES = {"warm": {}, "cold": {"warm_start": False}, "clarabel": {"solver": "clarabel"}}


def newton_steps(sim, step, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(Newton steps of each step, the positions q after each step) of `steps` calls of step()
    (which returns the StepInfo)."""
    counts, path = np.empty(steps, dtype=np.int64), np.empty((steps, sim.model.nq))
    for k in range(steps):
        info = step()
        if not info.converged:
            raise RuntimeError(info.message)
        counts[k], path[k] = info.iterations, sim.q
    return counts, path


def step_parts(label: str, sim, tau: np.ndarray) -> None:
    """The compiled step from the sim's state, whole and without detection (so without rows,
    their Delassus matrix, the cone solve and the impulses): what contact costs of a step."""
    integrator, state = sim.integrator, sim.state
    q0, v0 = state.q.copy(), state.v.copy()
    entry, _, arguments = sim.data.fused(state)
    flags = integrator._constants[1]

    def step():
        state.q[:], state.v[:] = q0, v0
        entry(tau, *arguments)

    whole = best_block_us(step, 300)
    steps = integrator._counts[C_STEPS]
    flags[F_DETECTION] = 0
    without = best_block_us(step, 300)
    flags[F_DETECTION] = 1
    print(f"{label}: the compiled step {whole:.1f} us ({steps} Newton steps), without detection "
          f"and rows {without:.1f} us: contact {whole - without:.1f} us")


def box_rows(seconds: float = 0.5, dt: float = 1e-3) -> None:
    steps = int(round(seconds / dt))
    for mu in (0.3, 0.7):
        paths, cells, held = {}, [], None
        for label, options in SOLVES.items():
            scene = OursScene(box_scene(mu), dt, **options)
            counts, paths[label] = newton_steps(scene.sim, scene.sim.step, steps)
            held = scene if label == "warm" else held
            if label != "clarabel":
                _, us = simulate(OursScene(box_scene(mu), dt, **options), seconds, dt)
                cells.append(f"{label} {counts.mean():.2f} Newton steps/step, {us:.1f} us")
        _, mujoco = simulate(MuJoCoScene(box_scene(mu), dt), seconds, dt)
        print(f"inclined box mu {mu}: " + " | ".join(cells) + f" | MuJoCo {mujoco:.1f} us"
              + f" | {moved(paths)}")
        step_parts(f"inclined box mu {mu}, warm, at {seconds:g} s", held.sim,
                   np.zeros(held.sim.model.nv))


def moved(paths: dict) -> str:
    """The largest distance (mm) between the runs' base positions over the run."""
    def gap(a, b):
        return np.abs(paths[a][:, :3] - paths[b][:, :3]).max() * 1e3
    return (f"warm - cold {gap('warm', 'cold'):.4f} mm, warm - clarabel "
            f"{gap('warm', 'clarabel'):.4f} mm, cold - clarabel {gap('cold', 'clarabel'):.4f} mm")


def solo12_rows(seconds: float = 1.0) -> None:
    desc = solo12()
    q_ref = standing(desc)
    steps = int(round(seconds / DT))
    paths, cells, held = {}, [], None
    for label, options in SOLVES.items():
        robot = OursStanding(desc, "compliant", **options)
        robot.reset(q_ref, np.zeros(desc.nv))
        robot.place_root(start_position())

        def step():
            q, v = robot.state()
            robot.apply(KP * (q_ref - q) - KD * v)
            return robot.sim.step(robot.tau)

        counts, paths[label] = newton_steps(robot.sim, step, steps)
        held = robot if label == "warm" else held
        if label != "clarabel":
            run = stand(label, lambda d: OursStanding(d, "compliant", **options), desc, seconds)
            settled = counts[int(0.5 / DT):]
            cells.append(f"{label} {counts.mean():.2f} Newton steps/step ({settled.mean():.2f} "
                         f"after 0.5 s), {run.step_us:.1f} us, slip {run.slip * 1e3:.3f} mm")
    mujoco = stand("MuJoCo elliptic", ENGINES["MuJoCo elliptic"][1], desc, seconds)
    print("solo12 standing: " + " | ".join(cells)
          + f" | MuJoCo elliptic {mujoco.step_us:.1f} us, slip {mujoco.slip * 1e3:.3f} mm"
          + f" | {moved(paths)}")
    # the pieces of the warm step, standing still (the last run's PD efforts held)
    step_parts(f"solo12 standing under PD, warm, at {seconds:g} s", held.sim, held.tau)
    contact_row("solo12 standing under PD, warm", held.sim, held.tau)


def main() -> int:
    print(f"load average {os.getloadavg()[0]:.2f}")
    box_rows()
    solo12_rows()
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
