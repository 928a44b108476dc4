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
import re  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402


from mbsim_ros.zoo import (ARMATURE, DT, INTEGRATORS, SINGULAR_IN_RANGE, Run,  # noqa: E402,F401
                           damping_ratio, energy_scale, first_line, has_repair_option, load_ours,
                           make_simulator, named_joints, outside_limits, relative_path, simulate,
                           simulator, zoo_urdfs)

SECONDS, QUICK_SECONDS = 2.0, 0.2
SLOW_ITERATIONS = 8  # a mean of RIQN iterations per step above this is listed as slow


def load_pinocchio(path: Path) -> str:
    """"" when pinocchio builds the model from the file, else its error."""
    import pinocchio as pin

    try:
        pin.buildModelFromXML(path.read_text())
        return ""
    except Exception as exc:  # noqa: BLE001
        return first_line(exc) or "error"


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
        return None, first_line(exc)
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
                                                                   f"{first_line(exc)}")
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
