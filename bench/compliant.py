"""The compliant-contact integrator's figures (docs/COMPLIANT.md):

1. Solo12 standing on a steel floor under joint PD control, 1 kHz: median time per step for the
   true cone and the pyramid with our compiled interior-point solver (the default) and with the
   reference solvers (clarabel SOCP / QP, osqp QP); base height and foot slide.
2. Sphere stacks of 10, 30, 100 steel spheres at 10 ms: time per step against the number of
   spheres, ours and clarabel (Drumwright's Fig. 10), plotted to
   docs/figures/compliant_stack_scaling.png.
3. The friction sweep on the 30 degree incline (Drumwright's Fig. 9): slide distance after 1 s
   against the friction coefficient, ours and Coulomb's analytic answer, plotted to
   docs/figures/compliant_friction_sweep.png.

    python bench/compliant.py [--quick]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see mbsim_ros/__init__.py

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsim_ros import Simulator  # noqa: E402
from mbsim_ros.contact.scene import load_scene  # noqa: E402
from mbsim_ros.scenarios import DOWNHILL, G, THETA, brick_urdf, incline  # noqa: E402

FIGURES = ROOT / "docs" / "figures"


def solo(seconds: float, **options) -> dict:
    scene = load_scene(ROOT / "config" / "scenes" / "solo12_standing.yaml")
    legs = np.array([0.0, 0.8, -1.6] * 4)
    q0 = scene.q0.copy()
    q0[7:] = legs
    sim = Simulator.from_scene(scene, dt=1e-3, **options)
    sim.reset(q0)
    tau = np.zeros(sim.model.nv)
    steps = int(seconds * 1000)
    times = np.empty(steps)
    feet = {}
    for k in range(steps):
        tau[6:] = 30.0 * (legs - sim.q[7:]) - 0.3 * sim.v[6:]
        start = time.perf_counter()
        sim.step(tau)
        times[k] = time.perf_counter() - start
        if k in (199, steps - 1):
            feet[k] = {c.link: c.point.copy() for c in sim.contacts() if c.depth > 0}
    slide = max(np.linalg.norm((feet[steps - 1][link] - feet[199][link])[:2])
                for link in feet[199])
    return {"median_us": np.median(times) * 1e6, "p90_us": np.percentile(times, 90) * 1e6,
            "height": sim.q[2], "slide_mm": slide * 1e3, "rtf": 1e-3 / np.mean(times)}


def stack(n: int, steps: int, qp_solver: str = "interior") -> float:
    """Median seconds per 10 ms step of an n-sphere stack settling (after the first steps,
    once every contact is there)."""
    r = 0.05
    models = [{"sphere": {"radius": r, "mass": 1.0}, "name": f"s{k}",
               "position": [0.0, 0.0, r + k * (2 * r + 1e-3)]} for k in range(n)]
    sim = Simulator.from_scene({"ground": {"friction": 0.5}, "models": models}, dt=0.01,
                               solver=qp_solver)
    for _ in range(3):
        sim.step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        sim.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def new_axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6, 4))


def save(fig, name: str) -> Path:
    fig.tight_layout()
    FIGURES.mkdir(parents=True, exist_ok=True)
    out = FIGURES / name
    fig.savefig(out, dpi=120)
    return out


def plot_stacks(sizes, seconds: dict) -> Path:
    fig, ax = new_axes()
    for (label, times), marker in zip(seconds.items(), "os"):
        ax.loglog(sizes, np.array(times) * 1e3, marker + "-", label=label)
    ax.set_xlabel("spheres in the stack")
    ax.set_ylabel("time per 10 ms step [ms]")
    ax.set_title("Sphere stacks, true friction cone (Drumwright 2019, Fig. 10)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, "compliant_stack_scaling.png")


def friction_sweep(frictions, dt: float) -> list[float]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "brick.urdf"
        path.write_text(brick_urdf())
        slides = []
        for friction in frictions:
            sim = incline(str(path), friction, dt)
            start = sim.q[:3].copy()
            for _ in range(int(round(1.0 / dt))):
                sim.step()
            slides.append(float((sim.q[:3] - start) @ DOWNHILL))
    return slides


def plot_sweep(frictions, slides_by_dt: dict) -> Path:
    fine = np.linspace(0.0, 0.8, 200)
    analytic = 0.5 * G * np.maximum(math.sin(THETA) - fine * math.cos(THETA), 0.0)
    fig, ax = new_axes()
    ax.plot(fine, analytic, "k-", label="Coulomb (analytic)")
    for (dt, slides), marker in zip(slides_by_dt.items(), "os^"):
        ax.plot(frictions, slides, marker, mfc="none", label=f"compliant, dt = {dt * 1e3:g} ms")
    ax.axvline(math.tan(THETA), color="0.7", ls=":", label="tan 30 deg")
    ax.set_xlabel("friction coefficient")
    ax.set_ylabel("slide after 1 s [m]")
    ax.set_title("Box on a 30 degree incline (Drumwright 2019, Fig. 9)")
    ax.legend(fontsize=8)
    return save(fig, "compliant_friction_sweep.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds = 1.0 if args.quick else 10.0
    print(f"Solo12 standing, 1 kHz, {seconds:g} s (PD kp 30, kd 0.3)")
    for label, options in (("true cone, ours", {}),
                           ("pyramid, ours", {"cone": "pyramid"}),
                           ("true cone, clarabel SOCP", {"solver": "clarabel"}),
                           ("pyramid, clarabel QP", {"cone": "pyramid", "solver": "clarabel"}),
                           ("pyramid, osqp QP", {"cone": "pyramid", "solver": "osqp"})):
        figures = solo(seconds, **options)
        print(f"  {label:26s} median {figures['median_us']:7.0f} us/step (p90 "
              f"{figures['p90_us']:.0f}), real-time factor {figures['rtf']:.2f}, base "
              f"{figures['height']:.4f} m, feet slide {figures['slide_mm']:.3f} mm")
    print("sphere stacks at 10 ms (true cone): median time per step, ours / clarabel")
    sizes = (10, 30) if args.quick else (10, 30, 100)
    stacks = {"ours (interior point, compiled)": [], "clarabel": []}
    for n in sizes:
        ours = stack(n, 5 if args.quick else 20)
        theirs = stack(n, 3 if args.quick or n > 30 else 10, "clarabel")
        stacks["ours (interior point, compiled)"].append(ours)
        stacks["clarabel"].append(theirs)
        print(f"  {n:4d} spheres  ours {ours * 1e3:8.2f} ms   clarabel {theirs * 1e3:8.2f} ms"
              f"   ratio {theirs / ours:5.1f}")
    if not args.quick:
        print(f"written {plot_stacks(sizes, stacks)}")
    frictions = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.7, 0.8]
    if args.quick:
        frictions = [0.0, 0.3, 0.55, 0.7]
    sweeps = {dt: friction_sweep(frictions, dt) for dt in ((1e-2,) if args.quick
                                                           else (1e-2, 1e-3))}
    print("friction sweep on the 30 degree incline, slide after 1 s (m): ours / analytic")
    for k, friction in enumerate(frictions):
        analytic = 0.5 * G * max(math.sin(THETA) - friction * math.cos(THETA), 0.0)
        ours = "  ".join(f"{sweeps[dt][k]:.5f} (dt {dt * 1e3:g} ms)" for dt in sweeps)
        print(f"  mu {friction:4.2f}: {ours}   analytic {analytic:.5f}")
    if not args.quick:
        print(f"written {plot_sweep(frictions, sweeps)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
