"""Recording forces and frames of a run, and drawing them: `mbsim-ros plot` (joint trajectories,
energy, joint and closure forces to PNG) and `--animate` (a 3-D stick figure, GIF or MP4, like
the post's animate_scene).

A recording is a mapping of arrays (what `simulate --forces` writes to its .npz):
``joint_wrenches`` (T, joints, 6), ``closure_labels`` / ``closure_forces`` (T, rows),
``origins`` (T, joints, 3: joint frame origins, world), ``parents`` (joints,), ``bars``
(joints,: drawn as a bar from the parent; a prismatic joint is drawn as a dot when it ends a
branch, so a point mass is a dot),
``segments`` (T, elements, 2, 3: the two ends of every closure, link and spring), ``limbs``
(T, 2 elements, 2, 3: each end's joint origin to the end, NaN on the world).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .dynamics.closures import ConstraintKinematics, row_labels


class ForceRecorder:
    """Collects the recording arrays of a Simulator step by step."""

    def __init__(self, sim, steps: int) -> None:
        self.sim = sim
        self.kinematics = ConstraintKinematics(sim.model)
        integrator = sim.integrator
        self.elements = [c for c in getattr(integrator, "constraints", ())
                         if hasattr(c, "unit_wrenches")]
        self.lines = self.elements + list(getattr(integrator, "springs", ()))
        m, rows = sim.model, sum(e.row_count for e in self.elements)
        self.arrays = {"joint_wrenches": np.zeros((steps + 1, m.njoints, 6)),
                       "closure_forces": np.zeros((steps + 1, rows)),
                       "origins": np.zeros((steps + 1, m.njoints, 3)),
                       "segments": np.zeros((steps + 1, len(self.lines), 2, 3)),
                       "limbs": np.full((steps + 1, 2 * len(self.lines), 2, 3), np.nan)}
        self.labels = row_labels(self.elements)

    def record(self, k: int) -> None:
        sim, out = self.sim, self.arrays
        wrenches = sim.joint_wrenches()
        out["joint_wrenches"][k] = [wrenches[name] for name in sim.model.joint_names]
        forces = sim.closure_forces()
        if self.elements:
            out["closure_forces"][k] = np.concatenate([forces[e.name] for e in self.elements])
        oR, op, _ = self.kinematics.evaluate(np.array(sim.q))
        out["origins"][k] = op
        for s, line in enumerate(self.lines):
            out["segments"][k, s] = (line.a.pose(oR, op)[1], line.b.pose(oR, op)[1])
            for side, end in enumerate((line.a, line.b)):  # the body out to the attachment
                if end.joint >= 0:
                    out["limbs"][k, 2 * s + side] = (op[end.joint], end.pose(oR, op)[1])

    def result(self, done: int) -> dict:
        kept = {key: value[:done + 1] for key, value in self.arrays.items()}
        model = self.sim.model
        return {**kept, "closure_labels": np.array(self.labels, dtype=str),
                "parents": np.array(model.parent),
                "bars": np.array([kind != "prismatic" for kind in model.joint_kinds])}


def plot(data, out: Path, title: str) -> None:
    """Joint positions, energy and (when recorded) joint-force magnitudes, closure forces and
    contact-force magnitudes per link."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, q = data["t"], data["q"]
    forces = "joint_wrenches" in data
    contacts = "contact_wrenches" in data
    panels = 2 + (2 if forces else 0) + (1 if contacts else 0)
    fig, axes = plt.subplots(panels, 1, figsize=(8, 3 * panels), sharex=True)
    names = [str(n) for n in data["joint_names"]] if "joint_names" in data else []
    for k in range(q.shape[1]):
        axes[0].plot(t, q[:, k], label=names[k] if q.shape[1] == len(names) else f"q{k}")
    axes[0].set_ylabel("q")
    axes[0].legend(fontsize=7, ncol=4)
    axes[1].plot(t, data["energy"] - data["energy"][0])
    axes[1].set_ylabel("E - E0 [J]")
    if forces:
        wrenches = data["joint_wrenches"]
        for j in range(wrenches.shape[1]):
            axes[2].plot(t, np.linalg.norm(wrenches[:, j, :3], axis=1),
                         label=names[j] if j < len(names) else f"joint {j}")
        axes[2].set_ylabel("|joint force| [N]")
        axes[2].legend(fontsize=7, ncol=4)
        labels = [str(s) for s in data["closure_labels"]]
        for r, label in enumerate(labels):
            axes[3].plot(t, data["closure_forces"][:, r], label=label)
        axes[3].set_ylabel("closure forces [N, N m]")
        if labels:
            axes[3].legend(fontsize=7)
    if contacts:
        for j, link in enumerate(data["contact_links"]):
            axes[-1].plot(t, np.linalg.norm(data["contact_wrenches"][:, j, :3], axis=1),
                          label=str(link))
        axes[-1].set_ylabel("|contact force| [N]")
        axes[-1].legend(fontsize=7, ncol=4)
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def animate(data, out: Path, *, frames: int = 120, fps: int = 30) -> None:
    """A 3-D stick figure: each joint origin joined to its parent's (or the world origin's),
    closures, links and springs as dashed lines; GIF (Pillow) or MP4 (ffmpeg) by suffix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.animation import FFMpegWriter, FuncAnimation, PillowWriter

    origins, parents, segments = data["origins"], data["parents"], data["segments"]
    bars_drawn = data["bars"]
    leaves = [j for j in range(len(parents)) if j not in set(parents.tolist())]
    picks = np.linspace(0, len(origins) - 1, min(frames, len(origins))).astype(int)
    fig = plt.figure(figsize=(4, 4))
    ax = fig.add_subplot(projection="3d")
    every = np.concatenate([origins.reshape(-1, 3), segments.reshape(-1, 3), np.zeros((1, 3))])
    centre = (every.max(axis=0) + every.min(axis=0)) / 2
    half = max(np.ptp(every, axis=0).max() / 2, 1e-3)
    ax.set(xlim=(centre[0] - half, centre[0] + half), ylim=(centre[1] - half, centre[1] + half),
           zlim=(centre[2] - half, centre[2] + half), xlabel="x", ylabel="y", zlabel="z")
    bars = [ax.plot([], [], [], "o-", color="tab:blue")[0] for _ in parents]
    lines = [ax.plot([], [], [], "--", color="tab:red")[0] for _ in range(segments.shape[1])]
    limbs = data["limbs"]
    arms = [ax.plot([], [], [], "-", color="tab:blue")[0] for _ in range(limbs.shape[1])]
    clock = ax.set_title("")

    def draw(k: int):
        frame = picks[k]
        for j, bar in enumerate(bars):
            start = origins[frame, parents[j]] if parents[j] >= 0 else np.zeros(3)
            if not bars_drawn[j]:  # a prismatic joint: a dot where a branch ends, else nothing
                start = origins[frame, j] if j in leaves else np.full(3, np.nan)
            ends = np.stack([start, origins[frame, j]])
            bar.set_data_3d(ends[:, 0], ends[:, 1], ends[:, 2])
        for pieces, artists in ((segments, lines), (limbs, arms)):
            for s, artist in enumerate(artists):
                ends = pieces[frame, s]
                artist.set_data_3d(ends[:, 0], ends[:, 1], ends[:, 2])
        clock.set_text(f"t = {data['t'][frame]:.2f} s")
        return [*bars, *lines, *arms, clock]

    animation = FuncAnimation(fig, draw, frames=len(picks), blit=False)
    writer = FFMpegWriter(fps=fps) if Path(out).suffix == ".mp4" else PillowWriter(fps=fps)
    animation.save(out, writer=writer)
    plt.close(fig)
