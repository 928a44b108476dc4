"""The live view of a running Simulator: a thread at the display rate copies q and t (no lock:
the step loop is never held), the last step's contacts, and sends the poses; the step loop
pays only for the GIL the thread takes (bench/view.py measures it, docs/VIEW.md)."""
from __future__ import annotations

import threading
import time

import numpy as np

from ..build import Simulated
from ..sim import Simulator
from .scene_graph import SceneGraph, scene_graph, urdf_graph
from .server import ViewServer

DISPLAY_RATE = 30.0  # Hz


def graph_of(simulated: Simulated) -> SceneGraph:
    """The SceneGraph of what a configuration simulates (a scene, or a URDF)."""
    if simulated.scene is not None:
        return scene_graph(simulated.scene)
    if simulated.urdf_source is None:
        raise ValueError("the view needs the URDF or the scene the model was loaded from")
    return urdf_graph(simulated.model, simulated.urdf_source)


def _contacts(sim: Simulator) -> np.ndarray:
    """(k, 2, 3): the last step's contact points and forces. Read while the loop steps: a
    step that changes the buffers meanwhile leaves this frame without contacts."""
    try:
        found = sim.contacts()
    except (IndexError, ValueError):
        return np.zeros((0, 2, 3))
    return np.array([[c.point, c.force] for c in found]).reshape(-1, 2, 3)


class Viewer:
    """``Viewer(sim, simulated, port=8080)``: serves the view of ``sim`` at
    http://127.0.0.1:PORT and updates it at ``rate`` Hz until ``close()`` (or the end of a
    ``with`` block). ``frames`` counts the frames sent."""

    def __init__(self, sim: Simulator, simulated: Simulated | SceneGraph, *,
                 host: str = "127.0.0.1", port: int = 8080, rate: float = DISPLAY_RATE) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be positive, got {rate}")
        graph = simulated if isinstance(simulated, SceneGraph) else graph_of(simulated)
        self.sim, self.period = sim, 1.0 / rate
        self.view = ViewServer(graph, host=host, port=port)
        self.port = self.view.port
        self.frames = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="mbsim-view")
        self._thread.start()

    def _run(self) -> None:
        last_t, last_wall = self.sim.t, time.perf_counter()
        while not self._stop.wait(self.period):
            q, t = self.sim.q.copy(), self.sim.t
            wall = time.perf_counter()
            rtf = (t - last_t) / (wall - last_wall)
            last_t, last_wall = t, wall
            self.view.update(q, t=t, rtf=rtf, contacts=_contacts(self.sim))
            self.frames += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.view.stop()

    def __enter__(self) -> "Viewer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
