"""Side by side with the peers: MuJoCo, PyBullet, DART and pinocchio against our
integrators on identical models, measured in one run on this machine.

0. Agreement: every engine's own energy at a random state equals ours to 1e-9 (relative).
1. Step cost (no contact, dt = 1 ms): the 7-DOF arm, chains of 10, 50, 100, 200 links.
2. Energy: the passive 10-link chain (1 m, 1 kg links curled 0.3 rad), 100 s at 1 ms (and at
   4 ms): max relative energy error and drift, one energy function (ours) from every engine's
   state.
3. Accuracy-cost frontier: wall time to simulate 10 s of that chain with the relative energy
   error below 1e-4, halving dt from 16 ms until an engine gets there (median of 3 timings of
   the decisive run).
4. Contact (bench/contact.py): inclined box, sphere stack, quadruped standing.
5. Dispatch (bench/peers/dispatch.py): aba() against pinocchio.aba, what Simulator.step adds
   to its kernel, Simulator.rollout against one call per step and mujoco.rollout.
Then the papers' DRNEA-vs-SVI ratio, by a labelled proxy (bench/peers/svi_proxy.py).

Run: `.venv/bin/python bench/peers [--quick] [--report docs/BENCHMARKS.md]` (or `make bench`,
which installs the peers: `pip install .[bench]`). A peer that is not installed is left out.
"""
from __future__ import annotations

import os

# Before numpy: our contact step is many small dense solves, for which OpenBLAS's thread pool
# costs far more than it gives, worst on a shared 2-core machine (mbsim_ros/__init__.py sets
# the same when it is imported first; bench/compliant.py does this too). The peers do not use
# OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the peers package

from mbsim_ros.model import chain_urdf, shipped_urdf  # noqa: E402

from peers.engines import (Unsupported, installed_configs, is_ours,  # noqa: E402
                          reference_energy)
from peers.models import Description, describe  # noqa: E402
from peers.timing import block  # noqa: E402

AGREEMENT_TOLERANCE = 1e-9
ENERGY_TOLERANCE = 1e-4  # the frontier's target: max |E - E0| / |E0|
SAMPLE = 1e-4  # s: the energy is evaluated at least this often in simulated time
MIN_DT = 1e-7  # s: the frontier's search stops here whatever the budget
ENERGY_STEPS = (1e-3, 4e-3)  # s: workload 2's steps (the node's 1 ms, and a coarser one)
GIVE_UP = 10.0  # workload 2 stops a run whose relative energy error exceeds this (diverged)
FRONTIER_REPEATS = 3  # timings of each engine's decisive frontier run (the median is reported)


def step_models(quick: bool) -> list[Description]:
    """Workload 1's models: the default arm and chains (0.1 m, 0.1 kg links, 3-D)."""
    sizes = (10,) if quick else (10, 50, 100, 200)
    return [describe(shipped_urdf("arm7"), "arm7")] + \
        [describe(chain_urdf(n), f"chain{n}") for n in sizes]


def energy_chain() -> Description:
    """Workloads 2 and 3 (Lee et al. Fig. 2's chain): ten 1 m, 1 kg links, planar."""
    return describe(chain_urdf(10, axes="y", link_length=1.0, link_mass=1.0), "chain10 (1 m)")


def agreement(descs: list[Description], configs: dict) -> dict[tuple[str, str], float]:
    """(model, engine) -> |own energy - ours| / |ours| at a random state (q, v), after a
    check that the engine reports back the state it was given."""
    out = {}
    for desc in descs:
        model = desc.model()
        rng = np.random.default_rng(7)
        q, v = rng.uniform(-1.0, 1.0, desc.nv), rng.normal(size=desc.nv)
        e = reference_energy(model, q, v)
        for label, factory in configs.items():
            try:
                engine = factory(desc, 1e-3)
            except Unsupported:
                continue
            engine.reset(q, v)
            q_back, v_back = engine.state()
            if not (np.allclose(q_back, q, atol=1e-12) and np.allclose(v_back, v, atol=1e-12)):
                raise AssertionError(f"{label} on {desc.name}: the state does not map back")
            out[desc.name, label] = abs(engine.own_energy() - e) / abs(e)
    return out


def start_state(desc: Description) -> tuple[np.ndarray, np.ndarray]:
    return np.random.default_rng(0).uniform(-0.3, 0.3, desc.nv), np.zeros(desc.nv)


def step_cost_us(desc: Description, factory, steps: int, repeats: int) -> float:
    """Median over `repeats` runs of the mean time per step (us); each run starts again from
    the same state (reset untimed) and lasts `steps` steps, after a first untimed run; nan if
    the engine cannot run the model or the state stops being finite."""
    try:
        engine = factory(desc, 1e-3)
    except Unsupported:
        return float("nan")
    q0, v0 = start_state(desc)
    runs = []
    try:
        for _ in range(repeats + 1):
            engine.reset(q0, v0)
            runs.append(block(engine.step, steps) / steps)
    except FloatingPointError:
        return float("nan")
    if not all(np.all(np.isfinite(x)) for x in engine.state()):
        return float("nan")
    return statistics.median(runs[1:]) * 1e6


@dataclass
class EnergyRun:
    """One run of the energy chain: relative error every `stride` steps, wall time spent in
    step()."""

    dt: float
    stride: int
    error: np.ndarray
    wall: float
    diverged_at: float | None = None

    @property
    def max_error(self) -> float:
        return float(np.abs(self.error).max()) if self.diverged_at is None else float("inf")

    @property
    def drift(self) -> float:
        """Mean error of the last 10 % of the run minus that of the first 10 %."""
        tenth = max(1, self.error.size // 10)
        return float(self.error[-tenth:].mean() - self.error[:tenth].mean())


def energy_run(desc: Description, factory, dt: float, seconds: float,
               give_up_above: float = 1.0) -> EnergyRun:
    """Run the energy chain from q = 0.3 rad per joint at rest; stop early when the error
    exceeds give_up_above or the state stops being finite. The energy is evaluated after
    every step, or every SAMPLE seconds of simulated time when dt is shorter."""
    model, engine = desc.model(), factory(desc, dt)
    q0 = np.full(desc.nv, 0.3)
    engine.reset(q0, np.zeros(desc.nv))
    e0 = reference_energy(model, q0, np.zeros(desc.nv))
    stride = max(1, int(round(SAMPLE / dt)))
    samples = int(round(seconds / dt)) // stride
    error, wall = np.empty(samples), 0.0
    for k in range(samples):
        try:
            wall += block(engine.step, stride)
        except FloatingPointError:
            return EnergyRun(dt, stride, error[:k], wall, k * stride * dt)
        q, v = engine.state()
        error[k] = (reference_energy(model, q, v) - e0) / abs(e0) \
            if np.all(np.isfinite(q)) and np.all(np.isfinite(v)) else np.inf
        if not abs(error[k]) <= give_up_above:
            return EnergyRun(dt, stride, error[:k + 1], wall, (k + 1) * stride * dt)
    return EnergyRun(dt, stride, error, wall)


@dataclass
class Frontier:
    """The dt sweep of one engine: every run, and the cheapest that met the tolerance. The
    decisive run (the one that met it, or the last one, whose cost per step the extrapolation
    uses) is timed `len(walls)` times: its wall times (or seconds per step) are `walls`, and
    the figure is their median."""

    runs: list[EnergyRun] = field(default_factory=list)
    met: EnergyRun | None = None
    extrapolated_wall: float | None = None  # when the budget ran out first
    walls: list[float] = field(default_factory=list)

    @property
    def wall(self) -> float:
        """The median measured wall time of the cheapest run below the tolerance, else the
        extrapolated one, else inf."""
        if self.met is not None:
            return statistics.median(self.walls) if self.walls else self.met.wall
        return self.extrapolated_wall if self.extrapolated_wall is not None else float("inf")

    def summary(self, seconds: float) -> str:
        if self.met is not None:
            spread = f", {min(self.walls):.3g}-{max(self.walls):.3g} s over " \
                     f"{len(self.walls)} runs" if len(self.walls) > 1 else ""
            return f"{self.wall:.3g} s at dt = {self.met.dt * 1e3:.3g} ms " \
                   f"(error {self.met.max_error:.1e}{spread})"
        last = self.runs[-1]
        reached = f"not reached (dt = {last.dt * 1e3:.3g} ms: error {last.max_error:.1e})"
        if self.extrapolated_wall is not None:
            return f"{reached}; ~{self.extrapolated_wall:.3g} s extrapolated (cost per step: " \
                   f"median of {len(self.walls)} runs)"
        return reached


def frontier(desc: Description, factory, seconds: float, budget: float,
             dt0: float = 16e-3, repeats: int = FRONTIER_REPEATS) -> Frontier:
    """Halve dt from dt0 until the max error over `seconds` is below ENERGY_TOLERANCE, as long
    as the next run (predicted: twice the last, bookkeeping included) fits in `budget` seconds.
    If it does not, extrapolate the wall time from the error's observed order in dt (labelled
    as such). The decisive run is timed `repeats` times in all (the median is reported): the
    run that met the tolerance is run again whole; for an extrapolation, the cost per step at
    the last dt is the median of the last run's and of `repeats - 1` shorter runs at that dt
    (each at most a quarter of the budget: the cost per step does not depend on the length)."""
    energy_run(desc, factory, dt0, 10 * dt0)  # warm-up (first calls, compilation)
    result, dt = Frontier(), dt0
    while True:
        start = time.perf_counter()
        run = energy_run(desc, factory, dt, seconds)
        elapsed = time.perf_counter() - start
        result.runs.append(run)
        if run.diverged_at is None and run.max_error < ENERGY_TOLERANCE:
            result.met = run
            result.walls = [run.wall] + [energy_run(desc, factory, dt, seconds).wall
                                         for _ in range(repeats - 1)]
            return result
        if 2 * elapsed > budget or dt < MIN_DT:
            steps = run.error.size * run.stride
            per_step = [run.wall / steps]
            if run.diverged_at is None:
                shorter = min(seconds, seconds * budget / (4 * elapsed))
                for _ in range(repeats - 1):
                    again = energy_run(desc, factory, dt, shorter)
                    per_step.append(again.wall / (again.error.size * again.stride))
            result.walls = per_step
            result.extrapolated_wall = _extrapolate(result.runs, statistics.median(per_step),
                                                    seconds)
            return result
        dt /= 2


def _extrapolate(runs: list[EnergyRun], per_step: float, seconds: float) -> float | None:
    """Wall time at the dt where a power law fitted to the last four finished runs' errors
    (log-log least squares) reaches the tolerance; None without a usable fit."""
    finished = [r for r in runs if r.diverged_at is None][-4:]
    if len(finished) < 3:
        return None
    log_dt = np.log([r.dt for r in finished])
    order, offset = np.polyfit(log_dt, np.log([r.max_error for r in finished]), 1)
    if not order > 0.5:
        return None
    dt_needed = np.exp((np.log(ENERGY_TOLERANCE) - offset) / order)
    return per_step * seconds / dt_needed


def ratio_line(name: str, values: dict[str, float], unit: str, fmt: str = "{:.3g}") -> str:
    """One line per workload: every engine's value, then our variational integrator and our
    best configuration against the best peer."""
    cells = " | ".join(f"{label} {fmt.format(value) if np.isfinite(value) else 'n/a'}"
                       for label, value in values.items())
    ours = [v for k, v in values.items() if is_ours(k) and np.isfinite(v)]
    peers = [v for k, v in values.items() if not is_ours(k) and np.isfinite(v)]
    if not (ours and peers):
        return f"{name} [{unit}]: {cells} || ours / best peer n/a"
    variational = values.get("ours variational o2", np.nan)
    return (f"{name} [{unit}]: {cells} || ours variational o2 / best peer "
            f"{variational / min(peers):.3g}, best ours / best peer {min(ours) / min(peers):.3g}")


def run(quick: bool, emit) -> dict:
    """Every workload; emit(line) receives one line per workload as it finishes."""
    from peers.contact import contact_workloads, summary_lines

    configs = installed_configs()
    results = {"configs": list(configs), "quick": quick, "load": [os.getloadavg()[0]]}
    descs = step_models(quick)
    results["agreement"] = agreement(descs + [energy_chain()], configs)
    worst = max(results["agreement"].values())
    emit(f"agreement at t = 0 (own energy vs ours, relative): worst {worst:.1e} "
         f"({'ok' if worst <= AGREEMENT_TOLERANCE else 'MODELS DIFFER'})")

    steps, repeats = (100, 3) if quick else (200, 9)
    results["step"] = {}
    for desc in descs:
        row = {label: step_cost_us(desc, f, steps, repeats) for label, f in configs.items()}
        results["step"][desc.name] = row
        emit(ratio_line(f"step {desc.name}", row, "us", "{:.1f}"))

    chain = energy_chain()
    seconds = 5.0 if quick else 100.0
    results["energy"], results["energy_seconds"] = {}, seconds
    for dt in ENERGY_STEPS:
        runs = {label: energy_run(chain, f, dt, seconds, give_up_above=GIVE_UP)
                for label, f in configs.items()}
        results["energy"][dt] = runs
        emit(ratio_line(f"energy {seconds:g} s at {dt * 1e3:g} ms max error",
                        {k: r.max_error for k, r in runs.items()}, "rel", "{:.1e}"))

    horizon, budget = (1.0, 1.0) if quick else (10.0, 20.0)
    results["frontier"] = {label: frontier(chain, f, horizon, budget)
                           for label, f in configs.items()}
    results["frontier_seconds"], results["frontier_repeats"] = horizon, FRONTIER_REPEATS
    emit(ratio_line(f"frontier {horizon:g} s below {ENERGY_TOLERANCE:g} (measured or "
                    f"extrapolated)", {k: f.wall for k, f in results["frontier"].items()}, "s"))

    from peers.dispatch import dispatch_workloads
    from peers.dispatch import summary_lines as dispatch_lines

    results["dispatch"] = dispatch_workloads(
        {"arm7": descs[0], "chain100": describe(chain_urdf(100), "chain100")}, quick)
    for line in dispatch_lines(results["dispatch"]):
        emit(line)

    results["contact"] = contact_workloads(quick)
    for line in summary_lines(results["contact"]):
        emit(line)

    from peers import svi_proxy

    results["svi_proxy"] = svi_proxy.costs((10, 100) if quick else (10, 50, 100, 200))
    emit(svi_proxy.summary_line(results["svi_proxy"]))
    results["load"].append(os.getloadavg()[0])
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run, under a minute")
    parser.add_argument("--report", type=Path, help="write the Markdown report and figures")
    args = parser.parse_args(argv)
    lines = []

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    results = run(args.quick, emit)
    if args.report:
        from peers import report

        report.write(args.report, results, lines)
        print(f"report: {args.report}")
    return 0 if max(results["agreement"].values()) <= AGREEMENT_TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
