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
`--profile N`: the frontier's configuration (order 4 composed Suzuki's way, 4 ms, 10 s of the
chain) in compiled loops, N times: its step (best of N 10 s runs), iterations per step, the
pieces (a residual, the factorisation, an application of M^-1; best of 7 blocks) and what a
substep costs besides its iterations; and the arm7 o2 step in `Simulator.rollout`.
The same compiled loop, alternated with it, runs the step of before round 6 (tolerance 1e-10,
nothing given back): its step and the ratio.
`--rates`: in the same run, per substep of a step, the error of the initial guesses and the
spectral radius of the preconditioned iteration's matrix for several preconditioners (the
exact Jacobian by central differences of `del_residual`).
`--give-back`: order 4 (both compositions) solved to 1e-10 ... 1e-7, with and without the
residual given back to the momentum: the frontier's run (10 s of the curled chain, max relative
energy error, iterations per step) and 100 s of the chain released at 0.3 rad (the band, and the
drift: the mean of the last tenth less that of the first).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from mbsim_ros import Simulator
from mbsim_ros.integrators import variational as vi
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


@njit
def advance_loop(steps, tau, table, dt, ig3, broyden, tol, inv_dt, iterations) -> int:
    """`steps` fused steps in a compiled loop, their iterations summed into iterations[0]."""
    stats = vi.unpack_variational(table).stats
    for s in range(steps):
        if vi.variational_advance(tau, table, dt, ig3, broyden, tol, inv_dt) != 0:
            return s
        iterations[0] += stats[0]
    return steps


@njit
def piece_loop(piece, n, joint_int, joint_real, Yb, h, q, p, ws, vws, out) -> None:
    """n calls of one piece of a substep at its state: 0 a residual, 1 the factorisation of
    M, 2 an application of M^-1 (rows of the variational workspace as the step leaves them)."""
    nv, nq = p.shape[0], q.shape[0]
    dyn, vw = vi.views(ws, vws, joint_int.shape[0], nv, nq)
    added = vw.vec[vi.V_ADDED]
    for _ in range(n):
        if piece == 0:
            vi.residual(joint_int, joint_real, Yb, h, q, nv, ws, vws)
        elif piece == 1:
            vi.minv_factor(joint_int, added, vw.oS_k, vw.oY_k, vw.IA_k, vw.U_k, vw.Dinv_k,
                           dyn.small, dyn.tmp)
        else:
            vi.minv_apply(joint_int, vw.oS_k, vw.U_k, vw.Dinv_k, p, dyn.pA, dyn.oa, out)


def best_us(call, calls: int, blocks: int = 7) -> float:
    call()
    best = np.inf
    for _ in range(blocks):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def order_4(model, dt: float, given_back: bool = True, **options) -> Simulator:
    """A Suzuki order-4 Simulator; given_back=False: the residual not given back to the
    momentum (the step of before round 6, with tolerance=1e-10)."""
    sim = Simulator(model, dt, "variational", order=4, **{"composition": "suzuki", **options})
    sim.integrator.settings[vi.S_GIVE_BACK] = int(given_back)
    return sim


def loop_us(sim: Simulator, q0, steps: int) -> tuple[float, float]:
    """(us a step, iterations a step) of `steps` fused steps from q0 in a compiled loop."""
    tau, iterations = np.zeros(sim.model.nv), np.zeros(1, dtype=np.int64)
    arguments = sim.integrator.fused(sim.state, sim.data)[2]
    sim.reset(q0)
    start = time.perf_counter()
    if advance_loop(steps, tau, *arguments, iterations) != steps:
        raise RuntimeError("a step failed")
    return (time.perf_counter() - start) / steps * 1e6, iterations[0] / steps


def profile(repeats: int) -> None:
    """The frontier's configuration in compiled loops (docs/SPEED.md, "The energy frontier,
    round 5" and "round 6")."""
    model = load_urdf(chain_urdf(10, axes="y", link_length=1.0, link_mass=1.0))
    dt, seconds, q0 = 4e-3, 10.0, np.full(10, 0.3)
    steps, load = int(round(seconds / dt)), os.getloadavg()[0]
    sim, before = order_4(model, dt), order_4(model, dt, False, tolerance=1e-10)
    loop_us(sim, q0, 1)  # (compiles the loop once)
    runs, before_runs = [], []
    for _ in range(repeats):
        us, its = loop_us(sim, q0, steps)
        runs.append(us)
        us, its_before = loop_us(before, q0, steps)
        before_runs.append(us)
    for _ in range(300):  # a state in the middle of the run
        sim.step()
    it, m, n = sim.integrator, sim.model, 20000
    h = dt * vi.SUZUKI_S
    vi.VARIATIONAL.views(it._vws, m.njoints, m.nv, m.nq).vec[vi.V_X][:] = h * sim.v
    out = np.empty(m.nv)
    pieces = [best_us(lambda: piece_loop(k, n, m.joint_int, m.joint_real, it.Yb, h,
                                         sim.q.copy(), it.p, it._ws, it._vws, out), n)
              for k in range(3)]
    substeps = len(vi.COMPOSITIONS["suzuki"])
    besides = (min(runs) - its * (pieces[0] + pieces[2])) / substeps
    arm = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(arm, 1e-3, "variational")
    taus = np.zeros((3000, arm.nv))

    def rollout():
        sim.reset(np.full(arm.nv, 0.5))
        sim.rollout(taus)
    arm7 = best_us(rollout, taus.shape[0], repeats)
    print(f"load {load:.2f} -> {os.getloadavg()[0]:.2f} | the chain, Suzuki at 4 ms, compiled "
          f"loop: {min(runs):.2f} us a step (runs {', '.join(f'{r:.1f}' for r in runs)}), "
          f"{its:.3f} iterations, {its + substeps:.2f} residual evaluations; before round 6 "
          f"{min(before_runs):.2f} us, {its_before:.3f} iterations: "
          f"{min(runs) / min(before_runs):.3f}x | a residual "
          f"{pieces[0]:.3f}, the factorisation {pieces[1]:.3f}, M^-1 applied {pieces[2]:.3f} us"
          f" | a substep besides its iterations {besides:.2f} us ({besides - pieces[0]:.2f} "
          f"without its guess's residual) | arm7 o2 at 1 ms in Simulator.rollout "
          f"{arm7:.2f} us a step")


def rates(states: int = 5) -> None:
    """Per substep of the Suzuki step at 4 ms (each solved alone to 1e-13 by an order 2
    integrator of its length, from the states of the frontier's run every 100 steps): max |x -
    guess| for IG2, IG3 (x = h v+, v+ the semi-implicit Euler velocity), the Taylor guess
    h v + h^2 a / 2 (a: the forward dynamics), the parabola through the last substep (the
    default) and a cubic through the last two substeps' ends; and rho(I - P^-1 J), J = dr/dx
    at the solution, for P = -M(q_k)/h (RIQN), -M(q_mid)/h, the symmetric part of J, J at IG2
    (the first substep) and the first substep's J at IG2 with its -M/h swapped for this
    substep's (the later ones)."""
    from mbsim_ros.dynamics import aba
    from mbsim_ros.dynamics.crba import crba
    from mbsim_ros.dynamics.drnea import del_residual

    model = load_urdf(chain_urdf(10, axes="y", link_length=1.0, link_mass=1.0))
    dt, n = 4e-3, model.nv
    lengths = [dt * c for c in vi.COMPOSITIONS["suzuki"]]
    alone = {h: vi.VariationalIntegrator(model, h, tolerance=1e-13) for h in set(lengths)}
    sim = Simulator(model, dt, "variational", order=4, composition="suzuki")
    sim.reset(np.full(n, 0.3))

    def jacobian(h, q, q_next, v):
        q_prev, J, eps = q - h * v, np.empty((n, n)), 1e-7
        for j in range(n):
            e = np.zeros(n)
            e[j] = eps
            J[:, j] = (del_residual(model, h, q_prev, q, q_next + e)
                       - del_residual(model, h, q_prev, q, q_next - e)) / (2 * eps)
        return J

    def rho(P, J):
        return max(abs(np.linalg.eigvals(np.eye(n) - np.linalg.solve(P, J))))

    for _ in range(states):
        for _ in range(100):
            sim.step()
        q, v, p, done, first = sim.q.copy(), sim.v.copy(), sim.integrator.p.copy(), [], None
        cells = []
        for s, h in enumerate(lengths):
            integrator = alone[h]
            integrator.p[:] = p
            q_next, v_next = np.empty(n), np.empty(n)
            integrator.step(q, v, np.zeros(n), q_next, v_next)
            x, J, M = q_next - q, jacobian(h, q, q_next, v), crba(model, q)
            a = aba(model, q, v, np.zeros(n))
            errors = {"IG2": h * v, "IG3": h * (v + h * a), "Taylor": h * v + 0.5 * h * h * a}
            if done:
                h1, x1 = done[-1]
                errors["parabola"] = h * v + (h / h1) ** 2 * (h1 * v - x1)
            if len(done) > 1:  # x(t) = v t + c2 t^2 + c3 t^3 through the two last ends
                (h2, x2), (h1, x1) = done[-2:]
                t = np.array([-h1, -h1 - h2])
                c = np.linalg.solve(np.stack([t ** 2, t ** 3], 1),
                                    np.stack([-x1 + v * h1, -(x1 + x2) + v * (h1 + h2)]))
                errors["cubic"] = v * h + c[0] * h ** 2 + c[1] * h ** 3
            radii = {"M(q_k)": rho(-M / h, J),
                     "M(q_mid)": rho(-crba(model, q + 0.5 * x) / h, J),
                     "sym J": rho(0.5 * (J + J.T), J)}
            if first is None:
                first = (jacobian(h, q, q + h * v, v), h, M)
                radii["J(IG2)"] = rho(first[0], J)
            else:
                radii["first J"] = rho(first[0] + first[2] / first[1] - M / h, J)
            cells.append(f"s{s} " + " ".join(f"{k} {np.abs(g - x).max():.1e}"
                                            for k, g in errors.items())
                         + "; rho " + " ".join(f"{k} {r:.1e}" for k, r in radii.items()))
            done.append((h, x))
            q, v, p = q_next, v_next, integrator._p_next.copy()
        print(f"t = {sim.t:.1f} s: " + " | ".join(cells), flush=True)


def give_back() -> None:
    """Order 4's energy against its tolerance, with and without the residual given back."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import peers.__main__ as peers
    from peers.engines import Ours

    chain = peers.energy_chain()
    model, released = chain.model(), np.r_[0.3, np.zeros(9)]
    for composition, dt in (("suzuki", 4e-3), ("yoshida", 2e-3)):
        for tolerance in (1e-10, 1e-9, 1e-8, 1e-7):
            for given_back in (False, True):
                def factory(desc, dt):
                    engine = Ours(desc, dt, order=4, composition=composition,
                                  tolerance=tolerance)
                    engine.sim.integrator.settings[vi.S_GIVE_BACK] = int(given_back)
                    return engine
                run = peers.energy_run(chain, factory, dt, 10.0)
                sim = order_4(model, dt, given_back, composition=composition,
                              tolerance=tolerance)
                sim.reset(released)
                e0, errors = sim.energy(), np.empty(int(round(100.0 / dt)))
                iterations = 0
                for k in range(errors.size):
                    iterations += sim.step().iterations
                    errors[k] = (sim.energy() - e0) / abs(e0)
                tenth = errors.size // 10
                print(f"{composition} {dt * 1e3:g} ms, tolerance {tolerance:.0e}, "
                      f"{'given back' if given_back else 'kept     '}: frontier's run max "
                      f"error {np.abs(run.error).max():.2e} | released 100 s: band "
                      f"{np.abs(errors).max():.2e}, drift "
                      f"{errors[-tenth:].mean() - errors[:tenth].mean():.1e}, "
                      f"{iterations / errors.size:.2f} iterations a step", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--against-mujoco", type=int, metavar="N", default=0)
    parser.add_argument("--profile", type=int, metavar="N", default=0)
    parser.add_argument("--rates", action="store_true")
    parser.add_argument("--give-back", action="store_true")
    args = parser.parse_args(argv)
    if args.against_mujoco or args.profile or args.rates or args.give_back:
        if args.rates:
            rates()
        if args.give_back:
            give_back()
        if args.profile:
            profile(args.profile)
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
