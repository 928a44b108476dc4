"""The process model's figures: step_batch throughput (particle-steps per second) on the
7-DOF arm at N = 1, 100, 1000, 10000 particles, against a Python loop of step; the cost of the
exact Jacobians against central finite differences on the arm and on the Talos humanoid
(floating base, with its URDF's joint friction and damping), and how well they agree; through
contact (Solo12 standing, compliant), the exact effort Jacobian's cost and agreement.

Run: `.venv/bin/python bench/estimation.py [--quick] [--contact]`.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from mbsim_ros.dynamics import integrate
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf

DT = 1e-3


def timings(fn, repeats: int) -> tuple[float, float]:
    """(median, best) seconds per call after one warm-up call. The machine is shared: the best
    shows what the code does on free cores, the median what it did here."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def median_time(fn, repeats: int) -> float:
    return timings(fn, repeats)[0]


def paired_timings(first, second, rounds: int, block: int = 400) -> tuple:
    """((median, best) of first, (median, best) of second) seconds per call, each called
    ``block`` times in a row (its steady state: the other's memory traffic not between its
    calls), in ``rounds`` alternating rounds after one warm-up call each: a shared host's
    slow spells fall on both, so that their ratio is read from the same minutes."""
    first(), second()
    times = ([], [])
    for _ in range(rounds):
        for fn, into in zip((first, second), times):
            for _ in range(block):
                start = time.perf_counter()
                fn()
                into.append(time.perf_counter() - start)
    return tuple((statistics.median(t), min(t)) for t in times)


def particles(process: ProcessModel, n: int, seed: int = 0) -> np.ndarray:
    """n states scattered (1e-2 in the tangent space) around one moving state of the arm: the
    same base state for every n, so that the figures compare like with like."""
    model = process.model
    rng = np.random.default_rng(seed)
    q = integrate(model, model.neutral(), rng.uniform(-0.5, 0.5, model.nv))
    x = process.x_from(q, rng.normal(0.0, 0.5, model.nv))
    return np.array([process.integrate(x, rng.normal(0.0, 1e-2, process.ndx)) for _ in range(n)])


def throughput(quick: bool) -> None:
    model = load_urdf(str(shipped_urdf("arm7")))
    process = ProcessModel(model, dt=DT)
    rng = np.random.default_rng(0)
    print("step_batch on arm7 (variational, RIQN, dt = 1 ms), particle-steps per second:")
    print(f"{'N':>6s} {'parallel (auto)':>22s} {'serial':>22s}   (median / best of repeats)")
    for n in (1, 100, 1000, 10000):
        X = particles(process, n)
        U = rng.normal(0.0, 1.0, (n, model.nv))
        out = np.empty_like(X)
        repeats = max(5, (20 if quick else 200) // max(1, n // 100))
        auto = timings(lambda: process.step_batch(X, U, out=out), repeats)
        serial = timings(lambda: process.step_batch(X, U, out=out, parallel=False), repeats)
        print(f"{n:6d} {n / auto[0]:10.3g} / {n / auto[1]:9.3g} {n / serial[0]:10.3g} / "
              f"{n / serial[1]:9.3g}")
    n = 1000
    X = particles(process, n)
    U = rng.normal(0.0, 1.0, (n, model.nv))
    out = np.empty_like(X)

    def loop():
        for k in range(n):
            process.step(X[k], U[k])

    looped = timings(loop, 3 if quick else 10)
    batched = timings(lambda: process.step_batch(X, U, out=out), 3 if quick else 20)
    serial = timings(lambda: process.step_batch(X, U, out=out, parallel=False), 3 if quick else 20)
    print(f"Python loop of step, N = {n}: {n / looped[0]:.3g} particle-steps/s (best "
          f"{n / looped[1]:.3g}); step_batch is {looped[0] / batched[0]:.1f}x faster (best "
          f"{looped[1] / batched[1]:.1f}x; serial {looped[0] / serial[0]:.1f}x)")


def jacobian_costs(quick: bool) -> None:
    robots = [("arm7", load_urdf(str(shipped_urdf("arm7"))))]
    try:
        talos = load_urdf(str(example_robot_urdf("talos")), floating_base=True)
        robots.append(("talos (floating base)", talos))
    except FileNotFoundError as exc:
        print(f"(talos skipped: {exc})")
    print("jacobians (exact) against central finite differences:")
    print(f"{'robot':>22s} {'integrator':>11s} {'nv':>3s} {'exact ms':>9s} {'FD ms':>8s} "
          f"{'FD/exact':>8s} {'step ms':>8s} {'rel err A':>10s} {'B':>8s}")
    rng = np.random.default_rng(1)
    for label, model in robots:
        u = rng.normal(0.0, 1.0, model.nv)
        for integrator in ("variational", "euler"):
            process = ProcessModel(model, dt=DT, integrator=integrator)
            x = particles(process, 1, seed=1)[0]
            repeats = 3 if quick else 20
            exact = median_time(lambda: process.jacobians(x, u), repeats)
            fd = median_time(lambda: process.finite_difference_jacobians(x, u),
                             max(2, repeats // 4))
            one_step = median_time(lambda: process.step(x, u), repeats)
            err_a, err_b = agreement(model, integrator, x, u, *process.jacobians(x, u))
            print(f"{label:>22s} {integrator:>11s} {model.nv:3d} {exact * 1e3:9.3f} "
                  f"{fd * 1e3:8.2f} {fd / exact:8.1f} {one_step * 1e3:8.3f} {err_a:10.1e} "
                  f"{err_b:8.1e}")


def agreement(model, integrator, x, u, A, B) -> tuple[float, float]:
    """Max relative errors of (A, B) against the most accurate central differences we can take:
    a variational model solved to its rounding floor; Richardson-extrapolated for Euler."""
    if integrator == "variational":
        reference = ProcessModel(model, dt=DT, solver="newton", tolerance=1e-14)
        A_fd, B_fd = reference.finite_difference_jacobians(x, u, eps=1e-4, eps_u=1e-2)
    else:
        reference = ProcessModel(model, dt=DT, integrator="euler")
        (A1, B1), (A2, B2) = (reference.finite_difference_jacobians(x, u, eps=e, eps_u=100 * e)
                              for e in (1e-4, 2e-4))
        A_fd, B_fd = (4 * A1 - A2) / 3, (4 * B1 - B2) / 3
    return (float(np.abs(A - A_fd).max() / np.abs(A_fd).max()),
            float(np.abs(B - B_fd).max() / np.abs(B_fd).max()))


def solo12_standing() -> tuple:
    """(the Simulator, the effort) of Solo12 standing (config/scenes/solo12_standing.yaml,
    compliant) after 60 steps under its feet's feed-forward and a soft joint PD."""
    from mbsim_ros import Simulator
    from mbsim_ros.scenarios import StandingController, one_dof

    scene = "config/scenes/solo12_standing.yaml"
    sim = Simulator.from_scene(scene, dt=DT)
    helper = Simulator.from_scene(scene, dt=DT)
    feed_forward = StandingController(helper, helper.q.copy()).tau
    iv, iq = one_dof(sim.model)
    q0 = sim.q.copy()

    def effort():
        u = feed_forward.copy()
        u[iv] += 3.0 * (q0[iq] - sim.q[iq]) - 0.05 * sim.v[iv]
        return u

    for _ in range(60):
        sim.step(effort())
    return sim, effort()


def contact_costs(quick: bool) -> None:
    """Solo12 standing (solo12_standing): one step, the exact A and B through the contact
    solve (``jacobians``: one step and one compiled call; the compiled call alone, on the
    step just taken), A and B by central differences, and B's agreement with the
    differences of a model solved to its rounding floor (tolerance 1e-16). The compiled
    call's pieces: bench/jacobian_pieces.py."""
    from mbsim_ros.estimation.jacobian_assembly import ROWS_FIND

    sim, u = solo12_standing()
    repeats = 5 if quick else 30
    print("through contact (Solo12 standing, compliant, nv = 18, 4 feet; load average "
          + " ".join(f"{load:.2f}" for load in os.getloadavg()) + "):")
    for label, options in (("default tolerance", {}), ("tolerance 1e-16",
                                                       {"tolerance": 1e-16,
                                                        "max_iterations": 200})):
        process = ProcessModel(sim.model, DT, "compliant",
                               **{**sim.integrator.options, **options})
        process.hold_memory(sim.get_state().integrator)
        x = process.x_from(sim.q, sim.v)
        (one_step, best_step), (both, best_both) = paired_timings(
            lambda: process.step(x, u), lambda: process.jacobians(x, u), repeats // 3)
        assembly = process._contact.jacobian_workspace  # (made by the first jacobians)
        call = timings(lambda: assembly(x, ROWS_FIND, True), 10 * repeats)
        fd_b = median_time(lambda: process.finite_difference_jacobians(x, u, eps=1e-6)[1],
                           max(2, repeats // 5))
        B = process.jacobians(x, u)[1]
        _, B_fd = process.finite_difference_jacobians(x, u, eps=1e-6, eps_u=1e-3)
        error = float(np.abs(B - B_fd).max() / np.abs(B_fd).max())
        print(f"  {label}: step {one_step * 1e6:.1f} us, jacobians (A and B, exact) "
              f"{both * 1e6:.1f} us ({both / one_step:.2f} steps, by the best calls "
              f"{best_both / best_step:.2f}; its compiled call "
              f"{call[0] * 1e6:.0f} us, best {call[1] * 1e6:.0f}), central differences A and B "
              f"{fd_b * 1e3:.2f} ms ({fd_b / one_step:.0f} steps; B alone "
              f"{2 * process.nu} steps), B against them: {error:.1e}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--contact", action="store_true", help="the figures through contact only")
    args = parser.parse_args(argv)
    if args.contact:
        contact_costs(args.quick)
        return
    throughput(args.quick)
    print()
    jacobian_costs(args.quick)
    print()
    contact_costs(args.quick)


if __name__ == "__main__":
    main()
