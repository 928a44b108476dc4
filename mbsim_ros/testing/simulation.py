"""A simulation and the user's controller process in the loop, for integration tests: the
Simulator of a config or scene in this process, its state published on the node's topics on
this process's own DDS domain (ros/in_the_loop.py), the controller started as a child process,
advanced by simulated seconds, what was published handed back as a Trace.

Pacing:

- ``lockstep`` (default): at every tick the state goes out and the simulation waits for the
  one command that answers it, then steps: the trace does not depend on the machine's load
  (two runs of a deterministic controller are equal bit for bit);
- ``realtime``: the ticks are paced against the wall clock (absolute deadlines, dt apart);
  each takes the commands that arrived since the last one, the latest held until the next
  (none yet: zero effort), as in the node's realtime pacing. A tick that runs late is not
  skipped: the simulated time advanced is always the one asked for.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..actuators import CommandDelay
from ..ros.commands import ActuatedJoints
from ..ros.controller_process import ControllerExited
from ..ros.in_the_loop import ControllerInTheLoop
from ..ros.loop_link import ControllerRejected, ControllerTimeout
from ..ros.pacing import Pacer
from .configured import configured, load_config
from .trace import Trace, TraceRecorder

PACINGS = ("lockstep", "realtime")
INTERFACES = ("effort", "joint_commands")
NEVER_SKIP = 1 << 40  # realtime: the pacer's catch-up limit in ticks (a late tick runs late)


class ControllerFailed(RuntimeError):
    """The controller exited, did not answer within the tick timeout, never became ready, or
    sent a command the node rejects. The message says which, with its last output;
    ``log``: the file with all of it; ``trace``: the ticks done before."""

    def __init__(self, message: str, log: Path | None, trace: Trace | None) -> None:
        super().__init__(message)
        self.log, self.trace = log, trace


class SimulationFailed(RuntimeError):
    """A step failed (the solver, or the state left physical bounds: the step's message);
    ``trace``: the ticks done before."""

    def __init__(self, message: str, trace: Trace | None) -> None:
        super().__init__(message)
        self.trace = trace


CONTROLLER_FAILURES = (ControllerExited, ControllerTimeout, ControllerRejected)


class ControllerSimulation:
    """The simulation of ``config`` (a config file, a mapping of its keys) or ``scene`` (a
    scene file) with ``controller`` (an argv: ``["python3", "my_controller.py", "--ros-args",
    ...]``, any executable; ``python3`` is this interpreter) in the loop on ``interface``
    ("effort": ~/effort_commands, or "joint_commands"), paced by ``pacing``. The controller is
    started and matched (``ready_timeout`` wall s) here; ``tick_timeout``: the wall seconds a
    tick waits for its command. Its output goes to ``logs/<name>.log``. ``close()`` (or the
    end of a ``with`` block) stops it and ends the link."""

    def __init__(self, config=None, *, scene=None, controller: list[str], env=None,
                 interface: str = "effort", pacing: str = "lockstep",
                 ready_timeout: float = 60.0, tick_timeout: float = 10.0,
                 logs: str | Path | None = None, name: str = "controller") -> None:
        if pacing not in PACINGS:
            raise ValueError(f"pacing must be one of {', '.join(PACINGS)}, got {pacing!r}")
        if interface not in INTERFACES:
            raise ValueError(f"interface must be one of {', '.join(INTERFACES)}, got "
                             f"{interface!r}")
        if not controller or isinstance(controller, str):
            raise ValueError("controller must be the command as a list of arguments, e.g. "
                             "['python3', 'my_controller.py']")
        __tracebackhide__ = True  # pytest: the report shows the test's line and the reason
        built = configured(load_config(config, scene))
        self.sim, self.suite, self.simulated = built.sim, built.suite, built.simulated
        self.pacing, self.tick_timeout = pacing, tick_timeout
        self.dt_ns = int(round(self.sim.dt * 1e9))
        self.joints = ActuatedJoints(self.sim.model)
        self._segments: list[Trace] = []
        self.loop = ControllerInTheLoop(self.sim, interface, self.suite, logs=logs,
                                        description=self.simulated.robot_description())
        self._logs_kept = logs is not None
        self.link = self.loop.link
        self.link.slot.hold_start(self.sim.q)
        self._command = self.link.slot.initial.copy()
        self._delay = CommandDelay(self._command.size, built.delay_ticks,
                                   fill=self.link.slot.initial)
        nv = self.sim.model.nv
        self._parts = tuple(np.zeros(nv) for _ in range(4))  # effort, q and v targets, mode
        self._contact_bodies = sorted(self.link.outputs.contact_pubs)
        self.process = None
        self.log: Path | None = None  # the file the controller's output goes to
        try:
            self.process = self.loop.start(list(controller), dict(env or {}), name)
            self.log = self.process.log_path
            self.link.wait_ready(ready_timeout, alive=self._alive)
        except BaseException as exc:
            failure = self._failed(exc, None) if isinstance(exc, CONTROLLER_FAILURES) else None
            self.close()
            if failure is not None:
                raise failure from None
            raise

    # -- the test's side ----------------------------------------------------------------------

    def advance(self, seconds: float) -> Trace:
        """Step ``seconds`` of simulated time (whole steps, at least one) with the controller
        in the loop; the trace of these ticks. ControllerFailed / SimulationFailed carry the
        ticks done before."""
        __tracebackhide__ = True  # pytest: the report shows the test's line and the reason
        if self.process is None:
            raise RuntimeError("this simulation is closed")
        ticks = max(1, int(round(seconds / self.sim.dt)))
        recorder = TraceRecorder(self.sim, self.joints, self._contact_bodies, self.suite, ticks)
        try:
            if self.pacing == "lockstep":
                self._lockstep(recorder, ticks)
            else:
                self._realtime(recorder, ticks)
        except CONTROLLER_FAILURES as exc:
            raise self._failed(exc, self._keep(recorder)) from None
        except SimulationFailed as exc:
            exc.trace = self._keep(recorder)
            raise
        return self._keep(recorder)

    @property
    def trace(self) -> Trace | None:
        """Every tick advanced so far (None before the first advance)."""
        return Trace.concatenate(self._segments) if self._segments else None

    @property
    def t(self) -> float:
        """The simulated time now (s)."""
        return self.sim.steps * self.dt_ns * 1e-9

    def close(self) -> None:
        """Stop the controller (its process group: SIGINT, SIGKILL after a grace) and end the
        link; idempotent."""
        self.process = None
        self.loop.close()

    def __enter__(self) -> "ControllerSimulation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the loop -----------------------------------------------------------------------------

    def _lockstep(self, recorder: TraceRecorder, ticks: int) -> None:
        for _ in range(ticks):
            t_ns = self.sim.steps * self.dt_ns
            command = self.link.exchange(t_ns, self.tick_timeout, alive=self._alive)
            recorder.record(t_ns, command)
            self._step(command)

    def _realtime(self, recorder: TraceRecorder, ticks: int) -> None:
        pacer = Pacer(self.dt_ns, NEVER_SKIP)
        pacer.start()
        heard = time.monotonic()
        for _ in range(ticks):
            now = pacer.wait() * 1e-9
            t_ns = self.sim.steps * self.dt_ns
            self.link.publish(t_ns)
            if self.link.take_waiting(t_ns):
                heard = now
                np.copyto(self._command, self.link.command)
            elif now - heard > self.tick_timeout:
                raise ControllerTimeout(
                    f"no command on {self.link.command_topic} within {self.tick_timeout:g} s "
                    f"(realtime, at t = {t_ns * 1e-9:.6f} s)")
            self._alive()
            recorder.record(t_ns, self._command)
            self._step(self._command)

    def _step(self, command: np.ndarray) -> None:
        """One step under ``command`` (delayed by the actuators' delay_ticks): its interfaces
        and targets into the servos, its efforts as tau."""
        applied = self._delay.push(command)
        nv = self.sim.model.nv
        for k, part in enumerate(self._parts):
            np.copyto(part, applied[k * nv:(k + 1) * nv])
        effort, q_target, v_target, mode = self._parts
        self.sim.servos.load(mode, q_target, v_target)
        info = self.sim.step(effort)
        if not info.converged:
            raise SimulationFailed(f"the step at t = {self.t:.6f} s failed: {info.message}",
                                   None)
        if self.suite is not None:
            self.suite.update()

    def _alive(self) -> None:
        self.process.check()

    def _keep(self, recorder: TraceRecorder) -> Trace:
        """The advance's trace, kept for ``trace``."""
        trace = recorder.trace()
        if len(trace):
            self._segments.append(trace)
        return trace

    def _failed(self, exc: Exception, trace: Trace | None) -> ControllerFailed:
        """The failure, with the controller's last output (an exit's message has it)."""
        process = self.loop.process
        message = str(exc)
        if process is not None and not isinstance(exc, ControllerExited):
            message += "\n" + process.failure()
        log = process.log_path if process is not None and self._logs_kept else None
        if log is not None:
            message += f"\n(its whole output: {log})"
        return ControllerFailed(message, log, trace)
