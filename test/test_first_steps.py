"""Nothing loaded or compiled after construction (docs/SPEED.md): a Simulator loads at
construction every compiled function its steps can call from Python, as its integrator declares
them (Integrator.kernels), so that a first touchdown loads none (it loaded 15, 150 ms: 150 missed
ticks of the node at 1 kHz). Counted from numba's events (_jit.CompilerActivity), in a process
of its own: in this one, other tests have loaded the kernels already."""
from __future__ import annotations

import dis
import inspect
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def touchdown_counts() -> dict:
    """Solo12 held by scenarios.StandingController, released 2 cm above the floor: 150 steps
    through its touchdown with its servos (the general step, a contact step's every kernel:
    detection, rows, impacts, the cone solve), then 50 with the servos released (the fused
    step); what numba loaded and compiled in them, after construction."""
    import numpy as np

    from mbsim_ros._jit import CompilerActivity
    from mbsim_ros.contact.standing import standing_scene
    from mbsim_ros.model import example_robot_urdf
    from mbsim_ros.scenarios import LEGGED, StandingController
    from mbsim_ros.sim import Simulator

    scene = standing_scene(example_robot_urdf(LEGGED["solo12"]))
    sim = Simulator.from_scene(scene, dt=1e-3)
    controller = StandingController(sim, scene.q0)
    raised = scene.q0.copy()
    raised[2] += 0.02
    sim.reset(raised, np.zeros(sim.model.nv))
    contacts, impacting = [], 0
    with CompilerActivity() as activity:
        for _ in range(150):
            assert controller.step().converged
            contacts.append(len(sim.contacts()))
            impacting += sim.integrator.impacting_contacts
        sim.servos.release()
        for _ in range(50):
            assert sim.step(controller.tau).converged
    return {"loaded": sim.data.loaded, "loads": activity.loads, "compiles": activity.compiles,
            "compiled": activity.compiled, "contacts": contacts, "impacting": impacting}


def in_process_of_its_own() -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_touchdown_loads_and_compiles_nothing_after_construction():
    in_process_of_its_own()  # fills the cache (what it compiles is numba's first run)
    counts = in_process_of_its_own()
    # the run touched down after its first steps, and set contacts on energy (an impact)
    assert counts["contacts"][0] == 0 and max(counts["contacts"]) >= 4
    assert counts["impacting"] > 0
    assert counts["loaded"] > 20  # the construction loaded the step's kernels
    assert counts["compiles"] == 0, counts["compiled"]
    assert counts["loads"] == 0


def test_warm_steps_a_scene_through_its_first_touchdown():
    """`mbsim-ros warm` (what `make` runs on the shipped configs) takes a scene's general
    steps until a contact pushes: the kernels only a contact step calls are then in the cache
    for a later run's construction to load (on the shipped ball drop the brick lands at about
    step 120, 0.12 s)."""
    from mbsim_ros.cli import WARM_TOUCHDOWN_S, warm_steps
    from mbsim_ros.sim import Simulator

    sim = Simulator.from_scene(ROOT / "config/scenes/ball_drop.yaml")
    warm_steps(sim, None)
    assert sim.data.fused(sim.state) is None  # the general step (actuator models)
    assert 10 < sim.steps < WARM_TOUCHDOWN_S / sim.dt
    assert any(contact.force[2] > 0.0 for contact in sim.contacts())


def methods(cls: type) -> list:
    """The functions defined in ``cls`` but its constructor (which runs at construction):
    methods, properties, static and class methods."""
    found = []
    for name, member in vars(cls).items():
        if name == "__init__":
            continue
        member = getattr(member, "fget", member)
        function = getattr(member, "__func__", member)
        if inspect.isfunction(function):
            found.append(function)
    return found


def dispatchers_named(functions: list) -> set:
    """The numba dispatchers the functions load by their global name (nested functions and
    comprehensions included)."""
    from numba.core.dispatcher import Dispatcher

    found = set()
    for function in functions:
        codes = [function.__code__]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            named = (i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL")
            found |= {function.__globals__[name] for name in named
                      if isinstance(function.__globals__.get(name), Dispatcher)}
    return found


@pytest.mark.parametrize("name", ["euler", "variational", "compliant", "rigid"])
def test_an_integrator_declares_every_kernel_its_methods_call(name):
    """Integrator.kernels cannot rot: every compiled function a method of the integrator's
    classes (its own, its row solver's, its servos') names is among dispatched_kernels()."""
    from mbsim_ros.integrators import make_integrator
    from mbsim_ros.model import example_robot_urdf, load_urdf

    model = load_urdf(example_robot_urdf("solo_description/robots/solo12.urdf"))
    integrator = make_integrator(name, model, 1e-3)
    classes = [c for c in type(integrator).__mro__ if c.__module__.startswith("mbsim_ros.")]
    classes += [type(integrator.servos), type(getattr(integrator, "rows", integrator))]
    called = dispatchers_named([f for c in classes for f in methods(c)])
    missing = called - set(integrator.dispatched_kernels())
    assert len(called) >= 2 and not missing, sorted(f.__name__ for f in missing)


def test_the_step_declares_the_kernels_it_calls():
    from mbsim_ros import sim

    called = dispatchers_named([sim.step, *methods(sim.Simulator), *methods(sim.Data)])
    missing = called - set(sim.STEP_KERNELS)
    assert len(called) >= 2 and not missing, sorted(f.__name__ for f in missing)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(touchdown_counts()))
