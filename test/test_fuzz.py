"""Fuzzing what users write and send (hypothesis): random scenes, configs and commands with
wrong types, NaN, huge and negative values, unknown and missing keys and deep nesting either
load and simulate 100 steps with a finite state (or a step that reports its failure and stops),
or are refused with one ValueError; never another exception, a hang or a NaN state.

The example counts are bounded for `make test`; bench/fuzz.py runs the same properties longer.
"""
from __future__ import annotations

import copy
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mbsim_ros import Simulator
from mbsim_ros.build import load_simulated, make_simulator, start_configuration
from mbsim_ros.config import config_from, set_armature
from mbsim_ros.contact.scene import load_scene
from mbsim_ros.integrators.servo import POSITION
from mbsim_ros.model import load_urdf, shipped_urdf
from mbsim_ros.ros.commands import ActuatedJoints, CommandError, CommandSlot

EXAMPLES = int(os.environ.get("MBSIM_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                derandomize=not os.environ.get("MBSIM_FUZZ_RANDOM"),  # the suite: fixed draws
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SCENE = {"ground": {"friction": 0.6, "height": 0.0},
         "boxes": [{"size": [0.4, 0.4, 0.1], "position": [1.0, 0.0, 0.05]}],
         "models": [{"sphere": {"radius": 0.05, "mass": 1.0}, "position": [0.0, 0.0, 0.3],
                     "name": "ball"},
                    {"box": {"size": [0.1, 0.2, 0.05], "mass": 2.0},
                     "position": [0.5, 0.0, 0.2], "name": "brick"}]}
CONFIG = {"urdf_path": "double_pendulum", "integrator": "variational", "dt": 0.001,
          "initial_positions": {"joint1": 0.5, "joint2": -0.3},
          "armature": {"joint1": 0.01}, "variational": {"tolerance": 1e-10, "order": 2}}

numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**12, 10**12),
                    st.sampled_from([0.0, -1.0, 1e300, -1e300, 1e-300, float("nan")]))
leaves = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=8))
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=12)
# a replaced value is a number half of the time (in or out of range: the schema's bounds and the
# simulation are what is probed), anything else otherwise (the schema's types)
replacements = st.one_of(st.floats(-10.0, 10.0), numbers, values)
keys = st.one_of(st.text(max_size=10), st.sampled_from(
    ["friction", "frction", "position", "positon", "radius", "mass", "size", "ground", "models",
     "boxes", "gravity", "normal", "stiffness", "youngs_modulus", "orientation", "name",
     "integrator", "dt", "initial_positions", "joint1", "armature", "tolerance", "order",
     "variational", "gains", "p", "sensors", "encoders", "urdf_path", "sphere", "box"]))


@st.composite
def mutated(draw, base: dict) -> dict:
    """base with a few random edits: a value replaced (any type), a key added or removed, at
    any depth."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        node = data
        while True:  # walk down a random path
            children = [k for k, v in (node.items() if isinstance(node, dict)
                                       else enumerate(node)) if isinstance(v, (dict, list))]
            if not children or draw(st.booleans()):
                break
            node = node[draw(st.sampled_from(children))]
        action = draw(st.sampled_from(["replace", "add", "remove"]))
        if isinstance(node, list):
            if node and action != "add":
                index = draw(st.integers(0, len(node) - 1))
                if action == "remove":
                    node.pop(index)
                else:
                    node[index] = draw(replacements)
            else:
                node.append(draw(values))
        elif action == "add" or not node:
            node[draw(keys)] = draw(values)
        else:
            key = draw(st.sampled_from(sorted(node, key=str)))
            if action == "remove":
                node.pop(key)
            else:
                node[key] = draw(replacements)
    return data


def run_100_steps(sim: Simulator) -> None:
    """100 steps: each either converges to a finite state or reports its failure and the run
    stops there (what the node does: it pauses, it never publishes NaN)."""
    for _ in range(100):
        info = sim.step()
        if not info.converged:
            assert info.message
            return
        assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))


def refused_or_none(load, data):
    """load(data), or None when it is refused with one ValueError (a message, no traceback of
    another kind); counted as a hypothesis event (--hypothesis-show-statistics)."""
    try:
        loaded = load(data)
    except ValueError as exc:
        assert str(exc).strip()
        event(f"{getattr(load, '__name__', 'load')}: refused")
        return None
    event(f"{getattr(load, '__name__', 'load')}: accepted")
    return loaded


@FUZZ
@given(mutated(SCENE))
def test_a_random_scene_loads_and_simulates_or_is_refused(scene):
    loaded = refused_or_none(load_scene, scene)
    if loaded is None:
        return
    sim = refused_or_none(lambda s: Simulator.from_scene(s, dt=1e-3), scene)
    if sim is not None:
        run_100_steps(sim)


def simulator_of(config):
    simulated = load_simulated(urdf=config.urdf(), floating_base=config.floating_base,
                               balance_inertia=config.balance_inertia)
    set_armature(simulated.model, config.armature)
    q0 = start_configuration(simulated, config.initial_positions)
    options = getattr(config, config.integrator)
    options = options.model_dump(exclude_unset=True) if options is not None else {}
    return make_simulator(simulated, q0, config.integrator, config.dt, options)


@FUZZ
@given(mutated(CONFIG))
def test_a_random_config_loads_and_simulates_or_is_refused(data):
    config = refused_or_none(config_from, data)
    if config is None:
        return
    if config.urdf_path not in ("double_pendulum", "pendulum"):  # a random file name: refused
        refused_or_none(lambda c: c.urdf(), config)
        return
    sim = refused_or_none(simulator_of, config)
    if sim is not None:
        run_100_steps(sim)


ARM = load_urdf(shipped_urdf("arm7"))
JOINTS = ActuatedJoints(ARM)
names = st.lists(st.one_of(st.sampled_from(JOINTS.names), st.text(max_size=6)), max_size=9)
floats = st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                            st.sampled_from([1e308, -1e308, 0.0, -5.0])), max_size=9)


def servoed_arm() -> tuple[Simulator, CommandSlot]:
    sim = Simulator(ARM, dt=1e-3, integrator="variational")
    sim.servos.set_gains(p={n: 300.0 for n in JOINTS.names}, d={n: 10.0 for n in JOINTS.names})
    return sim, CommandSlot(ARM, JOINTS, sim.servos.gains)


def step_with(sim: Simulator, slot: CommandSlot) -> None:
    """The node's tick: the accepted command's interfaces and targets into the servos, its
    efforts as tau."""
    nv = ARM.nv
    command = slot.latest
    assert np.all(np.isfinite(command[:3 * nv]))
    assert np.all(np.abs(command[JOINTS.idx_v]) <= JOINTS.effort_limit)
    sim.servos.load(command[3 * nv:4 * nv], command[nv:2 * nv], command[2 * nv:3 * nv])
    tau = command[:nv].copy()
    for _ in range(100):
        info = sim.step(tau)
        if not info.converged:
            return
        assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))


@FUZZ
@given(st.one_of(floats, st.lists(st.one_of(st.text(max_size=3), st.none()), max_size=7)))
def test_a_random_effort_array_is_taken_or_rejected_whole(efforts):
    sim, slot = servoed_arm()
    before = slot.latest.copy()
    try:
        slot.put_array(efforts, 1)
    except CommandError as exc:
        assert str(exc)
        assert np.array_equal(slot.latest, before, equal_nan=True)
        return
    step_with(sim, slot)


@FUZZ
@given(names, floats, floats, floats)
def test_a_random_joint_state_is_taken_or_rejected_whole(joint_names, position, velocity,
                                                        effort):
    sim, slot = servoed_arm()
    before = slot.latest.copy()
    try:
        slot.put_joint_state(joint_names, position, velocity, effort, 1)
    except CommandError as exc:
        assert str(exc)
        assert np.array_equal(slot.latest, before, equal_nan=True)
        return
    if position:
        assert np.all(slot.latest[3 * ARM.nv + JOINTS.idx_v[JOINTS.indices(joint_names)]]
                      == POSITION)
    step_with(sim, slot)


def test_the_fuzzers_find_refusals_and_acceptances():
    """The properties above are not vacuous: the base inputs load, and one typo is refused."""
    assert load_scene(SCENE).model.nv == 12
    assert config_from(CONFIG).initial_positions == {"joint1": 0.5, "joint2": -0.3}
    with pytest.raises(ValueError):
        load_scene({**SCENE, "ground": {"frction": 1.0}})
