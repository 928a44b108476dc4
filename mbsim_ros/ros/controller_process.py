"""A user's controller as a child process: any executable (a Python script, a C++ node), its
output kept in a log file, and nothing left behind.

- The child is the leader of a process group of its own, and ``stop()`` ends the group: SIGINT
  (a ROS node's clean shutdown), SIGKILL after ``grace`` seconds. It starts with no signal
  blocked and SIGINT and SIGTERM at their defaults, whatever its parent blocks or ignores.
- Linux: the child is also asked to be killed when the process that started it dies
  (``PR_SET_PDEATHSIG``), so a campaign worker killed with SIGKILL, or a driver interrupted
  before its clean-up ran, leaves no controller running.
- Its stdout and stderr go to one log file; ``failure()`` words why it is gone (exit code or
  signal, the last lines it wrote).
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1
TAIL_LINES = 12


def _child_setup() -> None:  # pragma: no cover - runs in the child between fork and exec
    """No signal blocked, SIGINT and SIGTERM at their defaults (a parent that blocks or
    ignores them, a Ray worker blocks SIGINT, would pass that on through exec, and the
    controller would not stop cleanly on SIGINT: its DDS endpoints would then linger until
    their lease ends); on Linux, killed when the parent dies."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class ControllerExited(RuntimeError):
    """The controller process is gone (the message says how, with its last output)."""


class ControllerProcess:
    """``argv`` started in ``cwd`` with this process's environment updated by ``env``, its
    output appended to ``log``."""

    def __init__(self, argv: list[str], log: str | Path, env: dict[str, str] | None = None,
                 cwd: str | Path | None = None) -> None:
        self.argv = list(argv)
        self.log_path = Path(log)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        environment = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        try:
            self.process = subprocess.Popen(self.argv, env=environment, cwd=cwd,
                                            stdin=subprocess.DEVNULL, stdout=self._log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_child_setup)
        except OSError as exc:
            self._log.close()
            raise ControllerExited(f"cannot start {' '.join(self.argv)}: {exc}") from None

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_size(self) -> int:
        self._log.flush()
        return self.log_path.stat().st_size

    def log_text(self, since: int = 0) -> str:
        """What it wrote from byte ``since`` on."""
        with open(self.log_path, "rb") as stream:
            stream.seek(since)
            return stream.read().decode(errors="replace")

    def failure(self, since: int = 0) -> str:
        """How it ended (exit code or signal) and its last lines (from byte ``since``)."""
        code = self.process.poll()
        how = "is running" if code is None else (
            f"was killed by signal {-code} ({signal.Signals(-code).name})" if code < 0
            else f"exited with code {code}")
        tail = self.log_text(since).rstrip().splitlines()[-TAIL_LINES:]
        last = (": last output:\n  " + "\n  ".join(tail)) if tail else " (no output)"
        return f"the controller ({' '.join(self.argv)}) {how}{last}"

    def check(self, since: int = 0) -> None:
        """ControllerExited when it is gone."""
        if not self.alive():
            raise ControllerExited(self.failure(since))

    def stop(self, grace: float = 5.0) -> int | None:
        """End its process group: SIGINT, then SIGKILL after ``grace`` s; its exit code."""
        if self.alive():
            self._signal_group(signal.SIGINT)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.process.wait()
        self._signal_group(signal.SIGKILL)  # what it started and left behind
        self._log.close()
        return self.process.returncode

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
