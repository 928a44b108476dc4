"""The variational integrator's figures: per-step cost and iterations of RIQN, RIQN with
Anderson acceleration, Newton and Broyden against the number of links (Lee et al. 2016,
Fig. 3/4), the
step time on the 7-DOF arm and the 100-link chain, the initial guesses, and the energy of a
passive 10-link chain against semi-implicit Euler (Fig. 2). Writes PNGs to docs/figures/.

Run: `.venv/bin/python bench/variational.py [--quick]` (or `make bench`).
`--against-mujoco N`: only the speed targets against MuJoCo's RK4 (the o2 step <= 1.5x, o4 <= 4x,
the frontier <= 2x), N times, each side by side in one process with it (bench/peers' own
measures: the arm7 step at 1 ms, and the 10-link chain's accuracy-cost frontier, 10 s below an
energy error of 1e-4, of order 2 and of order 4 composed both ways), with the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from mbsim_ros import Simulator
from mbsim_ros.model import chain_urdf, load_urdf, shipped_urdf

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"
PAPER = {"riqn/newton at 10": 3.8, "riqn/newton at 100": 53.0, "riqn iterations": 5.69,
         "newton iterations": 4.0}


def time_steps(sim: Simulator, steps: int, tau=None) -> tuple[float, float, int]:
    """(median us per step, mean iterations, fallbacks) over `steps` steps after 3 warm-up."""
    for _ in range(3):
        sim.step(tau)
    times, iterations, fallbacks = [], 0, 0
    for _ in range(steps):
        start = time.perf_counter()
        info = sim.step(tau)
        times.append(time.perf_counter() - start)
        if not info.converged:
            raise RuntimeError(info.message)
        iterations += info.iterations
        fallbacks += info.fallback
    return statistics.median(times) * 1e6, iterations / steps, fallbacks


def chain_simulator(n: int, **options) -> Simulator:
    model = load_urdf(chain_urdf(n))
    sim = Simulator(model, dt=1e-3, integrator="variational", **options)
    sim.reset(np.random.default_rng(0).uniform(-0.3, 0.3, n))
    return sim


SOLVERS = {  # label: (options, largest n to run)
    "RIQN": ({}, 1000),
    "RIQN+Anderson(3)": ({"anderson": 3}, 1000),
    "Newton": ({"solver": "newton"}, 200),
    "Broyden": ({"solver": "broyden"}, 500),
}


def scaling(sizes, steps) -> dict:
    results = {label: [] for label in SOLVERS}
    print(f"{'links':>6s} " + " ".join(f"{label:>26s}" for label in SOLVERS))
    for n in sizes:
        cells = []
        for label, (options, largest) in SOLVERS.items():
            if n > largest:
                results[label].append((n, np.nan, np.nan, 0))
                cells.append(f"{'-':>26s}")
                continue
            us, its, fb = time_steps(chain_simulator(n, **options), steps)
            results[label].append((n, us, its, fb))
            cells.append(f"{us:11.1f} us {its:5.2f} it {fb:2d} fb")
        print(f"{n:6d} " + " ".join(cells), flush=True)
    return results


def slope(rows) -> float:
    n = np.array([r[0] for r in rows if np.isfinite(r[1])], dtype=float)
    t = np.array([r[1] for r in rows if np.isfinite(r[1])])
    return float(np.polyfit(np.log(n), np.log(t), 1)[0])


def plot_scaling(results) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_i) = plt.subplots(1, 2, figsize=(10, 4))
    for label, rows in results.items():
        rows = [r for r in rows if np.isfinite(r[1])]
        ax_t.loglog([r[0] for r in rows], [r[1] for r in rows], "o-", label=label)
        ax_i.semilogx([r[0] for r in rows], [r[2] for r in rows], "o-", label=label)
    ax_t.set_xlabel("links (DOF)")
    ax_t.set_ylabel("time per 1 ms step [us]")
    ax_t.legend()
    ax_t.grid(True, which="both", alpha=0.3)
    ax_i.set_xlabel("links (DOF)")
    ax_i.set_ylabel("mean iterations per step")
    ax_i.axhline(PAPER["riqn iterations"], color="gray", ls=":", label="paper RIQN (5.69)")
    ax_i.legend()
    ax_i.grid(True, alpha=0.3)
    fig.suptitle("Variational integrator on an N-link chain (cf. Lee et al. 2016, Fig. 3-4)")
    fig.tight_layout()
    path = FIGURES / "vi_scaling.png"
    fig.savefig(path, dpi=110)
    return path


def energy_run(model, integrator: str, q0, seconds: float, **options) -> np.ndarray:
    sim = Simulator(model, dt=1e-3, integrator=integrator, **options)
    sim.reset(q0)
    e0 = sim.energy()
    steps = int(round(seconds / 1e-3))
    out = np.full(steps, np.nan)
    for k in range(steps):
        if not sim.step().converged:
            break
        out[k] = (sim.energy() - e0) / abs(e0)
    return out


def energy_figure(seconds: float) -> tuple[dict, Path]:
    """Fig. 2: a passive 10-link chain of 1 m, 1 kg links released at 0.3 rad per joint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = load_urdf(chain_urdf(10, axes="y", link_length=1.0, link_mass=1.0))
    q0 = np.full(10, 0.3)
    runs = {"variational (order 2)": energy_run(model, "variational", q0, seconds),
            "variational (order 4)": energy_run(model, "variational", q0, seconds, order=4),
            "semi-implicit Euler": energy_run(model, "euler", q0, seconds)}
    fig, ax = plt.subplots(figsize=(8, 4))
    t = np.arange(1, int(round(seconds / 1e-3)) + 1) * 1e-3
    for label, err in runs.items():
        ax.semilogy(t, np.maximum(np.abs(err), 1e-12), lw=0.6, label=label)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("|E - E0| / |E0|")
    ax.set_title("Passive 10-link chain, dt = 1 ms (cf. Lee et al. 2016, Fig. 2)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path = FIGURES / "vi_energy_chain10.png"
    fig.savefig(path, dpi=110)
    return runs, path


def against_mujoco(repeats: int) -> None:
    """The o2 step on arm7 and the frontier (o2, o4) against MuJoCo RK4, as bench/peers
    measures them (its functions), `repeats` times."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import peers.__main__ as peers
    from peers.engines import CONFIGS
    from peers.models import describe

    o2, rk4 = "ours variational o2", "MuJoCo RK4"
    labels = (o2, "ours variational o4", "ours variational o4 Suzuki", rk4)
    arm, chain = describe(shipped_urdf("arm7"), "arm7"), peers.energy_chain()
    for run in range(repeats):
        load = os.getloadavg()[0]
        step = {label: peers.step_cost_us(arm, CONFIGS[label][1], 200, 9) for label in labels}
        front = {label: peers.frontier(chain, CONFIGS[label][1], 10.0, 20.0) for label in labels}

        def ratios(values):
            return ", ".join(f"{k.removeprefix('ours variational ')} {values[k]:.3g} "
                             f"({values[k] / values[rk4]:.2f}x)" for k in labels[:-1])

        print(f"run {run + 1} (load {load:.2f} -> {os.getloadavg()[0]:.2f}): step arm7 [us]: "
              f"RK4 {step[rk4]:.2f}, {ratios(step)} | frontier "
              + ", ".join(f"{k} {f.summary(10.0)}" for k, f in front.items())
              + f" | frontier [s]: RK4 {front[rk4].wall:.3g}, "
              + ratios({k: f.wall for k, f in front.items()}), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--against-mujoco", type=int, metavar="N", default=0)
    args = parser.parse_args(argv)
    if args.against_mujoco:
        against_mujoco(args.against_mujoco)
        return 0
    FIGURES.mkdir(parents=True, exist_ok=True)
    steps = 30 if args.quick else 200
    sizes = (10, 50, 100) if args.quick else (10, 25, 50, 100, 200, 500, 1000)

    arm = load_urdf(shipped_urdf("arm7"))
    print("# initial guesses (mean iterations per step, RIQN, 1 ms)")
    for guess in ("IG1", "IG2", "IG3"):
        sim = Simulator(arm, dt=1e-3, integrator="variational", initial_guess=guess)
        sim.reset(np.full(7, 0.5))
        us_arm, its_arm, _ = time_steps(sim, steps)
        us_c, its_c, _ = time_steps(chain_simulator(100, initial_guess=guess), steps)
        print(f"{guess}: arm7 {its_arm:.2f} it {us_arm:.1f} us | chain 100 {its_c:.2f} it "
              f"{us_c:.1f} us")

    print("\n# step time (RIQN, dt = 1 ms, gravity, zero torque)")
    sim = Simulator(arm, dt=1e-3, integrator="variational")
    sim.reset(np.full(7, 0.5))
    us, its, _ = time_steps(sim, 10 * steps)
    print(f"arm7: {us:.1f} us median per step ({its:.2f} iterations; target <= 50 us)")
    us, its, _ = time_steps(chain_simulator(100), steps)
    print(f"chain 100: {us:.1f} us median per step ({its:.2f} iterations; target <= 1000 us)")
    sim = Simulator(arm, dt=1e-3, integrator="euler")
    sim.reset(np.full(7, 0.5))
    print(f"arm7 semi-implicit Euler for comparison: {time_steps(sim, 10 * steps)[0]:.1f} us")

    print("\n# scaling on an N-link chain (median us per step, mean iterations, fallbacks)")
    results = scaling(sizes, steps)
    riqn = {r[0]: r for r in results["RIQN"]}
    newton = {r[0]: r for r in results["Newton"]}
    print(f"RIQN log-log slope {slope(results['RIQN']):.2f} (target <= 1.15), with Anderson "
          f"{slope(results['RIQN+Anderson(3)']):.2f}")
    for n, key in ((10, "riqn/newton at 10"), (100, "riqn/newton at 100")):
        if n in riqn and n in newton:
            print(f"Newton / RIQN time at {n} DOF: {newton[n][1] / riqn[n][1]:.1f}x "
                  f"(paper: {PAPER[key]}x)")
    print(f"mean iterations: RIQN {np.nanmean([r[2] for r in results['RIQN']]):.2f} (paper "
          f"5.69), Newton {np.nanmean([r[2] for r in results['Newton']]):.2f} (paper 4)")
    print(f"figure: {plot_scaling(results)}")

    seconds = 5.0 if args.quick else 100.0
    print(f"\n# energy, passive 10-link chain (1 m links), {seconds:g} s at 1 ms")
    runs, path = energy_figure(seconds)
    for label, err in runs.items():
        finite = err[np.isfinite(err)]
        diverged = "" if finite.size == err.size \
            else f", diverged at t = {finite.size * 1e-3:.2f} s"
        print(f"{label:24s} max |E - E0|/|E0| = {np.abs(finite).max():.2e}{diverged}")
    print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
