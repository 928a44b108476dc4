"""A user's controller process and the link that steps with it (loop_link.py), on this
process's own DDS domain (domains.py): what a campaign's ``type: ros`` controller and the pytest
plugin (mbsim_ros.testing) both drive a Simulator with.

``python`` or ``python3`` as the command's first word means the interpreter running this
process, so the controller sees the same packages (rclpy among them); write an absolute path
for another one.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .controller_process import ControllerProcess
from .domains import LOCALHOST, process_domain
from .loop_link import LoopLink

GONE_S = 30.0  # wall s for a stopped controller's DDS endpoints to go (a killed one's lease)


def controller_argv(command: list[str]) -> list[str]:
    """The argv to start (``python`` / ``python3`` first: this interpreter)."""
    if command[0] in ("python", "python3"):
        return [sys.executable, *command[1:]]
    return list(command)


class ControllerInTheLoop:
    """The link of ``sim`` (``interface``: "effort" or "joint_commands"; ``suite``: the sensors
    to publish; ``description``: the robot_description to publish) on this process's domain,
    and at most one controller process at a time, whose
    output goes to ``logs/<name>.log`` (default: ``<tmp>/mbsim_ros_controllers/<pid>-<name>
    .log``, deleted by ``close``; a killed process leaves its last log there)."""

    def __init__(self, sim, interface: str = "effort", suite=None, *,
                 logs: str | Path | None = None, description: str | None = None) -> None:
        os.environ.update(LOCALHOST)  # this process's own rclpy context: discovery on the host
        self.domain = process_domain()
        self.link = LoopLink(sim, self.domain.domain_id, interface, suite=suite,
                             description=description)
        self.process: ControllerProcess | None = None
        self._own_logs = logs is None
        self.logs = Path(tempfile.gettempdir()) / "mbsim_ros_controllers" if logs is None \
            else Path(logs)
        self._prefix = f"{os.getpid()}-" if logs is None else ""

    def start(self, command: list[str], env: dict[str, str], name: str) -> ControllerProcess:
        """Start ``command`` (after a previous controller's DDS endpoints are gone) on the
        domain, its output in ``logs/<name>.log``."""
        self.link.wait_unmatched(GONE_S)
        self.process = ControllerProcess(controller_argv(command),
                                         self.logs / f"{self._prefix}{name}.log",
                                         env={**env, **self.domain.env})
        return self.process

    def stop(self) -> None:
        """Stop the controller process (its whole process group)."""
        if self.process is not None:
            self.process.stop()
            self.process = None

    def close(self) -> None:
        """Stop the controller and end the link (idempotent)."""
        self.stop()
        self.link.close()
        if self._own_logs:
            for log in self.logs.glob(f"{self._prefix}*.log"):
                log.unlink(missing_ok=True)
