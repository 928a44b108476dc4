"""``mbsim-ros``: run (the ROS 2 node), simulate (offline), inspect (what a model is), plot
(a simulate result)."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .build import Simulated, load_simulated, make_simulator, start_configuration
from .config import ConfigError, ConfigSpec, config_from, read_config, resolve_urdf, set_armature
from .dynamics.checks import singular_joints
from .dynamics.closures import ConstraintKinematics, mobility, project
from .model import DEFAULT_ROBOT, Model
from .model.closures import urdf_frames
from .plotting import ForceRecorder, animate, plot


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got '{text}'") \
            from None


def refuse(exc: Exception | str) -> SystemExit:
    """The exit for input that cannot be used: its one message on stderr, exit code 2."""
    print(f"mbsim-ros: {exc}", file=sys.stderr)
    return SystemExit(2)


def _load_config(path: str | None) -> ConfigSpec:
    """The --config file, checked (a scene file is a config naming that scene); none: the
    defaults."""
    try:
        return read_config(path) if path else config_from({})
    except ConfigError as exc:
        raise refuse(exc) from None


def _urdf_source(args, config: ConfigSpec) -> tuple:
    """(URDF path, floating base) from the arguments and the config."""
    try:
        urdf = args.urdf or config.urdf()
    except ConfigError as exc:
        raise refuse(exc) from None
    return urdf, bool(args.floating_base or config.floating_base)


def _simulated(args, config: ConfigSpec) -> Simulated:
    """What the config simulates (build.py): a scene's models, or the URDF (flags over the
    config) with the config's closures and armature. Errors are ValueErrors."""
    if config.scene:
        return load_simulated(scene=config.scene)
    urdf, floating = _urdf_source(args, config)
    simulated = load_simulated(urdf=urdf, floating_base=floating,
                               balance_inertia=bool(args.balance_inertia
                                                    or config.balance_inertia),
                               closures=config.model_dump()["closures"] or None)
    set_armature(simulated.model, config.armature)
    return simulated


def _sensor_suite(args, config: ConfigSpec, sim):
    """The config's ``sensors:`` and ``encoders:`` on sim (None without them)."""
    if not config.sensors and config.encoders is None:
        return None
    from .sensors import SensorSuite

    urdf, floating = _urdf_source(args, config)
    dumped = config.model_dump(exclude_unset=True)
    try:
        return SensorSuite(sim, dumped.get("sensors", []), dumped.get("encoders"),
                           urdf_frames(urdf, floating_base=floating))
    except ConfigError as exc:
        raise refuse(f"config {args.config}: {exc}") from None


class SensorRecorder:
    """A SensorSuite's readings at every step: ``sensor_<name>`` (steps + 1, width) arrays,
    ``encoder_q`` / ``encoder_v`` with encoders."""

    def __init__(self, suite, steps: int) -> None:
        self.suite = suite
        self.arrays = {f"sensor_{d.name}": np.zeros((steps + 1, suite.reading(k).shape[0]))
                       for k, d in enumerate(suite.devices)}
        if suite.encoders is not None:
            self.arrays["encoder_q"] = np.zeros((steps + 1, suite.encoder_q.shape[0]))
            self.arrays["encoder_v"] = np.zeros((steps + 1, suite.encoder_v.shape[0]))

    def record(self, k: int) -> None:
        suite = self.suite
        suite.update()
        for j, device in enumerate(suite.devices):
            self.arrays[f"sensor_{device.name}"][k] = suite.reading(j)
        if suite.encoders is not None:
            self.arrays["encoder_q"][k] = suite.encoder_q
            self.arrays["encoder_v"][k] = suite.encoder_v

    def result(self, done: int) -> dict:
        return {name: values[:done + 1] for name, values in self.arrays.items()}


def mobility_summary(model: Model, closures: list, q: np.ndarray) -> dict:
    """The closures' mobility at q projected onto them: what `inspect --json` adds."""
    kinematics = ConstraintKinematics(model)
    q, error = project(kinematics, closures, q)
    found = mobility(kinematics, closures, q)
    return {"dof": found.dof, "constraint_rows": found.rows, "constraint_rank": found.rank,
            "rank_tolerance": f"singular values <= {found.tolerance:g} * max(1, s_max)",
            "singular_values": found.singular_values, "redundant_constraints": found.redundant,
            "singular_configuration": found.singular, "closure_error": error,
            "q": q.tolist(), "free_directions": found.free_directions}


def cmd_simulate(args) -> int:
    config = _load_config(args.config)
    options = integrator_options_from(args)
    try:
        simulated = _simulated(args, config)
        model = simulated.model
        q0 = np.array(args.q0) if args.q0 else \
            start_configuration(simulated, config.initial_positions)
        sim = make_simulator(simulated, q0, args.integrator, args.dt, options)
        if args.v0:
            sim.reset(sim.q, np.array(args.v0))
        suite = None if simulated.scene is not None else _sensor_suite(args, config, sim)
    except ValueError as exc:  # ConfigError, ModelError, SceneError
        raise refuse(exc) from None
    if simulated.closures:
        options["constraints"] = simulated.closures
    links = sorted({model.body_names[b] for b in sim.scene.shapes.body if b >= 0}) \
        if sim.scene is not None else []
    n = args.steps
    t = np.empty(n + 1)
    q = np.empty((n + 1, model.nq))
    v = np.empty((n + 1, model.nv))
    energy = np.empty(n + 1)
    tau = np.zeros((n + 1, model.nv))
    wrenches = np.zeros((n + 1, len(links), 6))
    t[0], q[0], v[0], energy[0] = sim.t, sim.q, sim.v, sim.energy()
    recorder = ForceRecorder(sim, n) if args.forces else None
    if recorder:
        recorder.record(0)
    sensors = SensorRecorder(suite, n) if suite else None
    if sensors:
        sensors.record(0)
    bag = _bag(args, simulated, sim, suite)
    if bag:
        bag.record()
    done = n
    wall = time.perf_counter()
    for k in range(1, n + 1):
        info = sim.step(tau[k - 1])
        if not info.converged:
            print(f"stopped at step {k}: {info.message}", file=sys.stderr)
            done = k - 1
            break
        t[k], q[k], v[k], energy[k] = sim.t, sim.q, sim.v, sim.energy()
        for link, wrench in sim.contact_wrenches().items():
            wrenches[k, links.index(link)] = wrench
        if recorder:
            recorder.record(k)
        if sensors:
            sensors.record(k)
        if bag:
            bag.record({"effort": tau[k - 1]})
    wall = time.perf_counter() - wall
    if bag:
        bag.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    contact = {"contact_links": np.array(links), "contact_wrenches": wrenches[:done + 1]} \
        if links else {}
    forces = recorder.result(done) if recorder else {}
    forces.update(sensors.result(done) if sensors else {})
    np.savez(out, t=t[:done + 1], q=q[:done + 1], v=v[:done + 1], tau=tau[:done + 1],
             energy=energy[:done + 1], joint_names=np.array(model.joint_names), **contact,
             **forces)
    drift = np.abs(energy[:done + 1] - energy[0])
    print(f"model      {model.name}: {model.njoints} joints, nq={model.nq}, nv={model.nv}, "
          f"{model.total_mass:.2f} kg")
    extra = "".join(f", {k} = {v}" for k, v in options.items() if k != "constraints")
    extra += f", {len(options['constraints'])} closures" if "constraints" in options else ""
    print(f"integrator {args.integrator}{extra}, dt = {args.dt:g} s, {done} steps "
          f"({t[done]:.3f} s simulated)")
    print(f"wall time  {wall:.3f} s ({wall / max(done, 1) * 1e6:.1f} us/step incl. recording, "
          f"real-time factor {t[done] / max(wall, 1e-12):.1f})")
    print(f"energy     start {energy[0]:.6f} J, end {energy[done]:.6f} J, "
          f"max |E - E0| {drift.max():.3e} J")
    print(f"final q    {np.array2string(q[done], precision=4, max_line_width=100)}")
    print(f"written    {out}")
    if bag:
        print(f"recorded   {bag.path} ({sum(bag.topics.values())} messages on "
              f"{len(bag.topics)} topics)")
    return 0 if done == n else 1


def _bag(args, simulated: Simulated, sim, suite):
    """The ``--record`` MCAP recording of the run (None without it)."""
    if not args.record:
        return None
    from .recording import Recorder, root_frame

    try:
        return Recorder(args.record, sim, suite=suite, rate=args.record_rate,
                        root_frame=root_frame(simulated))
    except (ValueError, OSError) as exc:
        raise SystemExit(f"mbsim-ros: --record: {exc}") from None


def _limit(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def model_summary(model: Model) -> dict:
    """What `inspect --json` prints. Unbounded limits are null."""
    joints = []
    for i in range(model.njoints):
        iq, iv = model.idx_q[i], model.idx_v[i]
        ff = model.joint_kinds[i] == "free_flyer"
        parent = int(model.parent[i])
        joints.append({
            "name": model.joint_names[i], "type": model.joint_kinds[i],
            "parent": model.joint_names[parent] if parent >= 0 else None,
            "body": model.body_names[i], "nq": 7 if ff else 1, "nv": 6 if ff else 1,
            "idx_q": int(iq), "idx_v": int(iv),
            "lower": None if ff else _limit(model.lower_position_limit[iq]),
            "upper": None if ff else _limit(model.upper_position_limit[iq]),
            "effort": None if ff else _limit(model.effort_limit[iv]),
            "velocity": None if ff else _limit(model.velocity_limit[iv]),
            "damping": float(model.damping[iv]), "friction": float(model.friction[iv]),
            "armature": float(model.armature[iv])})
    return {"name": model.name, "nq": model.nq, "nv": model.nv, "dof": model.nv,
            "mass": model.total_mass, "gravity": model.gravity.tolist(), "joints": joints,
            "zero_outside_limits": model.clamped(model.neutral())[1],
            "singular_joints": singular_joints(model)}


def cmd_inspect(args) -> int:
    config = _load_config(args.config)
    try:
        simulated = _simulated(args, config)
        q0 = start_configuration(simulated, config.initial_positions)
    except ValueError as exc:
        raise refuse(exc) from None
    model, closures = simulated.model, simulated.closures
    summary = model_summary(model)
    if closures:
        summary["mobility"] = mobility_summary(model, closures, q0)
        summary["dof"] = summary["mobility"]["dof"]
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{summary['name']}: nq = {model.nq}, nv = {model.nv}, dof = {summary['dof']}, "
          f"mass = {model.total_mass:.4f} kg ({model.fixed_mass:.4f} kg fixed to the world)")
    if closures:
        found = summary["mobility"]
        print(f"closures: {found['constraint_rows']} rows of rank {found['constraint_rank']} "
              f"({found['rank_tolerance']}); redundant: "
              f"{', '.join(found['redundant_constraints']) or 'none'}"
              f"{'; SINGULAR configuration' if found['singular_configuration'] else ''}")

    def fmt(x):
        return "-" if x is None else f"{x:.4g}"

    if summary["zero_outside_limits"]:
        print(f"zero outside the limits (starts are clamped into them): "
              f"{', '.join(summary['zero_outside_limits'])}")
    if summary["singular_joints"]:
        print(f"singular joint-space inertia (no mass along; give them armature): "
              f"{', '.join(summary['singular_joints'])}")
    if not summary["joints"]:
        print("no movable joint: a static object")
        return 0
    print(f"{'joint':28s} {'type':11s} {'lower':>9s} {'upper':>9s} {'effort':>8s} "
          f"{'velocity':>8s} {'armature':>8s}  body")
    for j in summary["joints"]:
        print(f"{j['name']:28s} {j['type']:11s} {fmt(j['lower']):>9s} {fmt(j['upper']):>9s} "
              f"{fmt(j['effort']):>8s} {fmt(j['velocity']):>8s} {fmt(j['armature']):>8s}  "
              f"{j['body']}")
    return 0


def cmd_plot(args) -> int:
    data = np.load(args.input)
    out = Path(args.out or Path(args.input).with_suffix(".png"))
    plot(data, out, Path(args.input).name)
    print(f"written    {out}")
    if args.animate:
        if "origins" not in data:
            raise SystemExit("mbsim-ros: --animate needs the frames: simulate with --forces")
        movie = Path(args.animate)
        animate(data, movie)
        print(f"written    {movie}")
    return 0


def cmd_warm(args) -> int:
    """Compile into the cache what each config's run needs (`make` runs this once): its
    Simulator's fused step, the general step (servos, actuators) and its sensors. Configs
    whose runs use different integrators share few kernels: with ``--jobs`` > 1 each
    integrator's configs are compiled by a process of their own, side by side."""
    paths = args.configs or [None]
    groups = warm_groups(paths, args.integrator)
    if args.ship:
        return warm_and_ship(groups, args.integrator, args.jobs, Path(args.ship))
    if args.jobs > 1 and len(groups) > 1:
        return warm_side_by_side(groups, args.integrator, args.jobs)
    for path in paths:
        warm_one(path, args.integrator)
    return 0


def warm_integrator(config: ConfigSpec, chosen_integrator: str | None) -> str:
    """The integrator a config's run uses: the one chosen on the command line, else the
    config's own (compliant for a scene that names none)."""
    named = "integrator" in config.model_fields_set
    return chosen_integrator or ("compliant" if config.scene and not named
                                 else config.integrator)


def warm_groups(paths: list, chosen_integrator: str | None) -> list[list]:
    """The configs grouped by the integrator their runs use, in the order given."""
    groups: dict[str, list] = {}
    for path in paths:
        groups.setdefault(warm_integrator(_load_config(path), chosen_integrator), []).append(path)
    return list(groups.values())


def warm_and_ship(groups: list[list], chosen_integrator: str | None, jobs: int,
                  into: Path) -> int:
    """Compile the groups' kernels into an empty cache of their own (each group in a process,
    as warm_side_by_side), then copy that cache into ``into`` with its manifest: the compiled
    code a wheel ships (`make wheel`; mbsim_ros/_jit.py, "Compiled code shipped with the
    package")."""
    import tempfile

    from . import _jit  # (imported by name: the sources that import from it key the cache)

    with tempfile.TemporaryDirectory(prefix="mbsim-ship-") as root:
        # nothing from an earlier build: an empty cache, and no shipped code to start it from
        env = dict(os.environ, MBSIM_ROS_CACHE_DIR=root, MBSIM_ROS_SHIPPED_DIR=os.devnull)
        code = warm_side_by_side(groups, chosen_integrator, max(jobs, 1), env)
        if code:
            return code
        print(f"mbsim-ros warm: shipped in {_jit.ship_cache(Path(root), into)}", flush=True)
    return 0


def warm_side_by_side(groups: list[list], chosen_integrator: str | None, jobs: int,
                      env: dict | None = None) -> int:
    """`mbsim-ros warm --jobs 1` on each group in a process of its own (in ``env``, default
    this process's), `jobs` at a time; the first failing process's exit code, else 0."""
    import subprocess

    chosen = ["--integrator", chosen_integrator] if chosen_integrator else []
    pending = [[sys.executable, "-m", "mbsim_ros.cli", "warm", "--jobs", "1", *chosen,
                *[str(path) for path in group]] for group in groups]
    running, code = [], 0
    while pending or running:
        while pending and len(running) < jobs:
            running.append(subprocess.Popen(pending.pop(0), env=env))
        process = running.pop(0)
        code = code or process.wait()
    return code


def warm_one(path: str | None, chosen_integrator: str | None) -> None:
    """Build the run of one config (None: the default robot) and take its warm steps."""
    config = _load_config(path)
    integrator = warm_integrator(config, chosen_integrator)
    # one write, line and newline: `--jobs` runs several of these on one pipe
    sys.stdout.write(f"mbsim-ros warm: {path or DEFAULT_ROBOT}, {integrator}\n")
    sys.stdout.flush()
    model_args = argparse.Namespace(config=path, urdf=None, floating_base=False,
                                    balance_inertia=False)
    try:
        simulated = _simulated(model_args, config)
        q0 = start_configuration(simulated, config.initial_positions)
        sim = make_simulator(simulated, q0, integrator, config.dt)
        suite = None if simulated.scene is not None else _sensor_suite(model_args, config, sim)
    except ValueError as exc:
        raise refuse(exc) from None
    warm_steps(sim, suite)


WARM_TOUCHDOWN_S = 1.0  # s: how long a scene's warm steps wait for a contact to push


def warm_steps(sim, suite) -> None:
    """A fused step, a general one (as with servos or actuator models), a sensor update and a
    servo command loaded as the node and the library load them; with a scene, general steps
    (through actuator models) until a contact pushes, at most WARM_TOUCHDOWN_S: the kernels
    that only a contact step calls from Python (the Delassus matrix, the cone solve, impacts),
    which a later run's Simulator then loads at construction instead of compiling them at its
    first touchdown (docs/SPEED.md)."""
    from .actuators import Actuators

    sim.step()
    state, data = sim.state, sim.data
    nv = sim.model.nv
    sim.integrator.step(state.q, state.v, np.zeros(nv), data.q_next, data.v_next)
    if suite is not None:
        suite.update()
    for mode in (np.zeros(nv), np.zeros(nv, dtype=np.int64)):  # effort: nothing servoed
        sim.servos.load(mode, np.zeros(nv), np.zeros(nv))  # the node's (floats) and the API's
    if sim.scene is None or not sim.model.nv:
        return
    sim.reset()
    sim.actuators = Actuators(sim.model, sim.dt)  # no fused step: the general one
    for _ in range(int(WARM_TOUCHDOWN_S / sim.dt)):
        if not sim.step().converged or any(c.force.any() for c in sim.contacts()):
            return


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--urdf", help=f"URDF file (default: the shipped {DEFAULT_ROBOT})")
    p.add_argument("--floating-base", action="store_true", help="add a free-flyer root joint")
    p.add_argument("--balance-inertia", action="store_true", help="replace link inertias that "
                   "are not physical by the nearest physical ones (with a warning)")
    p.add_argument("--config", help="YAML: a config (urdf_path, floating_base, "
                                    "balance_inertia, initial_positions and armature by joint "
                                    "name, sensors and encoders by link and joint "
                                    "(simulate records them); plain or a ROS 2 parameters "
                                    "file) or a scene (ground, boxes, models)")


def integrator_option_table() -> dict[str, dict[str, object]]:
    """Every option an integrator takes that a command line (or a ROS parameter) can carry:
    name -> {integrator: its default}; the node declares the same options as its
    '<integrator>.<option>' parameters (ros/node.py)."""
    from .config import integrator_options
    from .integrators import INTEGRATORS

    table: dict[str, dict[str, object]] = {}
    for name in sorted(INTEGRATORS):
        for option, default in integrator_options(name).items():
            table.setdefault(option, {})[name] = default
    return table


def _parse_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _integrator_option_args(parser: argparse.ArgumentParser) -> None:
    """--<option> for every integrator option (the node's '<integrator>.<option>' parameters)."""
    group = parser.add_argument_group("integrator options (given ones go to --integrator)")
    for option, defaults in integrator_option_table().items():
        default = next(iter(defaults.values()))
        kind = _parse_bool if isinstance(default, bool) else type(default)
        group.add_argument(f"--{option.replace('_', '-')}", dest=f"option_{option}", type=kind,
                           metavar=type(default).__name__.upper(),
                           help="default: " + ", ".join(f"{name} {value!r}"
                                                        for name, value in defaults.items()))


def integrator_options_from(args) -> dict:
    """The integrator options given on the command line (--root-finder: solver's old name)."""
    options = {key[len("option_"):]: value for key, value in vars(args).items()
               if key.startswith("option_") and value is not None}
    if getattr(args, "root_finder", None) is not None:
        options["root_finder"] = args.root_finder
    return options


def build_parser() -> argparse.ArgumentParser:
    from .integrators import INTEGRATORS

    parser = argparse.ArgumentParser(prog="mbsim-ros", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("simulate", help="simulate offline and write a trajectory (.npz)")
    _model_args(p)
    p.add_argument("--integrator", default="variational", choices=sorted(INTEGRATORS))
    _integrator_option_args(p)
    p.add_argument("--root-finder", dest="root_finder", help=argparse.SUPPRESS)  # now --solver
    p.add_argument("--dt", type=float, default=1e-3)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--q0", type=_floats, help="initial q, comma-separated (nq numbers)")
    p.add_argument("--v0", type=_floats, help="initial v, comma-separated (nv numbers)")
    p.add_argument("--out", default="simulation.npz")
    p.add_argument("--forces", action="store_true", help="also record joint wrenches, closure "
                   "forces and the frames plot --animate draws (slower)")
    p.add_argument("--record", metavar="FILE.mcap", help="also write the run as a ROS 2 bag "
                   "(MCAP, the node's topics; ros2 bag info, Foxglove, PlotJuggler open it)")
    p.add_argument("--record-rate", type=float, metavar="HZ", help="--record: joint_states, "
                   "/tf, odometry, contacts and sensors at most at this rate (default: every "
                   "step; /clock every step)")
    p.set_defaults(func=cmd_simulate)
    p = sub.add_parser("inspect", help="print a model: joints, types, limits, nq/nv, mass")
    _model_args(p)
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("run", help="the ROS 2 simulation node (mbsim_node); node options "
                       "follow --ros-args (-p name:=value, -r __node:=name, --params-file F)")
    p.add_argument("--config", help="config YAML (a ROS 2 parameters file or a plain mapping "
                                    "of the node's parameters)")
    p.set_defaults(func=None)
    p = sub.add_parser("warm", help="compile the kernels that these configs' runs need into "
                       "the cache, once (make does it for the shipped configs)")
    p.add_argument("configs", nargs="*", help="configs or scenes (default: the shipped "
                   f"{DEFAULT_ROBOT})")
    p.add_argument("--integrator", choices=sorted(INTEGRATORS),
                   help="instead of each config's (default: variational; compliant for scenes)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="processes compiling side by side, one per integrator the configs "
                        "use (default: the machine's cores)")
    p.add_argument("--ship", metavar="DIR", help="compile into an empty cache of its own and "
                   "copy it, with its manifest, into DIR/<digest of the sources>: the compiled "
                   "code a wheel carries (make wheel: DIR is mbsim_ros/_compiled)")
    p.set_defaults(func=cmd_warm)
    p = sub.add_parser("plot", help="plot joint positions, energy and (recorded with --forces) "
                       "joint and closure forces of a simulate result")
    p.add_argument("input", help=".npz written by simulate")
    p.add_argument("--out", help="PNG path (default: beside the input)")
    p.add_argument("--animate", metavar="GIF_OR_MP4", help="also write a 3-D stick-figure "
                   "animation (needs simulate --forces)")
    p.set_defaults(func=cmd_plot)
    _campaign_parsers(sub)
    _schema_parser(sub)
    _view_parser(sub)
    # the commands a user types: 'campaign-replay' is 'campaign replay' (main), not listed
    sub.metavar = "{" + ",".join(name for name in sub.choices if name not in HIDDEN) + "}"
    return parser


HIDDEN = ("campaign-replay",)  # sub-commands reached through another's words (main)


def _view_parser(sub) -> None:
    p = sub.add_parser("view", help="a 3D view in the browser (http://HOST:PORT): the model or "
                       "scene at its start with joint sliders, or a recording played")
    _model_args(p)
    p.add_argument("--scene", help="a scene YAML (ground, boxes, models)")
    p.add_argument("--record", metavar="FILE.mcap", help="play this recording of the model")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--host", default="127.0.0.1")
    p.set_defaults(func=cmd_view)


def cmd_view(args) -> int:
    """Serve the view until interrupted (Ctrl-C)."""
    from .view.live import graph_of
    from .view.playback import Player, read_trajectory
    from .view.server import ViewServer

    if args.scene and args.config:
        raise refuse("view: --scene and --config name one model each: give one")
    config = _load_config(args.scene or args.config)
    try:
        simulated = _simulated(args, config)
        q0 = start_configuration(simulated, config.initial_positions)
        graph = graph_of(simulated)
        trajectory = read_trajectory(args.record, simulated.model) if args.record else None
    except (ValueError, OSError) as exc:
        raise refuse(exc) from None
    for message in graph.warnings:
        print(f"mbsim-ros view: warning: {message}", file=sys.stderr)
    view = ViewServer(graph, host=args.host, port=args.port)
    player = Player(view, *trajectory) if trajectory else None
    if player:
        player.start()
    else:
        view.joint_sliders(q0)
    stop = stop_on_signals()  # before the address: a stop as soon as it shows is caught
    print(f"mbsim-ros view: http://{args.host}:{view.port}", flush=True)
    try:
        stop.wait()
    finally:
        if player:
            player.stop()
        view.stop()
    return 0


def stop_on_signals() -> threading.Event:
    """An event that SIGINT (Ctrl-C) or SIGTERM sets from now on. Both are handled here, so
    that a server started with SIGINT ignored (in the background of a script: `cmd &`, nohup)
    still stops on it, as the node does (rclpy handles it)."""
    import signal

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def _schema_parser(sub) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of a scene, config or campaign "
                       "spec (for editors: docs/CONFIG.md), or 'markdown': the key reference")
    p.add_argument("kind", choices=[*SCHEMAS, "markdown"])
    p.set_defaults(func=cmd_schema)


def _schemas() -> dict:
    from .campaign.spec import CampaignSpec
    from .config import ConfigSpec
    from .schema.scene import SceneSpec

    return {"scene": SceneSpec, "config": ConfigSpec, "campaign": CampaignSpec}


SCHEMAS = ("scene", "config", "campaign")
REFERENCE_HEAD = """# Every key users write

Generated by `mbsim-ros schema markdown` from the input schemas (`mbsim_ros/schema/`,
`mbsim_ros/config.py`, `mbsim_ros/integrators/options.py`, `mbsim_ros/campaign/spec.py`);
`test/test_schema.py` keeps this page equal to them. A key that is not listed is refused with
its path, the valid keys there and the nearest one (exit code 2 on the command line, a
`SchemaError` -- a `ValueError` -- from the library, one line at the node's start-up).

Editors check and complete these files from their JSON Schema: `mbsim-ros schema scene >
scene.schema.json` (or `config`, `campaign`), then the first line of a YAML file,
`# yaml-language-server: $schema=scene.schema.json`, points the YAML language server (VS Code's
YAML extension, Neovim's yamlls) at it.

Types: `number` is finite unless said; `[3 numbers]` a list of three; `{name: ...}` a mapping
by joint, link or sensor name; units are in the meaning.
"""
REFERENCE_SECTIONS = (
    ("scene", "Scenes (`Simulator.from_scene`, the node's `scene`, `simulate --config`)"),
    ("config", "Configs and the node's ROS parameters (`--config`, `--params-file`; a dotted "
               "parameter name such as `actuators.delay_ticks` is the nested key)"),
    ("campaign", "Campaign specs (`mbsim-ros campaign`, docs/CAMPAIGNS.md)"),
)


def reference_page() -> str:
    """docs/CONFIG.md: every schema's keys."""
    from .schema.docs import table

    schemas = _schemas()
    parts = [REFERENCE_HEAD]
    for kind, title in REFERENCE_SECTIONS:
        parts.append(f"\n## {title}\n\n{table(schemas[kind])}")
    return "".join(parts)


def cmd_schema(args) -> int:
    if args.kind == "markdown":
        print(reference_page(), end="")
        return 0
    schema = _schemas()[args.kind].model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    print(json.dumps(schema, indent=2))
    return 0


def _campaign_parsers(sub) -> None:
    p = sub.add_parser("campaign", help="randomized runs of a campaign spec on Ray, judged, "
                       "into DIR/results.parquet and DIR/report.html (docs/CAMPAIGNS.md); "
                       "'campaign replay DIR --seed S' re-runs one")
    p.add_argument("spec", help="campaign spec (YAML)")
    p.add_argument("--runs", type=int, required=True, help="runs: seeds 0 .. N-1")
    p.add_argument("--out", required=True, help="the campaign's directory (resumed if there)")
    p.add_argument("--address", help="a Ray cluster's address, HOST:PORT (default: RAY_ADDRESS "
                   "if set, else a Ray instance of the campaign's own on this machine)")
    p.add_argument("--workers", type=int, help="local Ray CPUs / tasks in flight")
    p.add_argument("--seed", type=int, default=0, help="the campaign seed")
    p.add_argument("--runs-per-task", type=int, dest="runs_per_task")
    p.add_argument("--record-failures", action="store_true", dest="record_failures",
                   help="record every failed run (DIR/failures/seed-S.mcap)")
    p.add_argument("--no-progress", action="store_false", dest="progress")
    p.add_argument("--verbose", action="store_true",
                   help="let Ray's own messages through (start-up, connection, workers)")
    p.add_argument("--require-pass", type=fraction, dest="require_pass", metavar="FRACTION",
                   help="exit 1 when the fraction of runs passed is below this (0 to 1)")
    p.add_argument("--junit", metavar="FILE.xml",
                   help="write the results as JUnit XML (a testcase per run) for CI")
    p.set_defaults(func=cmd_campaign)
    p = sub.add_parser("campaign-replay", prog="mbsim-ros campaign replay")  # not listed
    p.add_argument("out", help="a campaign's directory")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--record", metavar="FILE.mcap")
    p.set_defaults(func=cmd_campaign_replay)


def fraction(text: str) -> float:
    """A number from 0 to 1 (argparse's type for --require-pass)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a fraction from 0 to 1")
    return value


def cmd_campaign(args) -> int:
    from .campaign.cluster import RayUnavailable
    from .campaign.report import write_report
    from .campaign.runner import run_campaign
    from .schema import SchemaError

    try:
        table = run_campaign(args.spec, args.runs, args.out, address=args.address,
                             workers=args.workers, seed=args.seed,
                             runs_per_task=args.runs_per_task, progress=args.progress,
                             verbose=args.verbose)
    except (SchemaError, RayUnavailable) as exc:
        print(f"mbsim-ros: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        raise SystemExit(f"mbsim-ros: {exc}") from None
    if args.record_failures:
        from .campaign.replay import record_failures

        print(f"recorded {len(record_failures(args.out))} failed runs in "
              f"{Path(args.out) / 'failures'}")
    report = write_report(args.out)
    passed = sum(table.column("passed").to_pylist())
    print(f"{table.num_rows} runs, {passed} passed ({100.0 * passed / table.num_rows:.1f} %): "
          f"{Path(args.out) / 'results.parquet'}, {report}")
    if args.junit:
        from .campaign.junit import write_junit

        print(f"JUnit XML: {write_junit(table, args.junit, Path(args.spec).stem, args.out)}")
    if args.require_pass is not None and passed / table.num_rows < args.require_pass:
        print(f"mbsim-ros: {passed} of {table.num_rows} runs passed, below --require-pass "
              f"{args.require_pass:g}", file=sys.stderr)
        return 1
    return 0


def cmd_campaign_replay(args) -> int:
    from .campaign.replay import replay

    try:
        row, differences = replay(args.out, args.seed, args.record)
    except ValueError as exc:
        raise SystemExit(f"mbsim-ros: {exc}") from None
    verdict = "passed" if row["passed"] else \
        f"failed {row['failed_check']} at t = {row['failed_at']:.3f} s ({row['failed_value']:.6g})"
    print(f"seed {args.seed}: {verdict}")
    if differences:
        print("differs from the table:\n  " + "\n  ".join(differences))
        return 1
    print("identical to the table's row" + (f"; recorded in {args.record}" if args.record
                                             else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["campaign", "replay"]:
        argv = ["campaign-replay"] + argv[2:]
    split = argv.index("--ros-args") if "--ros-args" in argv else len(argv)
    args = build_parser().parse_args(argv[:split])
    if args.command == "run":
        return cmd_run(args, argv[split:])
    return args.func(args)


@contextmanager
def ros_arguments(config_path: str | None, ros_args: list[str]) -> Iterator[list[str]]:
    """The node's command line, for the ``with`` block: the config as a ``--params-file``
    (plain configs converted to a ROS 2 parameters file in the temporary directory, urdf_path
    resolved against the config's folder), then the user's ``--ros-args`` (whose ``-p``
    overrides win over the file's values). The parameters file is removed when the block
    ends, however it ends."""
    import tempfile

    import yaml

    args = ["mbsim-ros"]
    params_file = None
    if config_path:
        config = _load_config(config_path).model_dump(exclude_unset=True, exclude_none=True)
        folder = Path(config_path).resolve().parent
        if config.get("urdf_path"):
            try:
                config["urdf_path"] = str(resolve_urdf(config["urdf_path"], folder))
            except ConfigError as exc:
                raise refuse(exc) from None
        for key in ("scene", "closures_file", "sensors_file"):
            if config.get(key) and not Path(config[key]).is_absolute():
                config[key] = str(folder / config[key])
        for block in ("closures", "sensors"):  # lists of mappings are no ROS parameters: the file
            if config.pop(block, None):
                config[f"{block}_file"] = str(Path(config_path).resolve())
        with tempfile.NamedTemporaryFile("w", prefix="mbsim-params-", suffix=".yaml",
                                         delete=False) as params:
            yaml.safe_dump({"/**": {"ros__parameters": config}}, params)
        params_file = Path(params.name)
        args += ["--ros-args", "--params-file", params.name]
    if ros_args:
        args += ros_args if ros_args[0] == "--ros-args" else ["--ros-args", *ros_args]
    try:
        yield args
    finally:
        if params_file is not None:
            params_file.unlink(missing_ok=True)


def cmd_run(args, ros_args: list[str]) -> int:
    from .ros.node import main as node

    with ros_arguments(args.config, ros_args) as argv:
        return node(argv)


def node_main(argv: list[str] | None = None) -> int:
    """``mbsim_node`` (``ros2 run mbsim_ros mbsim_node --ros-args ...``): the node itself."""
    from .ros.node import main as node

    return node(sys.argv if argv is None else ["mbsim_node", *argv])


if __name__ == "__main__":
    sys.exit(main())
