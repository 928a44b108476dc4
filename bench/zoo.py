"""The robot zoo: every URDF that example-robot-data ships, as a new user would use it.

Per robot: does it load (ours ``load_urdf``, pinocchio, MuJoCo's URDF import when ``mujoco`` is
installed, with visual and collision geometry removed: dynamics only), its size (nv, total
mass) and the stiffness of its joint damping against its inertia (max over the joints of
h b_i / M_ii at the neutral configuration: explicit damping is unstable above 2 in one DOF), and
then, for each of our integrators (euler, variational, compliant, rigid; the contact ones
without a scene: joint limits only), 2 s at dt = 1 ms from the neutral configuration at rest
under gravity with zero effort: does it finish (else the message and the time), the mean
iterations per step (StepInfo.iterations: RIQN/Newton for variational, the constraint solver's
for compliant and rigid), the median time of one step, and the energy drift: max over the run
of E(t) - E(0), relative to the robot's energy scale (energy_scale below). A fixed base, as
``load_urdf`` loads by default. A robot whose joint-space inertia is singular gets an armature
of ARMATURE on the joints the Simulator names when it refuses it (and is recorded as such).

Run: `.venv/bin/python bench/zoo.py [--robots a1,xarm7] [--quick] [--report docs/ROBOTS.md]`
(`--quick`: 0.2 s per run). A robot that fails to load or crashes is recorded, never fatal.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as bench/peers: before numpy

import argparse  # noqa: E402
import inspect  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from mbsim_ros import Model, Simulator, load_urdf  # noqa: E402
from mbsim_ros.dynamics import crba  # noqa: E402
from mbsim_ros.model.model import R_COM, R_MASS, R_POS  # noqa: E402
from mbsim_ros.model.resources import example_robot_data_dir  # noqa: E402

INTEGRATORS = ("euler-explicit", "euler", "variational", "compliant", "rigid")
# run label -> (integrator name, options); labels not listed are integrator names with their
# defaults (euler: velocity_terms="implicit")
RUN_OPTIONS = {"euler-explicit": ("euler", {"velocity_terms": "explicit"})}


def make_simulator(model: Model, label: str, dt: float = 1e-3) -> Simulator:
    """The Simulator a run label stands for (INTEGRATORS)."""
    name, options = RUN_OPTIONS.get(label, (label, {}))
    return Simulator(model, dt, name, **options)


DT = 1e-3
SECONDS, QUICK_SECONDS = 2.0, 0.2
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
SLOW_ITERATIONS = 8  # the bound on the mean RIQN iterations per step


# --- the zoo ---------------------------------------------------------------------------------

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


# --- loading ---------------------------------------------------------------------------------

def _first_line(exc: BaseException, path: Path | None = None) -> str:
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
    else the first warning the loader gave, else ""."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = load_urdf(path)
            return model, "ok", str(caught[0].message) if caught else ""
        except Exception as exc:  # noqa: BLE001 - any failure is a result here
            error = _first_line(exc, path)
        if not has_repair_option():
            return None, "error", error
        try:
            model = load_urdf(path, balance_inertia=True)
        except Exception:  # noqa: BLE001
            return None, "error", error
        return model, "repaired", f"{error} (loads with balance_inertia=True)"


def load_pinocchio(path: Path) -> str:
    """"" when pinocchio builds the model from the file, else its error."""
    import pinocchio as pin

    try:
        pin.buildModelFromXML(path.read_text())
        return ""
    except Exception as exc:  # noqa: BLE001
        return _first_line(exc) or "error"


# a self-closing element first: the other alternative would run on to the next closing tag
_GEOMETRY = re.compile(r"<(visual|collision)\b[^>]*/>|<(visual|collision)\b.*?</\2\s*>", re.S)


def load_mujoco(path: Path):
    """(MjModel or None, message); (None, "not installed") without mujoco. The URDF goes to
    MuJoCo's own URDF import with its <visual> and <collision> elements removed (the meshes'
    package:// paths mean nothing to it; the dynamics do not depend on them)."""
    try:
        import mujoco
    except ImportError:
        return None, "not installed"
    text = _GEOMETRY.sub("", path.read_text()).lstrip()
    try:
        mj_model = mujoco.MjModel.from_xml_string(text)
    except Exception as exc:  # noqa: BLE001
        return None, _first_line(exc)
    if not re.search(r"<link\b", text):  # ur3.urdf: MuJoCo makes it an empty world
        return None, "no <link>: an empty world"
    return mj_model, ""


def mujoco_euler(mj_model, seconds: float, dt: float = DT) -> str:
    """"" when MuJoCo's Euler runs `seconds` from qpos0 at rest with finite positions and no
    bad-acceleration warning (its reset on divergence), else what went wrong."""
    import mujoco

    mj_model.opt.timestep = dt
    mj_model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    data = mujoco.MjData(mj_model)
    for k in range(int(round(seconds / dt))):
        mujoco.mj_step(mj_model, data)
        if data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number or \
                not np.all(np.isfinite(data.qpos)):
            return f"diverged at t = {(k + 1) * dt:.3f} s"
    return ""


# --- properties ------------------------------------------------------------------------------

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


# --- one run ---------------------------------------------------------------------------------

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
        run.message, run.t_fail = f"refused: {_first_line(exc)}", 0.0
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
            run.message, run.t_fail = f"raised: {_first_line(exc)}", sim.t
            break
        iterations[k] = info.iterations
        run.steps = k + 1
    run.finished = run.steps == n
    if run.steps:
        run.iterations = float(iterations[:run.steps].mean())
        run.step_us = statistics.median(times[:run.steps]) * 1e6
    return run


# --- one robot -------------------------------------------------------------------------------

@dataclass
class Robot:
    """Everything measured on one URDF."""

    name: str
    path: str
    ours: str = "error"  # "ok", "repaired" or "error"
    ours_message: str = ""
    pinocchio: str = ""  # "" = loads
    mujoco: str = "not installed"  # "" = loads
    mujoco_euler: str | None = None  # "" = finishes; None: not run
    nv: int = 0
    mass: float = float("nan")
    damping_ratio: float = float("nan")
    outside_limits: list[str] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)

    @property
    def loads(self) -> bool:
        return self.ours in ("ok", "repaired")


def measure(name: str, path: Path, seconds: float, integrators=INTEGRATORS,
            clamp: bool = False) -> Robot:
    """One robot; `clamp`: start from the neutral configuration clamped into the joint limits
    (default: the neutral configuration as it is)."""
    robot = Robot(name, relative_path(path))
    robot.pinocchio = load_pinocchio(path)
    mj_model, robot.mujoco = load_mujoco(path)
    if mj_model is not None:
        robot.mujoco_euler = mujoco_euler(mj_model, seconds)
    model, robot.ours, robot.ours_message = load_ours(path)
    if model is None:
        return robot
    q = model.neutral()
    robot.nv, robot.mass = model.nv, model.total_mass
    robot.outside_limits = outside_limits(model, q)
    try:
        robot.damping_ratio = damping_ratio(model, q)
    except Exception:  # noqa: BLE001 - a model the kernels reject; the runs will say why
        pass
    armature = model.armature.copy()
    for integrator in integrators:
        robot.runs[integrator] = simulate(model, integrator, seconds,
                                          q0=model.clamped(model.neutral())[0] if clamp else None,
                                          robot=name)
        model.armature = armature  # each run starts from the model as loaded
    return robot


# --- totals and the printed table --------------------------------------------------------------

def totals(robots: list[Robot], integrators=INTEGRATORS) -> list[str]:
    n = len(robots)
    lines = [
        f"robots: {n}",
        f"loads: ours {sum(r.ours == 'ok' for r in robots)} / {n}"
        f" (+{sum(r.ours == 'repaired' for r in robots)} with balance_inertia=True), "
        f"pinocchio {sum(not r.pinocchio for r in robots)} / {n}, "
        f"MuJoCo {_mujoco_total(robots)}",
    ]
    for integrator in integrators:
        done = [r for r in robots if integrator in r.runs]
        lines.append(f"{integrator} finishes: {sum(r.runs[integrator].finished for r in done)}"
                     f" / {len(done)} loaded")
    blown = [f"{r.name} ({k}, {run.drift:.2g})" for r in robots for k, run in r.runs.items()
             if run.finished and run.drift > 1.0]
    lines.append(f"finished, but the energy rose above the energy scale (dE > 1: a blow-up "
                 f"that stayed finite): {len(blown)}" + (f": {', '.join(blown)}" if blown else ""))
    slow = [f"{r.name} ({r.runs['variational'].iterations:.1f})" for r in robots
            if 'variational' in r.runs and r.runs['variational'].iterations > SLOW_ITERATIONS]
    lines.append(f"mean variational iterations > {SLOW_ITERATIONS}: {len(slow)}"
                 + (f": {', '.join(slow)}" if slow else ""))
    return lines


def _mujoco_total(robots: list[Robot]) -> str:
    if all(r.mujoco == "not installed" for r in robots):
        return "not installed"
    loaded = [r for r in robots if not r.mujoco]
    euler = sum(r.mujoco_euler == "" for r in loaded)
    return f"{len(loaded)} / {len(robots)} (its Euler finishes {euler} / {len(loaded)})"


def run_cell(run: Run | None) -> str:
    """One integrator's cell: mean iterations / us per step when it finished, else FAIL with
    the time."""
    if run is None:
        return "-"
    if run.finished:
        return f"{run.iterations:.1f} it, {run.step_us:.0f} us, dE {run.drift:+.0e}"
    return f"FAIL t={run.t_fail:.3f}"


def row_line(robot: Robot, integrators=INTEGRATORS) -> str:
    if not robot.loads:
        return f"{robot.name:<34} LOAD FAILS: {robot.ours_message}"
    cells = " | ".join(f"{k} {run_cell(robot.runs.get(k))}" for k in integrators)
    return f"{robot.name:<34} nv {robot.nv:3d} | {cells}"


def failures(robots: list[Robot], integrators=INTEGRATORS) -> dict[str, list[str]]:
    """Message -> the 'robot (integrator, t)' entries that stopped with it (loads included);
    numbers in the messages are masked so that one failure mode is one group."""
    groups: dict[str, list[str]] = {}
    for r in robots:
        if not r.loads:
            groups.setdefault(f"load: {_mask(r.ours_message)}", []).append(r.name)
        for k in integrators:
            run = r.runs.get(k)
            if run is not None and not run.finished:
                groups.setdefault(f"{k}: {_mask(run.message)}", []).append(
                    f"{r.name} (t = {run.t_fail:.3f})")
    return dict(sorted(groups.items(), key=lambda item: -len(item[1])))


def _mask(message: str) -> str:
    message = re.sub(r"'[^']*'", "'...'", message)
    return re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "#", message)


# --- main ------------------------------------------------------------------------------------

def run(names: list[str] | None, seconds: float, emit, clamp: bool = False) -> list[Robot]:
    zoo = zoo_urdfs()
    unknown = sorted(set(names or ()) - set(zoo))
    if unknown:
        raise SystemExit(f"unknown robots {unknown}; the zoo: {', '.join(zoo)}")
    robots = []
    for name, path in zoo.items():
        if names and name not in names:
            continue
        try:
            robot = measure(name, path, seconds, clamp=clamp)
        except Exception as exc:  # noqa: BLE001 - never stop the bench on one robot
            robot = Robot(name, relative_path(path), ours_message=f"bench crashed: "
                                                                   f"{_first_line(exc)}")
        robots.append(robot)
        emit(row_line(robot))
    return robots


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", help="comma-separated names (default: the whole zoo)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SECONDS} s per run")
    parser.add_argument("--report", type=Path, help="write the Markdown report (docs/ROBOTS.md)")
    parser.add_argument("--clamp", action="store_true",
                        help="start from the neutral configuration clamped into the limits")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.robots.split(",")] if args.robots else None
    seconds = QUICK_SECONDS if args.quick else SECONDS
    load = [os.getloadavg()[0]]
    robots = run(names, seconds, lambda line: print(line, flush=True), args.clamp)
    load.append(os.getloadavg()[0])
    print()
    for line in totals(robots):
        print(line)
    print("\nfailures by message:")
    for message, entries in failures(robots).items():
        print(f"  {len(entries):3d} x {message}: {', '.join(entries)}")
    if args.report:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import zoo_report

        zoo_report.write(args.report, robots, seconds, load, args.clamp)
        print(f"report: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
