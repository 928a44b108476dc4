"""What a call from Python costs beside the physics (docs/SPEED.md, "One arena"), side by side
in one process, each figure the best of 7 blocks (us per call):

- ``aba()``, ``rnea()``, ``crba()`` against pinocchio's, at a random state (arm7, a chain of 10
  links);
- the explicit Euler step (``Simulator.step()``, as bench/peers times it) against pinocchio's
  ABA + semi-implicit Euler (``peers.engines.Pinocchio``);
- ``Simulator.step`` against its compiled entry (``Data.fused``) called from Python with the
  bound arguments: what the Simulator's Python adds;
- that entry against the same step inside a compiled loop (``Simulator.rollout``'s kernel, per
  step): what crossing from Python into the kernel costs (arm7, Panda); and the entry given a
  tau that is not finite, which it refuses before stepping: the crossing alone, without the
  step's own cost or its eviction of Python's caches.

Run: `python bench/arena.py` (pinocchio installed: `make bench`).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros.dynamics import aba, crba, rnea  # noqa: E402
from mbsim_ros.config import resolve_urdf  # noqa: E402
from mbsim_ros.model import chain_urdf, load_urdf, shipped_urdf  # noqa: E402

from peers.dispatch import aba_problem  # noqa: E402
from peers.engines import Ours, Pinocchio  # noqa: E402
from peers.models import describe  # noqa: E402
from peers.timing import block  # noqa: E402

STEPS = 100   # steps per block of the stepping rows
ROUNDS = 21   # blocks of each call, interleaved (a neighbour's burst hits every row alike)


def best_us(calls: dict, per_block: dict) -> dict:
    """us per call of each of ``calls`` (label -> a block of per_block[label] calls): the best
    of ROUNDS blocks, the labels taking turns (after an untimed block of each)."""
    best = {label: np.inf for label in calls}
    for label, call in calls.items():
        call()
    for _ in range(ROUNDS):
        for label, call in calls.items():
            best[label] = min(best[label], block(call, 1))
    return {label: seconds / per_block[label] * 1e6 for label, seconds in best.items()}


def repeated(call, n: int):
    def run():
        for _ in range(n):
            call()
    return run


def dynamics_rows(name: str, source) -> None:
    import pinocchio as pin

    model, (q, v, tau), pm, pd = aba_problem(describe(source, name))
    calls = {"aba()": lambda: aba(model, q, v, tau),
             "pinocchio.aba": lambda: pin.aba(pm, pd, q, v, tau),
             "rnea()": lambda: rnea(model, q, v, tau),
             "pinocchio.rnea": lambda: pin.rnea(pm, pd, q, v, tau),
             "crba()": lambda: crba(model, q),
             "pinocchio.crba": lambda: pin.crba(pm, pd, q)}
    row = best_us({k: repeated(call, 1000) for k, call in calls.items()},
                  dict.fromkeys(calls, 1000))
    print(f"dynamics {name} [us]: " + " | ".join(f"{k} {x:.2f}" for k, x in row.items())
          + f" || aba / pinocchio {row['aba()'] / row['pinocchio.aba']:.2f}")


def euler_row() -> None:
    desc = describe(shipped_urdf("arm7"), "arm7")
    ours, peer = Ours(desc, 1e-3, "euler", velocity_terms="explicit"), Pinocchio(desc, 1e-3)
    rng = np.random.default_rng(3)
    q0, v0 = rng.uniform(-0.5, 0.5, (2, 7))

    def stepping(engine):
        def run():
            engine.reset(q0, v0)
            for _ in range(STEPS):
                engine.step()
        return run

    labels = ("ours Euler (explicit)", "pinocchio ABA+Euler")
    row = best_us({labels[0]: stepping(ours), labels[1]: stepping(peer)},
                  dict.fromkeys(labels, STEPS))
    print("explicit Euler step arm7 [us]: " + " | ".join(f"{k} {x:.2f}" for k, x in row.items())
          + f" || ours / pinocchio {row['ours Euler (explicit)'] / row['pinocchio ABA+Euler']:.2f}")


def overhead_rows(robot: str) -> None:
    model = load_urdf(shipped_urdf("arm7") if robot == "arm7" else resolve_urdf(robot))
    for integrator, options in (("euler", {"velocity_terms": "explicit"}), ("euler", {}),
                                ("variational", {})):
        sim = Simulator(model, 1e-3, integrator, **options)
        sim.start_at(model.clamped(model.neutral())[0])  # (Panda's neutral is off its limits)
        tau = np.zeros(model.nv)
        taus = np.zeros((STEPS, model.nv))
        Q, V = np.empty((STEPS, model.nq)), np.empty((STEPS, model.nv))
        entry, rollout, arguments = sim.data.fused(sim.state)

        def stepped():
            sim.reset()
            for _ in range(STEPS):
                sim.step(tau)

        def entered():
            sim.reset()
            for _ in range(STEPS):
                entry(tau, *arguments)

        def rolled():
            sim.reset()
            rollout(taus, Q, V, *arguments)

        refused = np.full(model.nv, np.nan)

        def crossed():
            for _ in range(STEPS):
                entry(refused, *arguments)

        row = best_us({"Simulator.step": stepped, "entry": entered, "compiled loop": rolled,
                       "reset": sim.reset, "entry, refused tau": crossed},
                      {"Simulator.step": STEPS, "entry": STEPS, "compiled loop": STEPS,
                       "reset": 1, "entry, refused tau": STEPS})
        for label in ("Simulator.step", "entry", "compiled loop"):
            row[label] -= row["reset"] / STEPS
        del row["reset"]
        label = integrator + (" explicit" if options else "")
        print(f"{robot} {label} [us/step]: " + " | ".join(f"{k} {x:.2f}" for k, x in row.items())
              + f" || Simulator.step adds {row['Simulator.step'] - row['entry']:.2f}, "
              f"Python -> kernel {row['entry'] - row['compiled loop']:.2f}")


def main() -> int:
    for name, source in (("arm7", shipped_urdf("arm7")), ("chain10", chain_urdf(10))):
        dynamics_rows(name, source)
    euler_row()
    for robot in ("arm7", "panda"):
        overhead_rows(robot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
