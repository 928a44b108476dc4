"""The contact integrators (compliant, rigid) as a process model: ``x = (q, v)``, each step the
integrator's own, started from a memory held fixed (docs/ESTIMATION.md, "Through contact").

What a contact step carries to the next (``Integrator.save_state``): the compliant
integrator's active set of pushing rows (the rows' kinds and pushing flags, the cone solve's
warm start) and the contacts in an impact phase with their impact speeds (impacts.py); the
rigid integrator carries nothing (ODE's LCP starts from zero impulses every step). That memory
is not part of x: it is discrete, and an estimator's state and covariance live in the tangent
space of (q, v). Every step starts from the memory the ProcessModel holds (``hold``): none by
default (as after ``Simulator.reset``), or a Simulator's (``sim.get_state().integrator``).
With that memory loaded in the Simulator, ``step`` is ``Simulator.step`` bit for bit.

Each chunk of particles (one per thread) has an integrator of its own: its buffers are the
chunk's workspace. A step runs the integrator's compiled step (compliant_step.py) where it
covers the configuration, else its general path, as ``sim.step`` does.
"""
from __future__ import annotations

import numpy as np
from numba import int64, typeof

from ..codes import NOT_CONVERGED, OK, UNFINISHED
from ..integrators import make_integrator
from ..integrators.fused import bound_entry
from .contact_batch import contact_batch

CONTACT_INTEGRATORS = ("compliant", "rigid")


class _Unbounded:
    """No divergence guard (mbsim_ros/integrators/bounds.py): a process model maps every
    particle, and the estimator judges them."""

    def __init__(self, nq: int, nv: int) -> None:
        self.packed = np.concatenate([np.full(nv, np.inf), np.full(nq, -np.inf),
                                      np.full(nq, np.inf)])


class _Slot:
    """One chunk's state as the compiled step binds it: the State's q, v, acceleration and
    effort, the Data's q_next, v_next and bounds (none); x_next, a row the step before the
    Jacobians writes (contact_jacobians._take_step)."""

    def __init__(self, nq: int, nv: int) -> None:
        self.q, self.v, self.q_next = np.zeros(nq), np.zeros(nv), np.zeros(nq)
        self.acceleration, self.effort, self.v_next = np.zeros(nv), np.zeros(nv), np.zeros(nv)
        self.bounds = _Unbounded(nq, nv)
        self.x_next = np.zeros((1, nq + nv))


class ContactSteps:
    """The steps of a contact integrator for a ProcessModel: one integrator (its buffers) per
    chunk, the memory every step starts from (``held``), the compiled step bound per chunk."""

    def __init__(self, model, dt: float, name: str, options: dict, chunks: int) -> None:
        self.integrators = [make_integrator(name, model, dt, **options)
                            for _ in range(max(1, chunks))]
        self.slots = [_Slot(model.nq, model.nv) for _ in self.integrators]
        self.held: dict | None = None
        self._bound: list = [None] * len(self.integrators)
        self._chunks = None  # the compiled batch's chunks (contact_batch.py), while current
        self._entry = None   # contact_batch's compiled entry point
        self.message = ""  # why the last failed step failed
        self.jacobian_workspace = None  # contact_jacobians' buffers, made at its first call

    def hold(self, saved: dict | None) -> None:
        """The memory every step starts from: ``Integrator.save_state()`` of a contact
        integrator on the same model and options (a Simulator's ``get_state().integrator``),
        or None: none (as after ``reset``). Copied."""
        if saved is not None:
            if not (isinstance(saved, dict) and {"memory", "impacts"} <= set(saved)):
                raise ValueError("hold: expected a contact integrator's saved memory "
                                 "(sim.get_state().integrator), a dict with 'memory' and "
                                 f"'impacts', got {type(saved).__name__}")
            keys, points = saved["impacts"]
            saved = {"memory": np.array(saved["memory"], dtype=np.int64),
                     "impacts": (np.array(keys, dtype=np.int64), np.array(points, dtype=float))}
        self.held = saved
        self._chunks = None

    def restore(self, chunk: int) -> None:
        """The held memory into this chunk's integrator."""
        integrator, slot = self.integrators[chunk], self.slots[chunk]
        if self.held is None:
            integrator.reset(slot.q, slot.v)
        else:
            integrator.load_state(self.held)

    def compiled(self, chunk: int) -> tuple | None:
        """(entry, arguments) of this chunk's compiled step (compliant_step.compliant_advance)
        bound to its slot, bound again when the integrator replaced a buffer; None when the
        configuration has none (the rigid LCP, clarabel / osqp, springs, constraints)."""
        integrator = self.integrators[chunk]
        if self._bound[chunk] is None or integrator.fused_stale:
            integrator.fused_stale = False
            self._chunks = None  # (the batch's chunks hold the old binding)
            slot = self.slots[chunk]
            fused = integrator.fused(slot, slot)
            if fused is None:
                self._bound[chunk] = False
            else:
                advance, _, arguments = fused
                self._bound[chunk] = (bound_entry(advance, arguments, slot.v.shape[0]),
                                      arguments)
        return self._bound[chunk] or None

    def step(self, chunk: int, q, v, u, q_out, v_out) -> int:
        """One step from (q, v) under u with the held memory into (q_out, v_out): OK, or a
        failure code (its words in ``message``). The compiled step where it covers the
        configuration; where it hands the step back (UNFINISHED: a buffer to grow, the
        clarabel fallback) or has none, the general path, as sim.step does."""
        integrator, slot = self.integrators[chunk], self.slots[chunk]
        self.restore(chunk)
        compiled = self.compiled(chunk)
        if compiled is not None:
            slot.q[:] = q
            slot.v[:] = v
            code = compiled[0](u, *compiled[1])
            if code == OK:
                q_out[:] = slot.q
                v_out[:] = slot.v
                return OK
            if code != UNFINISHED:
                self.message = integrator.failure_message(code)
                return code
        info = integrator.step(q, v, u, slot.q_next, slot.v_next)
        if not info.converged:
            self.message = info.message
            return NOT_CONVERGED
        q_out[:] = slot.q_next
        v_out[:] = slot.v_next
        return OK

    def first(self, x, u, codes) -> int:
        """One step of the first chunk's integrator from x = (q, v) under u (both C-ordered
        float64) with the held memory, as ``ProcessModel.step`` takes it (the compiled batch on
        one row, which restores the memory in compiled code; the general path where it hands
        the step back), its rows left in the integrator's buffers (the Jacobians read them):
        OK or a failure code (its words in ``message``). codes: scratch of one entry or
        more."""
        chunks, slot = self.chunks(), self.slots[0]
        if chunks is not None:
            self.batch(x[None], u[None], 0, 1, chunks[0], codes, slot.x_next)  # (one row)
            code = codes[0]
            if code != UNFINISHED:
                if code != OK:
                    self.message = self.integrators[0].failure_message(code)
                return int(code)
        nq = slot.q.shape[0]
        return self.step(0, x[:nq], x[nq:], u, slot.x_next[0, :nq], slot.x_next[0, nq:])

    def chunks(self) -> tuple | None:
        """The compiled batch's chunks (contact_batch.py): per chunk the compiled step's
        arguments, the integrator's memory arrays and the held copies every particle starts
        from; made again when the held memory changed or an integrator replaced a buffer.
        None when the configuration has no compiled step."""
        if self._chunks is not None and not any(it.fused_stale for it in self.integrators):
            return self._chunks
        self._chunks = None
        chunks = []
        for chunk, integrator in enumerate(self.integrators):
            self.restore(chunk)  # (may grow the buffers: before binding)
            compiled = self.compiled(chunk)
            if compiled is None:
                return None
            memory, impacts = integrator.memory_arrays()
            held_impacts = (impacts[0].copy(), impacts[1].copy(), impacts[2].copy())
            chunks.append((compiled[1], memory, impacts, memory.copy(), held_impacts))
        if not any(it.fused_stale for it in self.integrators):
            self._chunks = tuple(chunks)  # (else made again at the next call)
        return tuple(chunks)

    @property
    def batch(self):
        """contact_batch's compiled entry for the chunks' types (fused.bound_entry: numba's
        dispatch would type the chunk's tuple of arrays at every call); its caller passes X,
        U, codes and out C-ordered, as the ProcessModel's checks make them."""
        if self._entry is None:  # (the chunks' types stay when their buffers grow)
            rows, ints = np.zeros((1, 1)), np.zeros(1, dtype=np.int64)
            signature = (typeof(rows), typeof(rows), int64, int64, typeof(self.chunks()[0]),
                         typeof(ints), typeof(rows))
            contact_batch.compile(signature)  # from numba's cache when it is there
            self._entry = contact_batch.overloads[signature].entry_point
        return self._entry
