"""The viser backend: a SceneGraph sent to the browser (http://HOST:PORT) as viser scene nodes,
``/links/<link>`` a frame per link at its world pose with its visual and collision geometry
below it, ``/ground`` (or ``/terrain``, the heightfield's mesh), ``/boxes/<name>``, ``/com``,
``/contacts``; the GUI's toggles (visual or collision geometry, link frames, centre of mass,
contacts) and a status line (simulated time, real-time factor). ``update(q, ...)`` moves the
frames; nothing else is sent per frame."""
from __future__ import annotations

import warnings

import numpy as np

from .scene_graph import DEFAULT_COLOR, Geometry, MeshWarning, SceneGraph

FORCE_SCALE = 0.002  # m per N of contact force drawn


def _wxyz(R: np.ndarray) -> np.ndarray:
    from viser.transforms import SO3

    return SO3.from_matrix(R).wxyz


def wxyz_of(R: np.ndarray) -> np.ndarray:
    """(n, 4) unit quaternions (w, x, y, z) of (n, 3, 3) rotation matrices, all at once
    (Shepperd: each from its largest diagonal term, w >= 0)."""
    trace = np.trace(R, axis1=1, axis2=2)
    diagonal = np.diagonal(R, axis1=1, axis2=2)
    candidates = np.stack([
        np.stack([1 + trace, R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0],
                  R[:, 1, 0] - R[:, 0, 1]], axis=1),
        np.stack([R[:, 2, 1] - R[:, 1, 2], 1 + 2 * diagonal[:, 0] - trace,
                  R[:, 0, 1] + R[:, 1, 0], R[:, 0, 2] + R[:, 2, 0]], axis=1),
        np.stack([R[:, 0, 2] - R[:, 2, 0], R[:, 0, 1] + R[:, 1, 0],
                  1 + 2 * diagonal[:, 1] - trace, R[:, 1, 2] + R[:, 2, 1]], axis=1),
        np.stack([R[:, 1, 0] - R[:, 0, 1], R[:, 0, 2] + R[:, 2, 0],
                  R[:, 1, 2] + R[:, 2, 1], 1 + 2 * diagonal[:, 2] - trace], axis=1)], axis=1)
    largest = np.argmax(np.concatenate([trace[:, None], diagonal], axis=1), axis=1)
    quaternion = candidates[np.arange(len(R)), largest]
    quaternion /= np.linalg.norm(quaternion, axis=1, keepdims=True)
    return quaternion * np.where(quaternion[:, :1] < 0, -1.0, 1.0)


class LinkPlacements:
    """The links' placements in their bodies' frames as arrays: ``poses(oR, op)`` gives every
    link's world pose (n, 7: wxyz, position) from the bodies' in one vectorised pass (a link
    on the world (body -1) keeps its own)."""

    def __init__(self, graph: SceneGraph) -> None:
        self.body = np.array([max(link.body, 0) for link in graph.links], dtype=int)
        self.world = np.array([link.body < 0 for link in graph.links], dtype=bool)
        self.R = np.array([link.R for link in graph.links]).reshape(-1, 3, 3)
        self.p = np.array([link.p for link in graph.links]).reshape(-1, 3)

    def poses(self, oR: np.ndarray, op: np.ndarray) -> np.ndarray:
        if not len(oR):
            return np.concatenate([wxyz_of(self.R), self.p], axis=1)
        R = np.where(self.world[:, None, None], self.R, oR[self.body] @ self.R)
        p = np.where(self.world[:, None], self.p,
                     op[self.body] + np.einsum("nij,nj->ni", oR[self.body], self.p))
        return np.concatenate([wxyz_of(R), p], axis=1)


def _rgb(color: tuple) -> tuple:
    return tuple(int(round(255 * c)) for c in color[:3])


def _load_mesh(geometry: Geometry):
    """The trimesh mesh of a mesh Geometry, scaled; None and a MeshWarning naming the file
    when it cannot be read."""
    import trimesh

    try:
        mesh = trimesh.load(str(geometry.mesh), force="mesh")
    except Exception as exc:  # noqa: BLE001 - trimesh raises many kinds on bad or unknown files
        warnings.warn(f"mesh file '{geometry.mesh}' cannot be read: {exc}", MeshWarning,
                      stacklevel=2)
        return None
    mesh.apply_scale(geometry.size)
    return mesh


class ViewServer:
    """A viser server drawing ``graph``; ``port=0`` picks a free port (``port`` then tells
    it)."""

    def __init__(self, graph: SceneGraph, host: str = "127.0.0.1", port: int = 8080) -> None:
        import viser

        self.graph = graph
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.port = self.server.get_port()
        self.frames: dict = {}
        self.shapes: dict = {"visual": [], "collision": []}
        self._add_world()
        for link in graph.links:
            self._add_link(link)
        self._add_gui()
        self.server.initial_camera.position = (1.6, -1.6, 1.2)
        self.server.initial_camera.look_at = (0.0, 0.0, 0.4)
        self.com = self.server.scene.add_icosphere("/com", radius=0.03, color=(255, 0, 255))
        self.contacts = None
        self._links = LinkPlacements(graph)
        self._sent = np.full((len(graph.links), 7), np.nan)  # wxyz, position last sent
        self._status = ""

    def _add_world(self) -> None:
        scene = self.server.scene
        if np.any(self.graph.ground[:3]):
            normal, height = self.graph.ground[:3], self.graph.ground[3]
            axis = np.cross([0.0, 0.0, 1.0], normal)
            angle = np.arctan2(np.linalg.norm(axis), normal[2])
            from viser.transforms import SO3

            wxyz = SO3.exp(axis / np.linalg.norm(axis) * angle).wxyz \
                if np.linalg.norm(axis) > 0 else (1.0, 0.0, 0.0, 0.0)
            scene.add_grid("/ground", width=6.0, height=6.0, wxyz=wxyz,
                           position=normal * height, plane_opacity=0.3)
        elif self.graph.terrain_mesh() is None:
            scene.add_grid("/ground", width=4.0, height=4.0)
        terrain = self.graph.terrain_mesh()
        if terrain is not None:
            scene.add_mesh_simple("/terrain", vertices=terrain[0], faces=terrain[1],
                                  color=(140, 150, 130), flat_shading=True)
        for name, box in zip(self.graph.box_names, self.graph.boxes):
            scene.add_box(f"/boxes/{name}", color=(150, 150, 170), dimensions=2 * box[12:15],
                          wxyz=_wxyz(box[:9].reshape(3, 3)), position=box[9:12])

    def _add_link(self, link) -> None:
        path = f"/links/{link.name}"
        self.frames[link.name] = self.server.scene.add_frame(
            path, show_axes=False, axes_length=0.1, axes_radius=0.004)
        shown_visual = [self._add_shape(f"{path}/visual/{k}", g)
                        for k, g in enumerate(link.visual)]
        no_visual = not any(shown_visual)  # a missing mesh: its collision geometry instead
        for k, geometry in enumerate(link.collision):
            handle = self._add_shape(f"{path}/collision/{k}", geometry)
            if handle is not None:
                handle.visible = no_visual
                if not no_visual:
                    self.shapes["collision"].append(handle)
        self.shapes["visual"] += [h for h in shown_visual if h is not None]

    def _add_shape(self, name: str, g: Geometry):
        scene, pose = self.server.scene, {"wxyz": _wxyz(g.R), "position": g.p}
        color = _rgb(g.color)
        if g.kind == "sphere":
            return scene.add_icosphere(name, radius=float(g.size[0]), color=color, **pose)
        if g.kind == "box":
            return scene.add_box(name, dimensions=g.size, color=color, **pose)
        if g.kind == "cylinder":
            return scene.add_cylinder(name, radius=float(g.size[0]), height=float(g.size[1]),
                                      color=color, **pose)
        mesh = _load_mesh(g)
        if mesh is None:
            return None
        if g.color == DEFAULT_COLOR:  # no URDF material: the file's own colours
            return scene.add_mesh_trimesh(name, mesh, **pose)
        return scene.add_mesh_simple(name, np.asarray(mesh.vertices), np.asarray(mesh.faces),
                                     color=color, opacity=g.color[3] if g.color[3] < 1 else None,
                                     **pose)

    def _add_gui(self) -> None:
        gui = self.server.gui
        self.status = gui.add_markdown("t = 0.000 s")
        self.show_collision = gui.add_checkbox("collision geometry", False)
        self.show_frames = gui.add_checkbox("link frames", False)
        self.show_com = gui.add_checkbox("centre of mass", True)
        self.show_contacts = gui.add_checkbox("contacts", True)
        self.show_collision.on_update(lambda _: self._toggle_geometry())
        self.show_frames.on_update(lambda _: self._toggle_frames())
        with gui.add_folder("links"):
            gui.add_markdown(", ".join(link.name for link in self.graph.links))

    def _toggle_geometry(self) -> None:
        collision = self.show_collision.value
        for handle in self.shapes["visual"]:
            handle.visible = not collision
        for handle in self.shapes["collision"]:
            handle.visible = collision

    def _toggle_frames(self) -> None:
        for frame in self.frames.values():
            frame.show_axes = self.show_frames.value

    def update(self, q: np.ndarray, t: float | None = None, rtf: float | None = None,
               contacts: np.ndarray | None = None) -> None:
        """Move every link to its pose at q; the status line shows t (s) and the real-time
        factor; ``contacts``: (k, 2, 3) contact points and force vectors (N, world). Only the
        links that moved (by more than 1e-6) are sent, in one atomic batch."""
        oR, op = self.graph.body_poses(q)
        poses = self._links.poses(oR, op)
        moved = np.flatnonzero(~(np.abs(poses - self._sent) <= 1e-6).all(axis=1))
        with self.server.atomic():
            for k in moved:
                frame = self.frames[self.graph.links[k].name]
                frame.wxyz, frame.position = poses[k, :4], poses[k, 4:]
            self._sent[moved] = poses[moved]
            self.com.visible = self.show_com.value
            self.com.position = self.graph.centre_of_mass(q)
            if contacts is not None:
                self._draw_contacts(contacts)
        if t is not None:
            self._set_status(f"t = {t:.3f} s" + (f", real-time factor {rtf:.2f}"
                                                 if rtf is not None else ""))

    def _set_status(self, text: str) -> None:
        if text != self._status:
            self.status.content = self._status = text

    def _draw_contacts(self, contacts: np.ndarray) -> None:
        if self.contacts is None and not len(contacts):
            return
        if self.contacts is not None:
            self.contacts.remove()
            self.contacts = None
        if len(contacts) and self.show_contacts.value:
            points = np.stack([contacts[:, 0], contacts[:, 0] + FORCE_SCALE * contacts[:, 1]],
                              axis=1)
            self.contacts = self.server.scene.add_arrows(
                "/contacts", points=points, colors=(255, 40, 40), shaft_radius=0.005,
                head_radius=0.012, head_length=0.02)

    def joint_sliders(self, q0: np.ndarray) -> None:
        """A slider per one-DOF joint (within its limits, else +-pi) that sets q and redraws:
        forward kinematics of a URDF or a scene at its start."""
        model, q = self.graph.model, np.array(q0, dtype=float)
        folder = self.server.gui.add_folder("joints")
        with folder:
            for j, name in enumerate(model.joint_names):
                if model.joint_kinds[j] == "free_flyer":
                    continue
                iq = int(model.joint_int[j, 2])
                low, high = model.lower_position_limit[iq], model.upper_position_limit[iq]
                low, high = (low, high) if np.isfinite(low) and np.isfinite(high) \
                    else (-np.pi, np.pi)
                slider = self.server.gui.add_slider(name, min=float(low), max=float(high),
                                                    step=1e-3, initial_value=float(q[iq]))
                slider.on_update(lambda event, iq=iq: self._set_joint(q, iq, event.target.value))
        self.update(q)

    def _set_joint(self, q: np.ndarray, iq: int, value: float) -> None:
        q[iq] = value
        self.update(q)

    def stop(self) -> None:
        self.server.stop()
