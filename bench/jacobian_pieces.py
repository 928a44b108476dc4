"""Where the time of the Jacobians through contact goes: Solo12 standing (as bench/estimation.py
--contact), the compiled call (jacobian_assembly.contact_jacobians_kernel) recompiled from its
own source with a cycle counter read between its pieces (and inside the step's dynamics, the
Delassus tables and their delassus_changes, the free velocities and v1's solve), best and
median microseconds over many calls; then the step, `jacobians` and the compiled call timed
alternately in one process.
The instrumented copy is made by inserting counter reads before source lines (anchors below): a
piece whose anchor no longer matches is left out of the table (its time goes to the piece
before). The counter's rate is taken against perf_counter (a shared machine: read the
proportions, and the timings below it, rather than the absolute microseconds).

Run: `.venv/bin/python bench/jacobian_pieces.py [calls]`.
"""
from __future__ import annotations

import inspect
import os
import statistics
import sys
import textwrap
import time

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from mbsim_ros.estimation import jacobian_assembly, jacobian_kernels


@intrinsic
def _cycles(typingctx):
    """LLVM's cycle counter (rdtsc on x86)."""
    def codegen(context, builder, signature, args):
        function = builder.module.declare_intrinsic("llvm.readcyclecounter",
                                                    fnty=ir.FunctionType(ir.IntType(64), []))
        return builder.call(function, [])
    return types.int64(), codegen


@njit
def cycles() -> int:
    return _cycles()


NAMESPACE = {**vars(jacobian_kernels), **vars(jacobian_assembly), "_cycles": _cycles}

# (function, its pieces' first lines: the piece's label; the stamps' first index)
KERNEL = ("contact_jacobians_kernel", [
    ("    nv = v_star.shape[0]", "the arguments' checks"),
    ("    row_dofs = leading(row_dofs_b", "the rows' supports and q-derivatives"),
    ("    # the step's dynamics", "the step's dynamics"),
    ("    lu_inverse(LU, pivots, K_inverse", "K^-1 from the step's LU factors"),
    ("    integration_kernel(", "the integration's derivatives"),
    ("    impulses = m > 0", "the branch"),
    ("    for r in range(m):", "the impacts' scales"),
    ("    free_q = leading(free_q_b", "the free velocities"),
    ("    # the configuration block's residual", "A = M~^-1 G^T"),
    ("        p = m + 2", "the Delassus tables"),
    ("        d_inverse = leading(d_inverse_b", "the laws"),
    ("        residual = leading(residual_b", "the stationarity change"),
    ("    # the impulses' change", "the branch's solve"),
    ("    state_changes(", "v1's solve and the state"),
    ("    return SUPPORTED if", None)], 0)
NESTED = {"delassus_changes": "delassus_tables"}  # (instrumented inside its caller)
INNER = [
    ("step_dynamics", [("    gravity_acceleration(", "inertias, composites, M, frame rates"),
                       ("    for i in range(nj):  # the bodies' momenta",
                        "the bodies' momenta, p_a, q_a at v"),
                       ("    for g in range(2):  # dB/dv at v* and v1",
                        "dB/dv x 2, the composites there"),
                       ("    for g in range(2):\n        target = velocities[g]",
                        "inverse dynamics at (v, w, a), polarised x 2"),
                       ("    for k in range(nv):  # C v into y",
                        "inverse dynamics at (v, w, a), polarised x 2"),
                       ("    shift_columns(", "its q-derivative's columns x 2")], 20),
    ("delassus_changes", [("    m, nv = A.shape[1], A.shape[0]", "A^T dG_b^T (g, p) (dgemm)"),
                          ("    for b in range(nv):\n        joint = joint_of[b]",
                           "the mass matrix's part (motion_pair)")],
     56),
    ("delassus_tables", [("    for r in range(m):", "g + w r, X"),
                         ("    row_changes(", "row_changes (du, dG's contractions)"),
                         ("    motion_passes(", "motion_passes"),
                         ("    delassus_changes(", "delassus_changes")], 30),
    ("free_velocity_changes", [("    gemm(G, inverse, GK)", "G K^-1 (dgemm)"),
                               ("    if configuration:  # (P(w) C-ordered",
                                "(G K^-1) P(w) (dgemm)"),
                               ("    if implicit:\n        velocity_rhs(0",
                                "the v and u blocks' right-hand sides"),
                               ("    gemm(GK, rhs, changes)",
                                "(G K^-1) times them (dgemm), the laws' changes"),
                               ("    if not plain:", "dq/dc times the changes (dgemm)")], 40),
    ("state_changes", [("    if implicit:", "the v block's right-hand side"),
                       ("    if impulses:", "G^T dgamma (dgemm)"),
                       ("    for r in range(nv):",
                        "the right-hand sides (+ G^T dgamma, dG^T gamma)"),
                       ("    if k > nv:", "K^-1 times them (dgemm), the integration's"),
                       ("    if configuration:", "the turn")],
     50)]


def instrumented(name: str, anchors: list, first: int, calls: dict) -> list:
    """``name``'s source with ``stamps[first + i] = _cycles()`` before each anchor (and at the
    end of a function that is not the kernel), compiled into NAMESPACE as name + "_p" taking
    stamps first; ``calls``: the instrumented callees' names. Returns the labels found."""
    source = textwrap.dedent(inspect.getsource(NAMESPACE[name].py_func))
    text = "\n".join(line for line in source.split("\n") if not line.startswith("@"))
    labels = []
    for anchor, label in anchors:
        if "\n" + anchor not in text or label in labels:  # (at a line's start; the first)
            continue
        indent = anchor[:len(anchor) - len(anchor.lstrip())]
        text = text.replace("\n" + anchor, f"\n{indent}stamps[{first + len(labels)}] = "
                            f"_cycles()\n" + anchor, 1)
        labels.append(label)
    if name != KERNEL[0]:
        text += f"\n    stamps[{first + len(labels)}] = _cycles()\n"
    text = text.replace(f"def {name}(", f"def {name}_p(stamps, ", 1)
    for callee in calls:
        text = text.replace(f" {callee}(", f" {callee}_p(stamps, ")
    exec(text, NAMESPACE)
    NAMESPACE[name + "_p"] = njit(NAMESPACE[name + "_p"])
    return labels


@njit
def _run(entry, x, table, stamps, calls, out):
    none = np.empty((0, 0))
    for k in range(calls):
        entry(stamps, x, 0, True, True, table, none, none)
        for i in range(out.shape[1]):
            out[k, i] = stamps[i + 1] - stamps[i]


def solo12_standing():
    """(ProcessModel holding the Simulator's memory, x, u): bench/estimation.py's state."""
    from estimation import solo12_standing as standing  # (bench/estimation.py)
    from mbsim_ros.estimation import ProcessModel

    sim, u = standing()
    process = ProcessModel(sim.model, sim.dt, "compliant", **sim.integrator.options)
    process.hold_memory(sim.get_state().integrator)
    return process, process.x_from(sim.q, sim.v), u


def main(calls: int) -> None:
    from mbsim_ros.estimation.jacobian_assembly import ROWS_FIND

    inner = {}
    for name, anchors, first in INNER:  # (callees first)
        inner[name] = (first, instrumented(name, anchors, first,
                                           [callee for callee in inner if callee in NESTED]))
    kernel_labels = instrumented(KERNEL[0], KERNEL[1], KERNEL[2],
                                 [name for name in inner if name not in NESTED])
    process, x, u = solo12_standing()
    process.jacobians(x, u)
    assembly = process._contact.jacobian_workspace
    table = assembly.table()
    stamps = np.zeros(64, dtype=np.int64)
    out = np.zeros((calls, 63), dtype=np.int64)
    entry = NAMESPACE[KERNEL[0] + "_p"]
    _run(entry, x, table, stamps, 10, out[:10])
    start, counted = time.perf_counter(), cycles()
    time.sleep(0.5)
    rate = (cycles() - counted) / (time.perf_counter() - start) / 1e6  # per us
    _run(entry, x, table, stamps, calls, out)
    print(f"Solo12 standing, the compiled call's pieces (best / median us of {calls}; counter "
          f"{rate / 1e3:.2f} GHz; load average {os.getloadavg()[0]:.2f}):")

    def show(label, column, indent=""):
        times = out[:, column] / rate
        print(f"  {indent}{label:44s} {times.min():7.2f} {np.median(times):7.2f}")

    inner_of = {"the step's dynamics": "step_dynamics", "the Delassus tables": "delassus_tables",
                "the free velocities": "free_velocity_changes",
                "v1's solve and the state": "state_changes"}
    for i, label in enumerate(kernel_labels[:-1]):
        show(label, i)
        if label in inner_of:
            first, labels = inner[inner_of[label]]
            for j, sub in enumerate(labels):
                show(sub, first + j, "  ")
                if sub in NESTED:
                    nested_first, nested = inner[sub]
                    for i_nested, piece in enumerate(nested):
                        show(piece, nested_first + i_nested, "    ")
    whole = out[:, :len(kernel_labels) - 1].sum(axis=1) / rate
    print(f"  {'the call (instrumented)':44s} {whole.min():7.2f} {np.median(whole):7.2f}")

    def timed(fn, repeats):
        times = []
        for _ in range(repeats):
            begin = time.perf_counter()
            fn()
            times.append(time.perf_counter() - begin)
        return statistics.median(times) * 1e6, min(times) * 1e6

    rounds = {"step": [], "jacobians": [], "the compiled call": []}
    for _ in range(5):
        rounds["step"].append(timed(lambda: process.step(x, u), 400))
        rounds["jacobians"].append(timed(lambda: process.jacobians(x, u), 400))
        rounds["the compiled call"].append(timed(lambda: assembly(x, ROWS_FIND, True), 400))
    print("in one process, five rounds of 400 each (median / best us):")
    for label, values in rounds.items():
        print(f"  {label:18s} " + "  ".join(f"{m:6.1f} / {b:5.1f}" for m, b in values))
    step = statistics.median(m for m, _ in rounds["step"])
    both = statistics.median(m for m, _ in rounds["jacobians"])
    print(f"  jacobians / step (medians): {both / step:.2f} steps; load average "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
