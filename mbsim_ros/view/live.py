"""The live view of a running simulation: a thread at the display rate reads a frame (q, t, the
contacts) from a ``read`` function and sends the poses. ``Viewer(sim)`` reads a library
Simulator directly (no lock: the step loop is never held); the node (ros/node.py) reads a buffer
its loop fills at the display rate. The step loop pays only for the GIL the thread takes
(bench/view.py measures it, docs/VIEW.md)."""
from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from ..build import Simulated
from ..sim import Simulator
from .scene_graph import SceneGraph, scene_graph, urdf_graph
from .server import ViewServer

DISPLAY_RATE = 30.0  # Hz

# q, simulated time (s), contacts (k, 2, 3) or None; None: no new frame
Frame = tuple[np.ndarray, float, np.ndarray | None]


def graph_of(simulated: Simulated) -> SceneGraph:
    """The SceneGraph of what a configuration simulates (a scene, or a URDF)."""
    if simulated.scene is not None:
        return scene_graph(simulated.scene)
    if simulated.urdf_source is None:
        raise ValueError("the view needs the URDF or the scene the model was loaded from")
    return urdf_graph(simulated.model, simulated.urdf_source)


def contacts_of(sim: Simulator) -> np.ndarray:
    """(k, 2, 3): the last step's contact points and forces. Read while the loop steps: a
    step that changes the buffers meanwhile leaves this frame without contacts."""
    try:
        found = sim.contacts()
    except (IndexError, ValueError):
        return np.zeros((0, 2, 3))
    return np.array([[c.point, c.force] for c in found]).reshape(-1, 2, 3)


class LiveView:
    """Serves ``graph`` at http://HOST:PORT (``port``: the one bound) and, from a thread,
    sends ``read()``'s frame every 1/``rate`` s (absolute deadlines: a late frame does not
    delay the next) until ``close()``. ``frames`` counts the frames sent."""

    def __init__(self, graph: SceneGraph, read: Callable[[], Frame | None], *,
                 host: str = "127.0.0.1", port: int = 8080, rate: float = DISPLAY_RATE) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.read, self.period = read, 1.0 / rate
        self.view = ViewServer(graph, host=host, port=port)
        self.port = self.view.port
        self.frames = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="mbsim-view")

    def start(self) -> "LiveView":
        self._thread.start()
        return self

    def _run(self) -> None:
        last: tuple[float, float] | None = None  # (simulated, wall) time of the last frame
        deadline = time.perf_counter()
        while not self._stop.wait(max(deadline + self.period - time.perf_counter(), 0.0)):
            deadline = max(deadline + self.period, time.perf_counter() - self.period)
            frame = self.read()
            if frame is None:
                continue
            q, t, contacts = frame
            wall = time.perf_counter()
            rtf = (t - last[0]) / (wall - last[1]) if last else None
            last = (t, wall)
            self.view.update(q, t=t, rtf=rtf, contacts=contacts)
            self.frames += 1

    def close(self) -> None:
        """Stop the thread and the server (idempotent)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.view.stop()

    def __enter__(self) -> "LiveView":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Viewer(LiveView):
    """``Viewer(sim, simulated=None, port=8080)``: the live view of a library Simulator at
    ``rate`` Hz until ``close()`` (or the end of a ``with`` block). ``simulated``: the
    ``Simulated`` (or a SceneGraph) the Simulator was made from; not needed for a Simulator
    made by ``Simulator.from_scene``, whose scene keeps its models' URDF text."""

    def __init__(self, sim: Simulator, simulated: Simulated | SceneGraph | None = None, *,
                 host: str = "127.0.0.1", port: int = 8080, rate: float = DISPLAY_RATE) -> None:
        self.sim = sim
        super().__init__(_graph(sim, simulated), self._frame, host=host, port=port, rate=rate)
        self.start()

    def _frame(self) -> Frame:
        return self.sim.q.copy(), self.sim.t, contacts_of(self.sim)


def _graph(sim: Simulator, simulated: Simulated | SceneGraph | None) -> SceneGraph:
    if isinstance(simulated, SceneGraph):
        return simulated
    if simulated is not None:
        return graph_of(simulated)
    if getattr(sim, "scene", None) is None:
        raise ValueError("Viewer(sim) needs the Simulated (or SceneGraph) the Simulator was "
                         "made from, unless Simulator.from_scene made it")
    return scene_graph(sim.scene)
