"""DDS domains for simulations that must not hear each other on one host: campaign workers,
pytest(-xdist) workers, tests. A process claims a free ROS_DOMAIN_ID by taking an exclusive
``flock`` on a file named after it; the kernel releases the lock when the process ends, however
it ends (killed included), so a domain is never leaked. Discovery is kept on the host
(``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``): two machines of a Ray cluster may use the same
domain number without meeting.

Fast DDS derives its ports from the domain (7400 + 250 d + ...), so domains above 232 do not
fit in the port range; 0 is ROS's default, which a user's own graph on this host is likely on.
A domain whose discovery ports are bound on this host (a participant of a program that does not
take these locks) is skipped too.
"""
from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from pathlib import Path

FIRST, LAST = 101, 232  # the default graph (0) and hand-picked low domains stay untouched
LOCALHOST = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


def discovery_ports(domain: int) -> tuple[int, ...]:
    """The UDP ports a DDS participant on ``domain`` binds first (RTPS's well-known ports:
    7400 + 250 d, the multicast discovery port, and + 10, the first participant's unicast
    discovery port)."""
    base = 7400 + 250 * domain
    return base, base + 10


def in_use(domain: int) -> bool:
    """Whether a participant on this host holds one of ``domain``'s discovery ports (a bind
    without SO_REUSEADDR fails against any socket bound there)."""
    for port in discovery_ports(domain):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                return True
    return False


class NoFreeDomain(RuntimeError):
    """Every domain of the range is claimed by a live process on this host."""


def _folder() -> Path:
    folder = Path(os.environ.get("MBSIM_ROS_DOMAIN_DIR")
                  or Path(tempfile.gettempdir()) / "mbsim_ros_domains")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class DomainClaim:
    """A domain held by this process until ``release()`` (or the process's end). ``env``: the
    environment entries that put a process on it, discovery on this host only."""

    def __init__(self, domain_id: int, handle) -> None:
        self.domain_id = domain_id
        self._handle = handle

    @property
    def env(self) -> dict[str, str]:
        return {"ROS_DOMAIN_ID": str(self.domain_id), **LOCALHOST}

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file drops the lock
            self._handle = None


def claim_domain(start: int | None = None) -> DomainClaim:
    """The first free domain of [FIRST, LAST], searched from ``start`` (default: spread by the
    process id, so concurrent claimers rarely contend); NoFreeDomain when all are held."""
    span = LAST - FIRST + 1
    offset = (os.getpid() if start is None else start - FIRST) % span
    folder = _folder()
    for k in range(span):
        domain = FIRST + (offset + k) % span
        handle = open(folder / f"{domain}.lock", "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        if in_use(domain):
            handle.close()
            continue
        return DomainClaim(domain, handle)
    raise NoFreeDomain(f"all DDS domains {FIRST}-{LAST} are held by processes on this host "
                       f"(lock files in {folder}) or have their discovery ports bound")


_PROCESS_CLAIM: DomainClaim | None = None


def process_domain() -> DomainClaim:
    """This process's domain, claimed at the first call and held until it ends (a Ray worker
    keeps one for all the runs it does)."""
    global _PROCESS_CLAIM
    if _PROCESS_CLAIM is None:
        _PROCESS_CLAIM = claim_domain()
    return _PROCESS_CLAIM
