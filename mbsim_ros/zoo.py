"""The robot zoo: every URDF that example-robot-data ships, run as a new user would run it
(bench/zoo.py measures and reports them, docs/ROBOTS.md; test/test_zoo.py checks them). Here:
the URDFs by short name, loading (with the inertia repair when plain loading fails), a
Simulator per run label (with ARMATURE on the joints a singular joint-space inertia names),
and one run from rest under gravity with its energy rise against the robot's energy scale."""
from __future__ import annotations

import inspect
import re
import statistics
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .dynamics import crba
from .model import Model, load_urdf
from .model.model import R_COM, R_MASS, R_POS
from .model.resources import example_robot_data_dir
from .sim import Simulator

INTEGRATORS = ("euler-explicit", "euler", "variational", "compliant", "rigid")
# run label -> (integrator name, options); labels not listed are integrator names with their
# defaults (euler: velocity_terms="implicit")
RUN_OPTIONS = {"euler-explicit": ("euler", {"velocity_terms": "explicit"})}


def make_simulator(model: Model, label: str, dt: float = 1e-3) -> Simulator:
    """The Simulator a run label stands for (INTEGRATORS)."""
    name, options = RUN_OPTIONS.get(label, (label, {}))
    return Simulator(model, dt, name, **options)


DT = 1e-3
ARMATURE = 1e-3  # kg m^2 on the joints of a singular joint-space inertia (romeo's fingers)
# Robots whose joint-space inertia is singular inside their joint range (not at neutral, so the
# Simulator cannot see it at construction): robot -> (joints that get ARMATURE, why).
SINGULAR_IN_RANGE = {
    "human": (tuple(f"{ball}_{axis}" for ball in ("middle_cervical", "left_hip", "right_hip",
                                                   "left_shoulder", "right_shoulder")
                    for axis in "ZXY"),
              "its neck, hips and shoulders are Z-X-Y chains of revolutes through massless "
              "links; where X reaches +-pi/2 (the neck's and hips' own limits, inside the "
              "shoulders' range) the Z and Y axes align (gimbal lock) and M loses rank: the "
              "falling head reaches it at t = 0.49 s, a hip at 0.45 s"),
}


def zoo_urdfs() -> dict[str, Path]:
    """Every URDF under example-robot-data's robots/ folder (symbolic links resolved, each
    file once), by a short name: the file's stem, prefixed with its package when two files
    share a stem ('anymal_b_simple/anymal')."""
    root = example_robot_data_dir()
    files = sorted({p.resolve(): p for p in root.rglob("*.urdf")}.values())
    stems = [p.stem for p in files]
    names = {}
    for path, stem in zip(files, stems):
        package = path.relative_to(root).parts[0].removesuffix("_description")
        names[f"{package}/{stem}" if stems.count(stem) > 1 else stem] = path
    return dict(sorted(names.items()))


def relative_path(path: Path) -> str:
    return str(path.relative_to(example_robot_data_dir()))


def first_line(exc: BaseException, path: Path | None = None) -> str:
    """The exception's first line, without the file's path that our loader puts in front."""
    text = str(exc).strip() or type(exc).__name__
    if path is not None:
        text = text.replace(f"{path}: ", "")
    return text.splitlines()[0]


def has_repair_option() -> bool:
    """load_urdf takes ``balance_inertia`` (the nearest physical inertia)."""
    return "balance_inertia" in inspect.signature(load_urdf).parameters


def load_ours(path: Path) -> tuple[Model | None, str, str]:
    """(model or None, status, message): status "ok", "repaired" (loaded only with
    ``balance_inertia=True``, when load_urdf has that option) or "error"; message: the error,
    else the first warning the loader gave (the file named by its path in example-robot-data,
    not this machine's), else ""."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = load_urdf(path)
            return model, "ok", \
                str(caught[0].message).replace(str(path), relative_path(path)) if caught else ""
        except Exception as exc:  # noqa: BLE001 - any failure is a result here
            error = first_line(exc, path)
        if not has_repair_option():
            return None, "error", error
        try:
            model = load_urdf(path, balance_inertia=True)
        except Exception:  # noqa: BLE001
            return None, "error", error
        return model, "repaired", f"{error} (loads with balance_inertia=True)"


def energy_scale(model: Model) -> float:
    """|g| sum_i m_i r_i, r_i the length of the chain of joint offsets from the fixed base's
    frame to body i's centre of mass plus that centre's offset: an upper bound on the body's
    distance from the base frame's origin, whatever q. Every potential energy change of a
    fixed-base robot, and so every kinetic energy it reaches from rest, is at most twice
    this: the energy drift of a run is reported relative to it (J / J)."""
    parent, real = model.parent, model.joint_real
    reach = np.zeros(model.njoints)
    for i in range(model.njoints):
        p = parent[i]
        reach[i] = (reach[p] if p >= 0 else 0.0) + np.linalg.norm(real[i, R_POS])
    lever = reach + np.linalg.norm(real[:, R_COM], axis=1)
    return float(np.linalg.norm(model.gravity) * np.dot(real[:, R_MASS], lever))


def damping_ratio(model: Model, q: np.ndarray, dt: float = DT) -> float:
    """max_i h b_i / M_ii at q (0 without damping; inf on a zero diagonal entry)."""
    if not np.any(model.damping > 0.0):
        return 0.0
    diagonal = np.diag(crba(model, q)) + model.armature
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(model.damping > 0.0, dt * model.damping / diagonal, 0.0)
    return float(np.nanmax(ratio))


def outside_limits(model: Model, q: np.ndarray) -> list[str]:
    """The 1-DOF joints whose q lies outside [lower, upper]."""
    bad = (q < model.lower_position_limit) | (q > model.upper_position_limit)
    return [name for name, kind, iq in zip(model.joint_names, model.joint_kinds, model.idx_q)
            if kind != "free_flyer" and bad[iq]]


def named_joints(model: Model, message: str) -> list[str]:
    """The model's joints that `message` names (whole names, not prefixes of longer ones)."""
    return [name for name in model.joint_names
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", message)]


def simulator(model: Model, integrator: str, dt: float = DT,
              robot: str = "") -> tuple[Simulator, list[str]]:
    """A Simulator; when it refuses the model naming joints and saying to give them armature
    (a singular joint-space inertia), those joints get ARMATURE (in the model, in place) and
    the Simulator is built again; so do SINGULAR_IN_RANGE's joints of `robot` from the start.
    Returns it and the joints that got armature."""
    in_range = [name for name in SINGULAR_IN_RANGE.get(robot, ((),))[0]
                if name in model.joint_names]
    if in_range:
        model.set_armature({name: ARMATURE for name in in_range})
    try:
        return make_simulator(model, integrator, dt), in_range
    except Exception as exc:  # noqa: BLE001
        joints = named_joints(model, str(exc))
        if "armature" not in str(exc) or not joints:
            raise
    model.set_armature({name: ARMATURE for name in joints})
    return make_simulator(model, integrator, dt), joints


@dataclass
class Run:
    """One integrator on one robot."""

    finished: bool = False
    steps: int = 0
    message: str = ""  # why it stopped (empty when it finished)
    t_fail: float | None = None
    iterations: float = float("nan")  # mean per step
    step_us: float = float("nan")  # median
    rise: float = 0.0  # J: max over the run of E(t) - E(0)
    e0: float = 0.0  # J
    scale: float = 0.0  # J: energy_scale of the model
    armature_joints: list[str] = field(default_factory=list)

    @property
    def drift(self) -> float:
        """rise / scale (nan before the first step; for a model without any lever, 0 or
        inf)."""
        if not self.steps:
            return float("nan")
        if self.scale > 0.0:
            return self.rise / self.scale
        return 0.0 if self.rise <= 0.0 else float("inf")


def simulate(model: Model, integrator: str, seconds: float, dt: float = DT,
             q0: np.ndarray | None = None, robot: str = "") -> Run:
    """`seconds` at `dt` from q0 (default: the Simulator's own start, the neutral
    configuration) at rest under gravity with zero effort. The energy is evaluated after
    every step, which also validates the new q (finite, unit quaternions): a step whose
    state is not finite ends the run ("raised: ...")."""
    run = Run()
    try:
        sim, run.armature_joints = simulator(model, integrator, dt, robot)
        if q0 is not None:
            sim.reset(q0)
    except Exception as exc:  # noqa: BLE001
        run.message, run.t_fail = f"refused: {first_line(exc)}", 0.0
        return run
    n = int(round(seconds / dt))
    times, iterations = np.empty(n), np.empty(n)
    run.e0, run.scale = sim.energy(), energy_scale(model)
    for k in range(n):
        try:
            start = time.perf_counter()
            info = sim.step()
            times[k] = time.perf_counter() - start
            if not info.converged:
                run.message, run.t_fail = info.message, sim.t + dt
                break
            run.rise = max(run.rise, sim.energy() - run.e0)
        except Exception as exc:  # noqa: BLE001
            run.message, run.t_fail = f"raised: {first_line(exc)}", sim.t
            break
        iterations[k] = info.iterations
        run.steps = k + 1
    run.finished = run.steps == n
    if run.steps:
        run.iterations = float(iterations[:run.steps].mean())
        run.step_us = statistics.median(times[:run.steps]) * 1e6
    return run
