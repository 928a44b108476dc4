"""Ray for a campaign. With no address, an instance of the campaign's own on this machine,
started and stopped by it (never a cluster that ``ray start`` named in
/tmp/ray/ray_current_cluster: ``ray.init(address="local")``); with ``--address`` or
RAY_ADDRESS, that cluster, checked before it is joined: an address where nothing answers, or a
cluster that refuses this driver's authentication token, is one line (RayUnavailable) within
seconds instead of Ray's 20 s of retries and a traceback. Ray's own start-up lines stay off the
terminal unless asked for (``verbose``). The tasks import this package, the spec's folder and
the working directory (``worker_env``: runtime_env PYTHONPATH)."""
from __future__ import annotations

import logging
import os
import socket
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
CONNECT_TIMEOUT = 3.0  # s for a TCP connection to a cluster's address
GUIDE = "docs/CAMPAIGNS.md, 'Past one machine'"


class RayUnavailable(RuntimeError):
    """The Ray cluster asked for cannot be used: one line saying which, why and what to do."""


def requested_address(address: str | None) -> tuple[str | None, str]:
    """(the cluster to join, who asked: ``--address`` or ``RAY_ADDRESS``); (None, "") for an
    instance of the campaign's own."""
    if address:
        return address, "--address"
    from_environment = os.environ.get("RAY_ADDRESS", "")
    if from_environment and from_environment != "local":
        return from_environment, "RAY_ADDRESS"
    return None, ""


def start_ray(address: str | None = None, workers: int | None = None,
              verbose: bool = False) -> str:
    """ray.init: join the cluster at ``address`` (or RAY_ADDRESS), checked first, or start an
    instance of ``workers`` CPUs (default: the machine's) of the campaign's own. The line that
    says which. RayUnavailable when the cluster cannot be joined."""
    import ray

    if ray.is_initialized():
        return "Ray: the instance this process had already started"
    level = logging.INFO if verbose else logging.ERROR
    where, source = requested_address(address)
    if where is None:
        ray.init(address="local", num_cpus=workers, include_dashboard=False,
                 logging_level=level, log_to_driver=verbose)
        return f"Ray: an instance of this campaign's own, {_cpus()} CPUs"
    use_token_if_found()
    check_cluster(where, source, verbose)
    try:
        with quiet_stderr(verbose):
            ray.init(address=where, logging_level=level, log_to_driver=verbose)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayUnavailable(f"the Ray cluster at {where} ({source}): {first}") from None
    nodes = sum(1 for node in ray.nodes() if node["Alive"])
    return f"Ray: the cluster at {where} ({source}), {nodes} nodes, {_cpus()} CPUs"


def _cpus() -> int:
    import ray

    return int(ray.cluster_resources().get("CPU", 0))


def token_source() -> str | None:
    """Where Ray reads this driver's authentication token from, in Ray's order (RAY_AUTH_TOKEN,
    the file RAY_AUTH_TOKEN_PATH names, ~/.ray/auth_token); None when there is none."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    if os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return os.environ["RAY_AUTH_TOKEN_PATH"]
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() else None


def use_token_if_found() -> None:
    """Token authentication on for this driver when RAY_AUTH_MODE is unset and a token is at
    hand: what ``ray.init()`` does for a cluster it finds itself, and harmless against a
    cluster without authentication (it ignores the token)."""
    if "RAY_AUTH_MODE" in os.environ or token_source() is None:
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    from ray._raylet import Config

    Config.initialize("")  # Ray caches its settings at import: read the mode again


def check_cluster(where: str, source: str, verbose: bool = False) -> None:
    """RayUnavailable unless a Ray cluster answers at ``where`` (host:port) and accepts this
    driver's token: a TCP connection, then one request to its GCS."""
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        return  # not host:port (ray://, auto): ray.init judges it
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise RayUnavailable(f"no Ray cluster answers at {where} ({source}): "
                             f"{exc.strerror or exc}; start one ({GUIDE}) or give the head's "
                             f"address") from None
    named = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if named and not os.environ.get("RAY_AUTH_TOKEN") and not Path(named).is_file():
        raise RayUnavailable(f"RAY_AUTH_TOKEN_PATH names {named}, which is not a file (Ray "
                             f"would abort): give the cluster's token there ({GUIDE})")
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError

    try:
        with quiet_stderr(verbose):
            GcsClient(address=where)
    except AuthenticationError:
        raise RayUnavailable(refusal(where, source)) from None
    except Exception as exc:  # noqa: BLE001 - whatever answers there is not a Ray cluster
        raise RayUnavailable(f"no Ray cluster answers at {where} ({source}): {exc}") from None


def refusal(where: str, source: str) -> str:
    """The line for a cluster that refuses this driver's token (missing or another one)."""
    found = token_source()
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        why = "this driver sends none (RAY_AUTH_MODE=disabled)"
    elif found is None:
        why = "this driver has none (no RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)"
    else:
        why = f"the one in {found} is not the cluster's"
    return (f"the Ray cluster at {where} ({source}) refuses this driver's authentication token: "
            f"{why}; give it the cluster's token (the head's ~/.ray/auth_token: copy it, or "
            f"export RAY_AUTH_TOKEN=...) with RAY_AUTH_MODE=token ({GUIDE})")


@contextmanager
def quiet_stderr(verbose: bool) -> Iterator[None]:
    """Ray's native code writes its connection warnings to file descriptor 2 directly: sent
    to /dev/null for the block unless ``verbose``."""
    if verbose:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def module_folders(spec) -> list[str]:
    """Where a campaign's Python modules (a ``python`` controller's) are imported from: the
    spec's folder (a spec file) and the working directory."""
    folders = [] if isinstance(spec, dict) else [str(Path(spec).resolve().parent)]
    return list(dict.fromkeys([*folders, os.getcwd()]))


def importable(folders: list[str]) -> None:
    """The folders first on this process's sys.path, as Python puts a script's folder."""
    for folder in reversed(folders):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def worker_env(folders: list[str]) -> dict:
    """The tasks' runtime_env: PYTHONPATH with the folders, this package's root and the
    driver's PYTHONPATH (the same paths on every node)."""
    paths = [*folders, PACKAGE_ROOT, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(p for p in paths if p))}}
