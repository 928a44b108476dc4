"""docs/BENCHMARKS.md and its figures from one run of bench/peers (`make bench`)."""
from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
from pathlib import Path

import numpy as np

from peers.contact import FRICTIONS, THETA
from peers.engines import PYBULLET_MAX_DOF, is_ours

VERSIONS = ("numpy", "numba", "pin", "mujoco", "pybullet", "dartpy", "matplotlib")


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = ", ".join(f"{p} {_version(p)}" for p in VERSIONS)
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}; {versions}")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _best(values: dict[str, float], ours: bool) -> tuple[str, float]:
    finite = {k: v for k, v in values.items() if is_ours(k) == ours and np.isfinite(v)}
    if not finite:
        return "-", float("nan")
    label = min(finite, key=finite.get)
    return label, finite[label]


def frontier_walls(results: dict) -> dict[str, float]:
    return {k: f.wall for k, f in results["frontier"].items()}


def summary_rows(results: dict) -> list[list[str]]:
    """The README table: per workload, our best, the best peer, and the ratio."""
    rows = []

    extrapolated = frozenset(k for k, f in results["frontier"].items() if f.met is None)

    def add(name: str, values: dict[str, float], fmt: str,
            approx: frozenset[str] = frozenset()) -> None:
        (ol, ov), (pl, pv) = _best(values, True), _best(values, False)
        ratio = f"{ov / pv:.2g}" if np.isfinite(ov) and np.isfinite(pv) and pv > 0 else "n/a"
        rows.append([name] + [f"{'~' if label in approx else ''}{fmt.format(value)} ({label})"
                              for label, value in ((ol, ov), (pl, pv))] + [ratio])

    for model in ("arm7", "chain100"):
        if model in results["step"]:
            values = results["step"][model]
            add(f"step, {model}, 1 ms [us]", values, "{:.1f}")
            add(f"step, {model}, 1 ms [us], variational o2 only",
                {k: v for k, v in values.items() if not is_ours(k) or k.endswith("o2")}, "{:.1f}")
    energy = {k: r.max_error for k, r in results["energy"][1e-3].items()}
    add(f"10-link chain, {results['energy_seconds']:g} s at 1 ms, max energy error", energy,
        "{:.1e}")
    walls = frontier_walls(results)
    add(f"wall time for {results['frontier_seconds']:g} s of it with energy error < 1e-4 [s] "
        f"(~: extrapolated)", walls, "{:.3g}", extrapolated)
    add("the same against the peers' first-order integrators [s]",
        {k: v for k, v in walls.items() if is_ours(k) or "RK4" not in k}, "{:.3g}",
        extrapolated)
    contact = results["contact"]
    if contact["ours"]:
        rows.append(["contact (box, stack)", contact["ours"], "section 4", "n/a"])
    else:
        box = {label: float(np.median([us for *_, us in row.values()]))
               for label, row in contact["box"].items()}
        add("contact, inclined box, step [us]", box, "{:.1f}")
        for dt in (1e-2,):
            if dt in contact["stack"]:
                add(f"contact, 5-sphere stack at {dt * 1e3:g} ms, step [us]",
                    {k: r.step_us for k, r in contact["stack"][dt].items()}, "{:.1f}")
                add(f"contact, 5-sphere stack at {dt * 1e3:g} ms, penetration [mm]",
                    {k: r.penetration * 1e3 for k, r in contact["stack"][dt].items()}, "{:.3f}")
    quad = contact["quadruped"]
    add("contact, solo12 standing under PD, step [us]", {k: r.step_us for k, r in quad.items()},
        "{:.1f}")
    add("contact, solo12 standing under PD, feet slip [mm]",
        {k: r.slip * 1e3 for k, r in quad.items()}, "{:.3f}")
    return rows


def _plot(name: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    return plt, fig, ax, name


def _save(plt, fig, ax, figures: Path, name: str) -> str:
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(figures / name, dpi=110)
    plt.close(fig)
    return f"figures/{name}"


def step_section(results: dict, figures: Path) -> str:
    configs = results["configs"]
    rows = []
    for model, values in results["step"].items():
        best_peer = _best(values, False)[1]
        ours = values.get("ours variational o2", np.nan)
        rows.append([model] + [f"{values[c]:.1f}" if np.isfinite(values[c]) else "n/a"
                               for c in configs] + [f"{ours / best_peer:.2g}"])
    plt, fig, ax, name = _plot("peers_step_cost.png")
    sizes = {m: (7 if m == "arm7" else int(m.removeprefix("chain"))) for m in results["step"]}
    chains = [m for m in results["step"] if m != "arm7"]
    for c in configs:
        ax.loglog([sizes[m] for m in chains], [results["step"][m][c] for m in chains], "o-",
                  label=c, lw=2 if is_ours(c) else 1)
    ax.set_xlabel("links (DOF)")
    ax.set_ylabel("time per 1 ms step [us]")
    ax.set_title("Step cost on N-link chains, no contact (Python call per step)")
    path = _save(plt, fig, ax, figures, name)
    return ("## 1. Step cost, no contact, dt = 1 ms\n\n"
            "Median over 9 runs of the mean time per step (us); each run is 200 steps (0.2 s) "
            "from the same state, at rest at random angles in [-0.3, 0.3] rad, gravity, zero "
            "effort (the reset is not timed). Every engine is stepped "
            "from Python, one call per step (MuJoCo's C loop or `rollout` would be cheaper per "
            "step, and so would calling our kernels without the Simulator's checks). n/a: "
            f"PyBullet's API reports at most {PYBULLET_MAX_DOF} joint states, so it cannot be "
            "set to the start state of a longer chain.\n\n"
            + _table(["model"] + configs + ["ours variational o2 / best peer"], rows)
            + f"\n\n![step cost]({path})\n")


def energy_section(results: dict, figures: Path) -> str:
    steps = list(results["energy"])
    header = ["engine / integrator"]
    for dt in steps:
        header += [f"max error, {dt * 1e3:g} ms", f"drift, {dt * 1e3:g} ms",
                   f"diverged, {dt * 1e3:g} ms"]
    rows = []
    for label in results["configs"]:
        row = [label]
        for dt in steps:
            run = results["energy"][dt][label]
            row += [f"{run.max_error:.2e}", f"{run.drift:+.2e}",
                    "-" if run.diverged_at is None else f"at {run.diverged_at:.2f} s"]
        rows.append(row)
    plt, fig, ax, name = _plot("peers_energy_chain10.png")
    for label, run in results["energy"][steps[0]].items():
        t = np.arange(1, run.error.size + 1) * run.dt * run.stride
        ax.semilogy(t, np.maximum(np.abs(run.error), 1e-14), lw=0.6, label=label)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("|E - E0| / |E0|")
    ax.set_title(f"Passive 10-link chain, dt = {steps[0] * 1e3:g} ms, one energy function")
    path = _save(plt, fig, ax, figures, name)
    return (f"## 2. Energy behaviour: passive 10-link chain, {results['energy_seconds']:g} s\n\n"
            "Ten 1 m, 1 kg links in a plane, released at rest with 0.3 rad at every joint (the "
            "chain of Lee et al. Fig. 2 and docs/VARIATIONAL.md), at the node's 1 ms and at a "
            "coarser 4 ms. The energy of every engine is computed by one function (ours, "
            "`mbsim_ros.dynamics.energy`) from its state mapped to our q, v. Max error: "
            "max abs(E - E0) / abs(E0). Drift: mean relative error over the last 10 % of the "
            "run minus that over the first 10 %. Damping, armature, friction, PyBullet's link "
            "damping and velocity motors are all zero: the system is conservative. Diverged: "
            "the relative error passed 10, the state stopped being finite, or (ours) a step's "
            "root finder failed. The chain is chaotic: runs of the same scheme in different "
            "engines agree for the first seconds and then part through rounding, so the "
            "Euler rows differ in detail over 100 s.\n\n"
            + _table(header, rows) + f"\n\n![energy]({path})\n")


def frontier_section(results: dict, figures: Path) -> str:
    seconds = results["frontier_seconds"]
    rows = []
    plt, fig, ax, name = _plot("peers_frontier.png")
    for label, front in results["frontier"].items():
        rows.append([label, front.summary(seconds), str(len(front.runs))])
        done = [r for r in front.runs if r.diverged_at is None]
        ax.loglog([r.max_error for r in done], [r.wall for r in done], "o-", label=label,
                  lw=2 if is_ours(label) else 1)
    ax.axvline(1e-4, color="gray", ls=":")
    ax.set_xlabel("max relative energy error")
    ax.set_ylabel(f"wall time for {seconds:g} s simulated [s]")
    ax.set_title("Accuracy-cost frontier: 10-link chain (dt halved from 16 ms)")
    path = _save(plt, fig, ax, figures, name)
    walls = frontier_walls(results)
    first_order = {k: v for k, v in walls.items() if is_ours(k) or "RK4" not in k}
    verdict = ""
    for label, values in (("best peer", walls), ("best first-order peer", first_order)):
        (ol, ov), (pl, pv) = _best(values, True), _best(values, False)
        if np.isfinite(ov) and np.isfinite(pv):
            verdict += f" Best ours ({ol}) / {label} ({pl}): **{ov / pv:.2g}**."
    return (f"## 3. Accuracy-cost frontier\n\n"
            f"Wall time (stepping only) to simulate {seconds:g} s of the chain of "
            f"section 2 with the max relative energy error below 1e-4. dt starts at 16 ms "
            f"and is halved until the engine gets there or the next run would exceed the "
            f"budget; then the time is extrapolated from the error's observed order in dt "
            f"and labelled so (the ratios below use it). Each figure is the median of "
            f"{results.get('frontier_repeats', 1)} timings of the decisive run: the run that "
            f"met the tolerance, repeated whole (the runs are deterministic: same error), or, "
            f"for an extrapolation, the cost per step at the last dt (the last run and "
            f"shorter runs at that dt). The energy is checked after every "
            f"step, or every 0.1 ms of simulated time for shorter steps. First-order: "
            f"semi-implicit Euler or implicitfast, the only integrator PyBullet and DART "
            f"offer and MuJoCo's default.{verdict}\n\n"
            + _table(["engine / integrator", "cheapest run below 1e-4", "runs"], rows)
            + f"\n\n![frontier]({path})\n")


def contact_section(results: dict) -> str:
    contact = results["contact"]
    box_rows = []
    for label, row in contact["box"].items():
        box_rows.append([label] + [f"{m:.3f}" for m, _, _ in row.values()] +
                        [f"{np.median([us for *_, us in row.values()]):.1f}"])
    analytic = [f"{a:.3f}" for _, a, _ in next(iter(contact["box"].values())).values()] \
        if contact["box"] else []
    box_rows.append(["analytic g (sin - mu cos), 0 if it sticks"] + analytic + ["-"])
    if contact["ours"]:
        box_rows.append(["ours", contact["ours"]] + [""] * len(FRICTIONS))
    stack_rows = []
    for dt, row in contact["stack"].items():
        for label, r in row.items():
            stack_rows.append([f"{dt * 1e3:g} ms", label, "yes" if r.stable else "no",
                               f"{r.displacement * 1e3:.3f}", f"{r.penetration * 1e3:.3f}",
                               f"{r.step_us:.1f}"])
        if contact["ours"]:
            stack_rows.append([f"{dt * 1e3:g} ms", "ours", contact["ours"], "", "", ""])
    quad = contact["quadruped"]
    best_step = min((r.step_us for k, r in quad.items() if not is_ours(k)), default=np.nan)
    best_slip = min((r.slip for k, r in quad.items() if not is_ours(k)), default=np.nan)
    quad_rows = [[label, f"{r.slip * 1e3:.3f}", f"{r.sink * 1e3:.3f}", f"{r.step_us:.1f}",
                  f"{r.step_us / best_step:.2g}" if np.isfinite(best_step) else "n/a",
                  f"{r.slip / best_slip:.2g}" if np.isfinite(best_slip) else "n/a"]
                 for label, r in quad.items()]
    return (
        "## 4. Contact\n\nEach peer with its own default contact model and solver (MuJoCo: "
        "soft contacts, pyramidal cone, Euler; PyBullet: btMultiBody with its sequential-impulse "
        "solver; DART: its LCP solver with the FCL collision detector), friction the same for "
        "every pair of bodies.\n\n"
        f"**Inclined box** (Drumwright Fig. 9): a 1 kg, 0.2 x 0.2 x 0.1 m box released at rest "
        f"on a {np.degrees(THETA):.0f} degree incline (gravity tilted, ground flat); "
        f"acceleration along the slope [m/s^2] fitted over the second half of 1 s at 1 ms; "
        f"last column: the median over the steps of the time of one step (us; per-step "
        f"medians keep the other jobs of this shared machine out of the figure), the median "
        f"of that over the friction values.\n\n"
        + _table(["engine"] + [f"mu = {mu}" for mu in FRICTIONS] + ["step [us]"], box_rows)
        + "\n\n**Sphere stack** (Drumwright Fig. 10): five 1 kg spheres of radius 0.1 m in a "
          "column on the ground, friction 0.5, 2 s. Stable: every sphere ends within 5 cm of "
          "its start. Penetration: the deepest overlap with the ground or a neighbour over "
          "the second half. Step: the median over the steps, as for the box.\n\n"
        + _table(["dt", "engine", "stable", "largest displacement [mm]", "penetration [mm]",
                  "step [us]"], stack_rows)
        + "\n\n**Quadruped standing**: solo12 (example-robot-data; our loader's masses and "
          "inertias written for every engine, a 19 mm contact sphere at each foot frame, "
          "friction 1), in the SRDF's standing posture, held by joint PD (5 N m/rad, "
          "0.1 N m s/rad) for 3 s at 1 ms, the same controller code for every engine "
          "(bench/peers/quadruped.py). Slip: the largest horizontal travel of a foot "
          "after the first 0.5 s; sink: the deepest foot penetration after 0.5 s; step: "
          "median over the steps of one PD loop iteration (state read-out, efforts, step; "
          "the foot positions are read outside the timing; the engines' runs take turns "
          "in pieces of 250 steps, so that each meets the machine's other jobs alike). "
          "\"MuJoCo elliptic\": elliptic friction cones and impratio 10, the settings "
          "MuJoCo's documentation advises against slip (its defaults: pyramidal, 1). Ours "
          "runs the same URDF through our scene loader on a ground of friction 1 with the "
          "scene's default material (Hertz contact, steel on steel): \"ours compliant\" is "
          "the compliant integrator with its defaults (true friction cone), \"ours rigid\" "
          "the rigid-LCP baseline (ODE's model, docs/RIGID.md) with its PGS and pivoting "
          "solvers. Ratios: against the best peer in that column (smallest step cost, "
          "smallest slip). Our Solo12 in its own scene (kp 30) is in "
          "[COMPLIANT.md](COMPLIANT.md) and [RIGID.md](RIGID.md).\n\n"
        + _table(["engine", "feet slip [mm]", "sink [mm]", "step [us]",
                  "step / best peer", "slip / best peer"], quad_rows) + "\n")


PAPERS = [  # (figure, theirs, ours, where)
    ("Lee et al. Fig. 2: energy of a chain, VI vs semi-implicit Euler",
     "VI bounded, Euler drifts",
     "the same; every peer's Euler alike (section 2)",
     "[VARIATIONAL.md](VARIATIONAL.md), ![vi energy](figures/vi_energy_chain10.png)"),
    ("Lee et al. Fig. 3: time per step against DOF", "linear (RIQN)",
     "slope 0.89 from 10 to 1000 links; the peers in section 1",
     "[VARIATIONAL.md](VARIATIONAL.md), ![vi scaling](figures/vi_scaling.png)"),
    ("Lee et al. Fig. 4: iterations, convergence", "RIQN 5.69, Newton 4 iterations",
     "RIQN 4.9, Newton 2.1; error ratio 4 (order 2), 16 (order 4) per halving of dt",
     "[VARIATIONAL.md](VARIATIONAL.md) (bench/variational.py, test_variational.py)"),
    ("DRNEA vs SVI time, 10 / 100 DOF", "15x / 32x",
     "not reproduced: we have no SVI (Johnson and Murphey) to time against; a labelled "
     "proxy below", "below"),
    ("Newton vs RIQN time, 10 / 100 DOF", "3.8x / 53x",
     "1.9x / 3.6x (our exact Jacobian is assembled like CRBA, not by Alg. 4 per column)",
     "[VARIATIONAL.md](VARIATIONAL.md)"),
    ("Drumwright Table 1: box on an elastic foundation", "-",
     "ours next to Drumwright's table (compliant integrator)",
     "[COMPLIANT.md, \"Box on an elastic foundation (Drumwright 2019, Table 1)\"]"
     "(COMPLIANT.md#box-on-an-elastic-foundation-drumwright-2019-table-1)"),
    ("Drumwright Fig. 9: friction sweep on an incline", "-",
     "ours (compliant) and the peers against Coulomb's answer (section 4); the full sweep "
     "and its plot",
     "section 4; [COMPLIANT.md](COMPLIANT.md), ![friction sweep]"
     "(figures/compliant_friction_sweep.png)"),
    ("Drumwright Fig. 10: sphere stack", "-",
     "ours (compliant) and the peers at 1 and 10 ms (section 4); our cost against the number "
     "of spheres", "section 4; [COMPLIANT.md](COMPLIANT.md) (bench/compliant.py)"),
]


def svi_proxy_text(results: dict) -> str:
    figures = results.get("svi_proxy")
    if not figures:
        return ""
    rows = [[str(n), f"{ours:.1f}", f"{dense:.1f}", f"{dense / ours:.2g}"]
            for n, (ours, dense) in figures.items()]
    return (
        "\n**DRNEA against an SVI-like dense evaluation (a proxy, not SVI).** Lee et al. "
        "(Lee et al. 2016, sec. 4.3) time 10k-frame simulations of serial chains with DRNEA and "
        "with "
        "the scalable variational integrator (SVI) of Johnson and Murphey, both under the "
        "same root finder: DRNEA is 15x faster at 10 DOF and 32x at 100 DOF. (The reading "
        "reading notes on Lee et al. 2016 quote 700 DOF for the 32x and 5.5x / 53x at 10 / 1000 "
        "DOF for "
        "RIQN against Newton; the paper says 100 DOF, and 3.8x / 53x at 10 / 100 DOF.) SVI is "
        "not available to us, so that ratio is not reproduced. What we time instead "
        "(bench/peers/svi_proxy.py) is the cost SVI's O(n^2) DEL evaluation comes from: one "
        "evaluation of the two-configuration DEL residual, ours "
        "(DRNEA, `del_residual_kernel`, one compiled O(n) call) against the DEL residual of "
        "the midpoint discrete Lagrangian in generalized coordinates, "
        "`D2 Ld(q_prev, q) + D1 Ld(q, q_next)` with `D1,2 Ld(a, b) = h/2 (C(m, w)^T w - g(m)) "
        "-+ M(m) w` (m the midpoint, w = (b - a) / h; dT/dq = C^T v), built from pinocchio's "
        "dense mass matrix (CRBA), Coriolis matrix (the Christoffel terms) and gravity "
        "(C++, called from Python, dense products in numpy). It is checked against finite "
        "differences of the discrete action (test/test_peers.py). Different discrete "
        "Lagrangians, different code (not SVI's), one residual rather than whole simulations "
        "with a root finder and its Jacobian (the O(n^3) part of SVI with Newton): the ratio "
        "shows how an O(n) and an O(n^2) evaluation part with n on this machine, not the "
        "paper's figure. At 10 links a large part of the proxy's figure is the cost of its "
        "Python-level calls. "
        "3-D chains of 0.1 m links (section 1's); each figure is the median over 300 timed "
        "calls.\n\n"
        + _table(["links", "ours DRNEA [us]", "dense M + C (proxy) [us]",
                  "dense / ours"], rows) + "\n")


def papers_section(results: dict) -> str:
    return ("## 5. The papers' figures next to ours\n\n"
            + _table(["paper figure", "theirs", "ours", "where"], [list(r) for r in PAPERS])
            + "\n" + svi_proxy_text(results))


READING = """What the run says (read the tables for the figures of this run):

- **Cost per step.** At 1 ms our variational integrator costs several times a peer's
  semi-implicit Euler step: it solves an implicit equation each step (3-6 RIQN iterations, each
  an O(n) sweep); order 4 is three such steps. Our own semi-implicit Euler is within a small
  factor of the fastest peer, and on long chains MuJoCo's dense factorisation grows faster than
  the O(n) recursions (ours, pinocchio, DART).
- **Energy.** With the step fixed at 1 ms, every first-order integrator (semi-implicit Euler:
  PyBullet's and DART's only one, MuJoCo's default; implicitfast) ends tens of percent off the
  initial energy of the passive chain; ours stays within a band and does not drift. MuJoCo's
  RK4 is at least as accurate as our order 4 at 1 ms, but its error is a drift (its drift
  column is about its max error, and it grows fast with dt), where ours oscillates without one.
- **Accuracy per cost.** For an energy error below 1e-4 over 10 s, MuJoCo's RK4 is the
  cheapest on this smooth, conservative, contact-free chain; our variational integrators are
  next, and two orders of magnitude cheaper than any first-order integrator, which needs
  microsecond steps to get there (its time is extrapolated past the search's budget). The
  case for the variational integrator is the bounded, drift-free error over long runs and its
  structure (momentum, symplecticity, implicit damping), not the cheapest step at a fixed
  accuracy against RK4.
- **Contact.** Every engine reproduces the incline's analytic acceleration and holds the
  stack; they differ in penetration and, on the quadruped, in how far the feet creep (MuJoCo's
  soft contacts with its default pyramidal cones the most)."""


def contact_reading(results: dict) -> str:
    """The contact bullet's figures, from this run: our step cost against the best peer's."""
    contact = results["contact"]
    if contact["ours"]:
        return f"  Ours: {contact['ours']}."
    parts = []
    box = contact["box"]
    if "ours compliant" in box:
        peers = [np.median([us for *_, us in row.values()]) for k, row in box.items()
                 if not is_ours(k)]
        ours = np.median([us for *_, us in box["ours compliant"].values()])
        error = max(abs(m - a) for m, a, _ in box["ours compliant"].values())
        if peers:
            parts.append(f"on the incline within {error:.1e} m/s^2 of the analytic "
                         f"acceleration at {ours / min(peers):.2g}x the best peer's step cost")
    quad = contact["quadruped"]
    peers = {k: r for k, r in quad.items() if not is_ours(k)}
    step = min((p.step_us for p in peers.values()), default=np.nan)
    if "ours compliant" in quad and peers:
        r = quad["ours compliant"]
        slip = min(peers.values(), key=lambda p: p.slip)
        parts.append(f"on Solo12 {r.slip * 1e3:.3f} mm of feet slip (best peer "
                     f"{slip.slip * 1e3:.3f} mm) and {r.sink * 1e3:.4f} mm of sink at "
                     f"{r.step_us / step:.2g}x the best peer's step cost")
    rigid = {k: r for k, r in quad.items() if k.startswith("ours rigid")}
    if rigid and peers:
        label = min(rigid, key=lambda k: rigid[k].step_us)
        parts.append(f"our rigid-LCP baseline ({label}) on Solo12 at "
                     f"{rigid[label].step_us / step:.2g}x")
    if not parts:
        return ""
    return "  Ours in this run, compliant integrator: " + "; ".join(parts) + "."


def _load(results: dict) -> str:
    load = results.get("load") or []
    return " at the start, ".join(f"{x:.1f}" for x in load) + " at the end" if len(load) == 2 \
        else "not recorded"


def write(path: Path, results: dict, lines: list[str]) -> None:
    """The report at `path` and its PNGs in `path.parent / "figures"`."""
    figures = path.parent / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    summary = _table(["workload (this machine, `make bench`)", "ours (best)", "best peer",
                      "ours / peer"], summary_rows(results))
    text = "\n\n".join([
        "# Benchmarks: mbsim_ros side by side with MuJoCo, PyBullet, DART and pinocchio",
        f"Generated by `make bench` (`bench/peers --report`) on "
        f"{datetime.date.today().isoformat()}: {machine()}. Step costs are medians of "
        f"repeated runs; the machine has 2 cores and was shared while this ran (1-minute "
        f"load average {_load(results)}), so figures timed over long runs (section 1's "
        f"slower configurations, section 3) can be inflated by the other jobs; the contact step "
        f"costs are per-step medians, which keep them out. Smaller is better in every "
        f"table; a ratio above 1 means we are slower or less accurate."
        + (" **A reduced (--quick) run: durations and repeats are shorter than the text "
           "below says.**" if results["quick"] else ""),
        summary,
        READING + ("\n" + contact_reading(results) if contact_reading(results) else ""),
        "Every engine runs the same model, written from one description (our loader's "
        "masses, inertias, joint placements and axes) as URDF for us, pinocchio, PyBullet and "
        "DART and as MJCF for MuJoCo. Agreement at t = 0, each engine's own energy at a random "
        "state against ours (relative): worst "
        f"**{max(results['agreement'].values()):.1e}** (checked by test/test_peers.py to 1e-9). "
        "DART 6.20 on PyPI has no variational integrator (its World steps semi-implicit "
        "Euler), so it is compared as it ships.",
        "One line per workload (`bench/peers --quick` prints the same, reduced):\n\n```\n"
        + "\n".join(lines) + "\n```",
        step_section(results, figures),
        energy_section(results, figures),
        frontier_section(results, figures),
        contact_section(results),
        papers_section(results),
    ])
    path.write_text(text)
