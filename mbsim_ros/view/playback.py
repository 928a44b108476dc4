"""A recording played in the view: the MCAP file's joint_states (the one-DOF joints in the
Model's order) and, for a free-flying base, its odometry give q at each recorded stamp, and its
contact wrenches the force arrows; a time slider, play / pause and a speed factor drive
``ViewServer.update`` from a thread at the display rate."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ..model import Model
from ..recording.topics import topic_segment
from .server import ViewServer

DISPLAY_RATE = 30.0  # Hz
CONTACTS = "/contact_wrenches/"  # the recording's contact wrench topics, one per link


def read_trajectory(path: str | Path, model: Model) -> tuple[np.ndarray, np.ndarray,
                                                             np.ndarray]:
    """(times (k,), q (k, nq), contact wrenches (k, bodies, 6): force and torque about each
    body's origin in its axes, zero where none was recorded) of a recording of ``model``:
    ValueError naming what does not match (no joint_states, other joint names, several
    free-flyers)."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    flyers = [j for j, kind in enumerate(model.joint_kinds) if kind == "free_flyer"]
    if len(flyers) > 1:
        raise ValueError(f"{path}: a recording holds one odometry; the model has "
                         f"{len(flyers)} free-flyers")
    states, odometry, wrenches = {}, {}, {}
    bodies = {topic_segment(name): b for b, name in enumerate(model.body_names)}
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages():
            if channel.topic.endswith("joint_states"):
                states[message.log_time] = decoded
            elif channel.topic.endswith("/odom"):
                odometry[message.log_time] = decoded.pose.pose
            elif CONTACTS in channel.topic:
                body = bodies.get(channel.topic.split(CONTACTS, 1)[1])
                if body is not None:
                    wrenches.setdefault(message.log_time, []).append((body, decoded.wrench))
    if not states:
        raise ValueError(f"{path}: no joint_states messages")
    stamps = sorted(states)
    q = np.tile(model.neutral(), (len(stamps), 1))
    names = [n for n, kind in zip(model.joint_names, model.joint_kinds) if kind != "free_flyer"]
    columns = [int(model.joint_int[model.joint_names.index(n), 2]) for n in names]
    for k, stamp in enumerate(stamps):
        message = states[stamp]
        if list(message.name) != names:
            raise ValueError(f"{path}: joint_states names {list(message.name)[:4]}... are not "
                             f"the model's one-DOF joints {names[:4]}...")
        q[k, columns] = message.position
        if flyers and stamp in odometry:
            iq, pose = int(model.joint_int[flyers[0], 2]), odometry[stamp]
            q[k, iq:iq + 7] = (pose.position.x, pose.position.y, pose.position.z,
                               pose.orientation.x, pose.orientation.y, pose.orientation.z,
                               pose.orientation.w)
    return np.array(stamps, dtype=float) * 1e-9, q, _wrench_table(stamps, wrenches, model)


def _wrench_table(stamps: list, wrenches: dict, model: Model) -> np.ndarray:
    """(k, bodies, 6) from {stamp: [(body, Wrench message)]}."""
    table = np.zeros((len(stamps), len(model.body_names), 6))
    for k, stamp in enumerate(stamps):
        for body, w in wrenches.get(stamp, ()):
            table[k, body] = (w.force.x, w.force.y, w.force.z,
                              w.torque.x, w.torque.y, w.torque.z)
    return table


def contact_arrows(oR: np.ndarray, op: np.ndarray, wrenches: np.ndarray) -> np.ndarray:
    """(m, 2, 3) arrows (point, force; world) of the bodies with a contact force: a recording
    keeps each body's contact wrench, not its contact points, so the arrow stands on the
    wrench's line of action at its point nearest the body's origin, f x tau / |f|^2 (body
    axes): for a single contact, the line through the contact point along its force."""
    f, tau = wrenches[:, :3], wrenches[:, 3:]
    size = np.einsum("bi,bi->b", f, f)
    loaded = np.flatnonzero(size > 1e-18)
    local = np.cross(f[loaded], tau[loaded]) / size[loaded, None]
    points = op[loaded] + np.einsum("bij,bj->bi", oR[loaded], local)
    forces = np.einsum("bij,bj->bi", oR[loaded], f[loaded])
    return np.stack([points, forces], axis=1)


class Player:
    """Plays (times, q) in ``view``: GUI time slider, play / pause, speed."""

    def __init__(self, view: ViewServer, times: np.ndarray, q: np.ndarray,
                 wrenches: np.ndarray | None = None) -> None:
        self.view, self.times, self.q = view, times, q
        self.wrenches = wrenches if wrenches is not None and wrenches.any() else None
        gui = view.server.gui
        self.slider = gui.add_slider("time (s)", min=float(times[0]),
                                     max=float(max(times[-1], times[0] + 1e-3)),
                                     step=1e-3, initial_value=float(times[0]))
        self.playing = gui.add_checkbox("play", True)
        self.speed = gui.add_slider("speed", min=0.05, max=4.0, step=0.05, initial_value=1.0)
        self.slider.on_update(lambda _: self.show(self.slider.value))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="mbsim-view-play")

    def show(self, t: float) -> None:
        """The recorded state at the last stamp not after t."""
        k = int(np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.times) - 1))
        arrows = None
        if self.wrenches is not None:
            arrows = contact_arrows(*self.view.graph.body_poses(self.q[k]), self.wrenches[k])
        self.view.update(self.q[k], t=float(self.times[k]), contacts=arrows)

    def start(self) -> None:
        self.show(self.times[0])
        self._thread.start()

    def _run(self) -> None:
        period = 1.0 / DISPLAY_RATE
        while not self._stop.wait(period):
            if self.playing.value:
                t = self.slider.value + period * self.speed.value
                self.slider.value = float(self.times[0]) if t > self.times[-1] else t
                self.show(self.slider.value)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
