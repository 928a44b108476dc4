"""The process model's figures (issue 9): step_batch throughput (particle-steps per second) on the
7-DOF arm at N = 1, 100, 1000, 10000 particles, against a Python loop of step; the cost of the
exact Jacobians against central finite differences on the arm and on the Talos humanoid
(floating base), and how well they agree.

Run: `.venv/bin/python bench/estimation.py [--quick]`.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np

from mbsim_ros.dynamics import integrate
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.model import Model, example_robot_urdf, load_urdf, shipped_urdf

DT = 1e-3


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def particles(process: ProcessModel, n: int, rng) -> np.ndarray:
    model = process.model
    q = integrate(model, model.neutral(), rng.uniform(-0.5, 0.5, model.nv))
    x = process.x_from(q, rng.normal(0.0, 0.5, model.nv))
    return np.array([process.integrate(x, rng.normal(0.0, 1e-2, process.ndx)) for _ in range(n)])


def throughput(quick: bool) -> None:
    model = load_urdf(str(shipped_urdf("arm7")))
    process = ProcessModel(model, dt=DT)
    rng = np.random.default_rng(0)
    print("step_batch on arm7 (variational, RIQN, dt = 1 ms), particle-steps per second:")
    print(f"{'N':>6s} {'auto':>12s} {'serial':>12s} {'us/particle':>12s}")
    for n in (1, 100, 1000, 10000):
        X = particles(process, n, rng)
        U = rng.normal(0.0, 1.0, (n, model.nv))
        out = np.empty_like(X)
        repeats = max(3, (20 if quick else 200) // max(1, n // 100))
        auto = median_time(lambda: process.step_batch(X, U, out=out), repeats)
        serial = median_time(lambda: process.step_batch(X, U, out=out, parallel=False), repeats)
        print(f"{n:6d} {n / auto:12.3g} {n / serial:12.3g} {auto / n * 1e6:12.2f}")
    n = 1000
    X = particles(process, n, rng)
    U = rng.normal(0.0, 1.0, (n, model.nv))
    out = np.empty_like(X)

    def loop():
        for k in range(n):
            process.step(X[k], U[k])

    looped = median_time(loop, 3 if quick else 10)
    batched = median_time(lambda: process.step_batch(X, U, out=out), 3 if quick else 20)
    print(f"Python loop of step, N = {n}: {n / looped:.3g} particle-steps/s; step_batch is "
          f"{looped / batched:.1f}x faster")


def without_friction(model: Model) -> Model:
    """The same robot with Coulomb friction removed (exact Jacobians do not cover it)."""
    specs = [dataclasses.replace(s, friction=0.0) for s in model.joint_specs()]
    return Model(specs, name=model.name, fixed_mass=model.fixed_mass, gravity=model.gravity)


def jacobian_costs(quick: bool) -> None:
    robots = [("arm7", load_urdf(str(shipped_urdf("arm7"))))]
    try:
        talos = load_urdf(str(example_robot_urdf("talos")), floating_base=True)
        robots.append(("talos (floating, no friction)", without_friction(talos)))
    except FileNotFoundError as exc:
        print(f"(talos skipped: {exc})")
    print("jacobians (exact, implicit function theorem) against central finite differences:")
    print(f"{'robot':>30s} {'nv':>4s} {'exact ms':>9s} {'FD ms':>9s} {'FD/exact':>9s} "
          f"{'step ms':>8s} {'max rel err A':>14s} {'B':>9s}")
    rng = np.random.default_rng(1)
    for label, model in robots:
        process = ProcessModel(model, dt=DT)
        x = particles(process, 1, rng)[0]
        u = rng.normal(0.0, 1.0, model.nv)
        repeats = 3 if quick else 20
        exact = median_time(lambda: process.jacobians(x, u), repeats)
        fd = median_time(lambda: process.finite_difference_jacobians(x, u), max(2, repeats // 4))
        one_step = median_time(lambda: process.step(x, u), repeats)
        A, B = process.jacobians(x, u)
        reference = ProcessModel(model, dt=DT, root_finder="newton", tolerance=1e-14)
        A_fd, B_fd = reference.finite_difference_jacobians(x, u, eps=1e-4, eps_u=1e-2)
        err_a = np.abs(A - A_fd).max() / np.abs(A_fd).max()
        err_b = np.abs(B - B_fd).max() / np.abs(B_fd).max()
        print(f"{label:>30s} {model.nv:4d} {exact * 1e3:9.3f} {fd * 1e3:9.3f} "
              f"{fd / exact:9.1f} {one_step * 1e3:8.3f} {err_a:14.1e} {err_b:9.1e}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    throughput(args.quick)
    print()
    jacobian_costs(args.quick)


if __name__ == "__main__":
    main()
