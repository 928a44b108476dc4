"""``controller: {type: ros}``: a user's ROS 2 controller process drives a campaign's runs, in
lockstep over DDS (mbsim_ros/ros/loop_link.py: the state of every control tick out on the
node's topics, one command back).

Each process running campaign runs (a Ray worker, or the driver for a replay) claims a DDS
domain of its own on this host (ros/domains.py) and keeps one ControllerInTheLoop (its link, an
rclpy node named like ``mbsim_node``, and the controller process) per spec (ros/in_the_loop.py).
``restart: per_run`` starts the controller for each run and stops it after; ``per_worker`` keeps
it between runs (calling ``reset_service`` before each run but the first) and starts it again
after a run it failed. A controller that exits, does not answer
within ``tick_timeout`` or sends a command the node would reject fails its run with
``failed_check: controller`` and the reason; what it printed during the run is the run's log.
"""
from __future__ import annotations

import atexit

import numpy as np

from ..integrators.servo import POSITION
from ..model import Model
from ..ros.controller_process import ControllerExited
from ..ros.in_the_loop import ControllerInTheLoop
from ..ros.loop_link import ControllerRejected, ControllerTimeout
from .controllers import Command, ControllerFailure, gains, joint_dofs
from .spec import Controller

CONTROLLER_FAILURES = (ControllerExited, ControllerTimeout, ControllerRejected)
LOG_LIMIT = 1 << 20  # bytes of a run's controller output kept (the end)


_SESSIONS: dict[str, ControllerInTheLoop] = {}  # one at most: all share the process's domain


@atexit.register
def _close_sessions() -> None:
    for session in _SESSIONS.values():
        session.close()
    _SESSIONS.clear()


class RosController:
    """The campaign's controller interface (``attach``, ``__call__`` per control tick,
    ``close``) over a controller process. ``key``: the spec's identity (one session per spec
    and process); ``gains`` (kp, kd) go to the servos for ``joint_commands`` targets;
    ``description``: the robot_description the link publishes."""

    def __init__(self, spec: Controller, model: Model, q0: np.ndarray, key: str, seed: int,
                 description: str | None = None) -> None:
        self.spec, self.key, self.seed = spec, key, seed
        self.description = description
        self.kp, self.kd = gains(spec, model, q0, joint_dofs(model)) \
            if spec.kp is not None or spec.omega is not None else (None, None)
        self.command = Command.zeros(model.nv)
        self.nv = model.nv
        self.tracked = np.zeros(0, dtype=int)
        self.session: ControllerInTheLoop | None = None
        self.log = ""
        self._log_start = 0
        self._dt_ns = 0

    def attach(self, sim, suite=None) -> None:
        """Bind the run's Simulator to the link and have a ready controller (ControllerFailure
        when it exits or never matches)."""
        if self.kp is not None:
            sim.servos.set_gains(p=self.kp, d=self.kd)
        self._dt_ns = int(round(sim.dt * 1e9))
        session = _SESSIONS.get(self.key)
        if session is None:
            _close_sessions()  # another spec's controller would answer this spec's states
            session = _SESSIONS[self.key] = ControllerInTheLoop(
                sim, self.spec.interface, suite, description=self.description)
        self.session = session
        session.link.bind(sim, suite)
        try:
            self._ready(session)
        except CONTROLLER_FAILURES as exc:
            raise ControllerFailure(str(exc)) from None

    def _ready(self, session: ControllerInTheLoop) -> None:
        spec = self.spec
        process = session.process
        if spec.restart == "per_run" or process is None or not process.alive():
            session.stop()
            process = session.start(spec.command, spec.env,
                                    f"seed-{self.seed}" if spec.restart == "per_run"
                                    else "worker")
        elif spec.reset_service is not None:
            self._call_reset(session)
        self._log_start = process.log_size() if spec.restart == "per_worker" else 0
        session.link.wait_ready(spec.ready_timeout, alive=self._alive)

    def _call_reset(self, session: ControllerInTheLoop) -> None:
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import Trigger

        node = session.link.node
        client = node.create_client(Trigger, self.spec.reset_service)
        executor = SingleThreadedExecutor(context=session.link.context)
        executor.add_node(node)  # the link's command subscription is never run by one
        try:
            if not client.wait_for_service(timeout_sec=self.spec.ready_timeout):
                raise ControllerTimeout(f"the reset service {client.srv_name} did not appear "
                                        f"within {self.spec.ready_timeout:g} s")
            future = client.call_async(Trigger.Request())
            executor.spin_until_future_complete(future, timeout_sec=self.spec.tick_timeout)
            if not future.done():
                raise ControllerTimeout(f"the reset service {client.srv_name} did not answer "
                                        f"within {self.spec.tick_timeout:g} s")
            if not future.result().success:
                raise ControllerRejected(f"the reset service {client.srv_name} refused: "
                                         f"{future.result().message}")
        finally:
            executor.remove_node(node)
            executor.shutdown()
            node.destroy_client(client)

    def _alive(self) -> None:
        self.session.process.check(self._log_start)

    def __call__(self, step: int, sim, readings) -> Command:
        """Send the state of this tick, return the controller's answer."""
        try:
            raw = self.session.link.exchange(sim.steps * self._dt_ns, self.spec.tick_timeout,
                                             alive=self._alive)
        except CONTROLLER_FAILURES as exc:
            raise ControllerFailure(str(exc)) from None
        nv, command = self.nv, self.command
        command.tau[:] = raw[:nv]
        command.q_target[:] = raw[nv:2 * nv]
        command.v_target[:] = raw[2 * nv:3 * nv]
        command.mode[:] = raw[3 * nv:4 * nv]
        self.tracked = np.flatnonzero(command.mode == POSITION)
        return command

    def close(self, failed: bool = False) -> None:
        """After the run: stop the controller (per_run, or a per_worker one that failed the
        run) and keep what it printed during the run in ``log``."""
        session = self.session
        if session is None or session.process is None:
            return
        process = session.process
        if self.spec.restart == "per_run" or failed:
            session.stop()
        text = process.log_text(self._log_start)
        self.log = text[-LOG_LIMIT:]
        if self.spec.restart == "per_run":
            process.log_path.unlink(missing_ok=True)
