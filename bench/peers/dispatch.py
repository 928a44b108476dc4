"""What a call costs from Python, beside the physics: our ``aba()`` against ``pinocchio.aba`` on
the same model, what ``Simulator.step`` adds to its integrator's kernel, and N steps in one
call (``Simulator.rollout``) against one call per step and against ``mujoco.rollout``. All in
this process, medians of repeated calls (timing.py)."""
from __future__ import annotations

import numpy as np

from mbsim_ros import Simulator
from mbsim_ros.dynamics import aba

from peers.models import Description, mjcf, urdf
from peers.timing import block, median_us

ROLLOUT_STEPS = 1000


def aba_problem(desc: Description) -> tuple:
    """(our model, (q, v, tau) at a random state, pinocchio's model and data) of desc."""
    import pinocchio as pin

    model = desc.model()
    rng = np.random.default_rng(2)
    state = (rng.uniform(-1, 1, model.nq), rng.uniform(-1, 1, model.nv),
             rng.uniform(-1, 1, model.nv))
    pm = pin.buildModelFromXML(urdf(desc))
    return model, state, pm, pm.createData()


def aba_costs(desc: Description, calls: int) -> dict[str, float]:
    """us per forward-dynamics call from Python at a random state, ours and pinocchio's."""
    import pinocchio as pin

    model, (q, v, tau), pm, pd = aba_problem(desc)
    return {"ours aba()": median_us(lambda: aba(model, q, v, tau), calls),
            "pinocchio.aba": median_us(lambda: pin.aba(pm, pd, q, v, tau), calls)}


def step_overhead(desc: Description, integrator: str, steps: int) -> dict[str, float]:
    """us per step over `steps` steps from the same start: Simulator.step, and its integrator's
    compiled step alone (the fused kernel that Simulator.step calls, through the same compiled
    entry point: the step and the state's update, called from Python with its bound
    arguments). The difference is what the Simulator's Python adds."""
    sim = Simulator(desc.model(), 1e-3, integrator)
    tau = np.zeros(sim.model.nv)
    advance, _, arguments = sim.data.fused(sim.state)

    def stepped():
        sim.reset()
        for _ in range(steps):
            sim.step(tau)

    def kernel():
        sim.reset()
        for _ in range(steps):
            advance(tau, *arguments)

    stepped(), kernel()
    best = {"Simulator.step": min(block(stepped, 1) for _ in range(5)),
            "kernel": min(block(kernel, 1) for _ in range(5))}
    return {label: seconds / steps * 1e6 for label, seconds in best.items()}


def rollout_costs(desc: Description, integrator: str) -> dict[str, float]:
    """us per step over ROLLOUT_STEPS steps: one Simulator.rollout call, one Simulator.step call
    per step, and mujoco.rollout of the same model (RK4 and Euler) when MuJoCo is installed."""
    sim = Simulator(desc.model(), 1e-3, integrator)
    taus = np.zeros((ROLLOUT_STEPS, sim.model.nv))
    tau = taus[0]

    def rolled():
        sim.reset()
        sim.rollout(taus)

    def stepped():
        sim.reset()
        for _ in range(ROLLOUT_STEPS):
            sim.step(tau)

    rolled()
    costs = {"ours rollout": min(block(rolled, 1) for _ in range(3)) / ROLLOUT_STEPS * 1e6,
             "ours step loop": min(block(stepped, 1) for _ in range(3)) / ROLLOUT_STEPS * 1e6}
    try:
        import mujoco
        from mujoco import rollout
    except ImportError:
        return costs
    for scheme in ("RK4", "Euler"):
        model = mujoco.MjModel.from_xml_string(mjcf(desc, 1e-3, scheme))
        data = mujoco.MjData(model)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        start = np.empty(mujoco.mj_stateSize(model, spec))
        mujoco.mj_getState(model, data, start, spec)
        state = np.empty((1, ROLLOUT_STEPS, start.size))

        def mj_rolled():
            rollout.rollout(model, data, start[None], nstep=ROLLOUT_STEPS, state=state)

        mj_rolled()
        costs[f"mujoco.rollout {scheme}"] = min(block(mj_rolled, 1) for _ in range(3)) \
            / ROLLOUT_STEPS * 1e6
    return costs


def dispatch_workloads(descs: dict[str, Description], quick: bool) -> dict:
    calls = 2000 if quick else 20000
    results = {"aba": {name: aba_costs(desc, calls) for name, desc in descs.items()}}
    arm = descs["arm7"]
    results["overhead"] = {integrator: step_overhead(arm, integrator, ROLLOUT_STEPS)
                           for integrator in ("euler", "variational")}
    results["rollout"] = {integrator: rollout_costs(arm, integrator)
                          for integrator in ("euler", "variational")}
    return results


def summary_lines(results: dict) -> list[str]:
    lines = []
    for name, row in results["aba"].items():
        lines.append(f"aba from Python {name} [us]: ours {row['ours aba()']:.2f} | pinocchio "
                     f"{row['pinocchio.aba']:.2f} || ours / pinocchio "
                     f"{row['ours aba()'] / row['pinocchio.aba']:.2f}")
    for integrator, row in results["overhead"].items():
        lines.append(f"Simulator.step over its kernel arm7 {integrator} [us]: step "
                     f"{row['Simulator.step']:.2f} | kernel {row['kernel']:.2f} || adds "
                     f"{row['Simulator.step'] - row['kernel']:.2f}")
    for integrator, row in results["rollout"].items():
        cells = " | ".join(f"{k} {v:.2f}" for k, v in row.items())
        lines.append(f"rollout arm7 {integrator} {ROLLOUT_STEPS} steps [us/step]: {cells}")
    return lines
