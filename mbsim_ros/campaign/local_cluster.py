"""A Ray cluster of several nodes on this machine, started as docs/CAMPAIGNS.md says (the
token made by ``ray get-auth-token --generate`` if missing, ``RAY_AUTH_MODE=token``, a head by
``ray start --head --port=P --block``, each other node by ``ray start --address=127.0.0.1:P
--block``) and stopped by the process ids it started (never ``ray stop``, which ends every Ray
process of the machine): what the suite and bench/campaign.py submit a campaign to by
address. The head's port is a free one and the nodes' temporary directory (RAY_TMPDIR) is its
own, so the address file ``ray start`` writes names this cluster to no other program."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).parent / "ray")


class LocalCluster:
    """``nodes`` Ray nodes of ``cpus`` CPUs each; ``env``: the environment they (and the
    drivers given ``self.env``) start from (default: this process's)."""

    def __init__(self, nodes: int = 2, cpus: int = 1, env: dict | None = None) -> None:
        self.nodes, self.cpus = nodes, cpus
        self.root = Path(tempfile.mkdtemp(prefix="mbc", dir="/tmp"))  # short: socket paths
        self.env = {**(os.environ if env is None else env), "RAY_TMPDIR": str(self.root)}
        self.address = f"127.0.0.1:{_free_port()}"
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> "LocalCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def nodes_env(self) -> dict:
        return {**self.env, "RAY_AUTH_MODE": "token"}

    def start(self, timeout: float = 120.0) -> None:
        """The token, the head, then each node, waiting until each is alive."""
        subprocess.run([RAY, "get-auth-token", "--generate"], env=self.env, check=True,
                       capture_output=True, timeout=timeout)
        port = self.address.rsplit(":", 1)[1]
        for k in range(self.nodes):
            where = ["--head", f"--port={port}"] if k == 0 else [f"--address={self.address}"]
            with open(self.root / f"node{k}.log", "w") as log:
                self.processes.append(subprocess.Popen(
                    [RAY, "start", *where, f"--num-cpus={self.cpus}", "--block"],
                    env=self.nodes_env, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True))
            self._wait(lambda: self.alive_nodes() == k + 1, timeout, f"{k + 1} Ray nodes")

    def _wait(self, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            ended = [p.args for p in self.processes if p.poll() is not None]
            if ended or time.monotonic() > deadline:
                logs = "".join(log.read_text()[-2000:] for log in sorted(self.root.glob("*.log")))
                raise RuntimeError(f"no {what} at {self.address} "
                                   f"({'ended: ' + str(ended) if ended else 'timed out'}):\n"
                                   f"{logs}")
            time.sleep(0.5)

    def alive_nodes(self) -> int:
        """The nodes ``ray status`` lists as active."""
        status = subprocess.run([RAY, "status", "--address", self.address], env=self.nodes_env,
                                capture_output=True, text=True, timeout=60).stdout
        if "Active:" not in status:
            return 0
        active = status.split("Active:")[1].split("Pending:")[0]
        return sum(line.strip().startswith("1 node_") for line in active.splitlines())

    def stop(self) -> None:
        """SIGTERM to each ``ray start --block`` (it stops what it started), newest first; what
        of a node's process group outlives it within 30 s is killed; the directory removed."""
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            deadline = time.monotonic() + 30.0
            while _group_alive(process.pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)
        self.processes = []
        shutil.rmtree(self.root, ignore_errors=True)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
