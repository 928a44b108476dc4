"""The simulator as a process model for state estimation: ``x_next = f(x, u)``, pure, batched over
particles, with the exact Jacobians of the variational step (docs/ESTIMATION.md)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..codes import UNFINISHED
from ..dynamics.checks import (BAD_QUATERNION, OK, QUATERNION_TOLERANCE, all_finite_kernel,
                               as_vector, check_mass_matrix)
from ..dynamics.configuration import difference_kernel, integrate_kernel
from ..dynamics.drnea_partials import mass_diagonal_partials_kernel, step_partials_kernel
from ..dynamics.crba import crba
from ..dynamics.minv import minv
from ..dynamics.rnea import rnea
from ..dynamics.rnea_derivative import rnea_derivatives
from ..dynamics.workspace import workspace_size
from ..integrators import make_integrator
from ..integrators.euler import euler_buffers
from ..integrators.servo import no_servo
from ..integrators.variational import (momentum_kernel, variational_step_kernel,
                                       variational_workspace_size)
from ..model import Model
from ..spatial import Ad, dexp, exp_se3
from .contact import CONTACT_INTEGRATORS, ContactSteps
from .contact_jacobians import effort_jacobian, parameter_jacobian, state_jacobians
from .batch import (EULER_CHUNK, VARIATIONAL_CHUNK, euler_batch, euler_batch_parallel,
                    first_bad_row, thread_count, variational_batch, variational_batch_parallel)

INTEGRATORS = ("variational", "euler") + CONTACT_INTEGRATORS
# Below this many particles per thread the parallel launch costs more than it saves (bench).
PARALLEL_MIN_PARTICLES_PER_THREAD = 4
_ONE_SUBSTEP = np.array([1.0])
STATE_EPS = 1e-6  # central differences' step in the state for A through contact


class StepFailed(RuntimeError):
    """A step the integrator could not complete; ``particles`` lists the failed rows."""

    def __init__(self, message: str, particles: np.ndarray) -> None:
        super().__init__(message)
        self.particles = particles


class ProcessModel:
    """``x_next = step(x, u)`` for a Model, as an estimator needs it.

    ``ProcessModel(model, dt=1e-3, integrator="variational", failure="raise", **options)``:
    options go to the integrator as in ``Simulator``. The state vector (length ``nx``):

    * ``"variational"``: ``x = (q, p)``, the configuration (nq) and the discrete momentum (nv),
      the integrator's own state, so that ``step`` is ``Simulator.step`` bit for bit;
    * ``"euler"``: ``x = (q, v)`` (either ``velocity_terms``; exact Jacobians for both);
    * ``"compliant"``, ``"rigid"`` (the contact integrators: a ``scene`` among the options, or
      ``from_scene``): ``x = (q, v)``; every step starts from the integrator's memory held by
      ``hold_memory`` (none by default: contact.py, docs/ESTIMATION.md).

    ``x_from(q, v)`` / ``qv_from(x)`` convert (``p = M(q) v``, ``v = M(q)^-1 p``). Perturbations
    live in the tangent space (length ``ndx = 2 nv``): ``integrate(x, dx) = (q (+) dq, p + dp)``
    and ``difference(x0, x1)`` its inverse; ``jacobians(x, u) -> (A, B)`` is the derivative of
    ``difference(step(x, u), step(integrate(x, dx), u + du))`` at ``dx = 0, du = 0``.
    ``step_batch(X, U, out=None)`` steps N particles (rows of X) in one compiled call, in
    parallel above a few particles per thread. A model whose joint-space inertia is singular
    (a joint that moves no mass, without armature) is refused at construction, naming the
    joints (``dynamics.checks.check_mass_matrix``). A step that fails (the root finder does not
    converge, the state diverges) raises ``StepFailed``, or with ``failure="nan"`` leaves NaN in
    its row (a particle filter can then drop it).
    """

    def __init__(self, model: Model, dt: float = 1e-3, integrator: str = "variational", *,
                 failure: str = "raise", **options) -> None:
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        if failure not in ("raise", "nan"):
            raise ValueError(f"failure must be 'raise' or 'nan', got {failure!r}")
        if model.nv == 0:
            raise ValueError(f"model '{model.name}': it has no degree of freedom (nv = 0): "
                             f"nothing to estimate")
        self._contact, self._pool = None, None
        if integrator in CONTACT_INTEGRATORS:
            self._contact = ContactSteps(model, dt, integrator, options, thread_count())
            self.integrator = self._contact.integrators[0]
        else:
            self.integrator = make_integrator(integrator, model, dt, **options)
        check_mass_matrix(model, self.integrator.mass_matrix)
        self.model = model
        self.dt = float(dt)
        self.integrator_name = integrator
        self.failure = failure
        self.nq, self.nv = model.nq, model.nv
        self.nx, self.ndx, self.nu = model.nq + model.nv, 2 * model.nv, model.nv
        self._allocate(thread_count())
        self._codes = np.zeros(1, dtype=np.int64)
        self._zero_u = np.zeros((1, model.nv))

    @classmethod
    def from_simulator(cls, sim, *, failure: str = "raise") -> "ProcessModel":
        """The process model of a Simulator: its model, dt, integrator and options (the
        Simulator's own state and buffers are not touched; a contact integrator's memory is
        not held: ``hold_memory(sim.get_state().integrator)``)."""
        if sim.integrator_name in CONTACT_INTEGRATORS:
            return cls(sim.model, sim.dt, sim.integrator_name, failure=failure,
                       **sim.integrator.options)
        process = cls(sim.model, sim.dt, sim.integrator_name, failure=failure)
        process.integrator = sim.integrator  # read-only here: settings, tolerance, inertias
        return process

    @classmethod
    def from_scene(cls, scene, dt: float = 1e-3, integrator: str = "compliant", *,
                   failure: str = "raise", **options) -> "ProcessModel":
        """The process model of a scene (a YAML path, a dict of the same structure or a loaded
        contact.Scene): its merged model with a contact integrator ("compliant" or "rigid");
        ``scene`` holds the loaded Scene (its start: ``x_from(process.scene.q0, 0)``)."""
        from ..contact.scene import Scene, load_scene

        if integrator not in CONTACT_INTEGRATORS:
            raise ValueError(f"a scene needs a contact integrator {CONTACT_INTEGRATORS}, got "
                             f"{integrator!r}")
        loaded = scene if isinstance(scene, Scene) else load_scene(scene)
        process = cls(loaded.model, dt, integrator, failure=failure, scene=loaded, **options)
        process.scene = loaded
        return process

    def hold_memory(self, saved: dict | None) -> None:
        """Contact integrators: the memory every step starts from (their active set of pushing
        rows and the contacts in an impact phase: ``sim.get_state().integrator`` of a Simulator
        on the same model and options), copied; None: none, as after ``Simulator.reset``
        (the default). With the Simulator's memory held, ``step`` is its next step bit for
        bit."""
        if self._contact is None:
            raise ValueError(f"hold_memory: the {self.integrator_name} integrator's state is x "
                             f"itself (nothing is held)")
        self._contact.hold(saved)

    def memory(self) -> dict:
        """Contact integrators: the memory the last ``step`` ended with, in the form
        ``hold_memory`` takes (a copy). A filter that carries it from step to step,
        ``process.hold_memory(process.memory())`` after each ``step``, steps as the Simulator
        does through touch-downs (docs/ESTIMATION.md). After ``step_batch`` it is that of one
        of the rows: carry it from ``step`` only."""
        if self._contact is None:
            raise ValueError(f"memory: the {self.integrator_name} integrator's state is x "
                             f"itself (nothing is held)")
        return self.integrator.save_state()

    def _allocate(self, chunks: int) -> None:
        """Per-thread workspaces, made once."""
        m, nq, nv = self.model, self.nq, self.nv
        chunks = max(1, chunks)
        self._ws = np.zeros((chunks, workspace_size(m.njoints, nv)))
        self._unservoed = no_servo(nv)
        if self._contact is not None:
            pass  # each chunk's integrator holds its workspaces (contact.py)
        elif self.integrator_name == "variational":
            self._vws = np.zeros((chunks, variational_workspace_size(m.njoints, nv, nq)))
            self._buf = np.zeros((chunks, VARIATIONAL_CHUNK.size(nv=nv, nq=nq)))
        else:
            self._vws = np.zeros((chunks, 1))
            self._buf = np.zeros((chunks, EULER_CHUNK.size(nv=nv, nq=nq)))
            _, matrices, ints = euler_buffers(m)
            self._mats = np.zeros((chunks,) + matrices.shape)
            self._ints = np.zeros((chunks,) + ints.shape, dtype=np.int64)
        self._stats = np.zeros((chunks, 3), dtype=np.int64)

    # ---- converters -------------------------------------------------------------------------

    def x_from(self, q, v) -> np.ndarray:
        """The state of configuration q and velocity v (variational: p = M(q) v, as
        ``Simulator.reset`` sets it; the others: (q, v))."""
        q = self._check_configuration(as_vector(q, self.nq, "q"), "q")
        v = as_vector(v, self.nv, "v")
        if not all_finite_kernel(v):
            raise ValueError("v contains NaN or infinity")
        x = np.empty(self.nx)
        x[:self.nq] = q
        if self.integrator_name == "variational":
            m = self.model
            momentum_kernel(m.joint_int, m.joint_real, m.armature, q, v, self._ws[0],
                            x[self.nq:])
        else:
            x[self.nq:] = v
        return x

    def qv_from(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) of a state (variational: v = M(q)^-1 p, the velocity ``Simulator.v`` reports)."""
        x = self._check_state(x, "x")
        q, second = x[:self.nq].copy(), x[self.nq:].copy()
        if self.integrator_name == "variational":
            return q, minv(self.model, q, second)
        return q, second

    def integrate(self, x, dx) -> np.ndarray:
        """x (+) dx = (q (+) dx[:nv], second + dx[nv:]) (dx in the tangent space, length ndx)."""
        x = self._check_state(x, "x")
        dx = as_vector(dx, self.ndx, "dx")
        if not all_finite_kernel(dx):
            raise ValueError("dx contains NaN or infinity")
        out = np.empty(self.nx)
        integrate_kernel(self.model.joint_int, x[:self.nq], dx[:self.nv], 1.0, out[:self.nq])
        out[self.nq:] = x[self.nq:] + dx[self.nv:]
        return out

    def difference(self, x0, x1) -> np.ndarray:
        """dx with integrate(x0, dx) = x1 (q part: q1 (-) q0, the tangent at q0)."""
        x0 = self._check_state(x0, "x0")
        x1 = self._check_state(x1, "x1")
        dx = np.empty(self.ndx)
        difference_kernel(self.model.joint_int, x0[:self.nq], x1[:self.nq], dx[:self.nv])
        dx[self.nv:] = x1[self.nq:] - x0[self.nq:]
        return dx

    # ---- the process model ------------------------------------------------------------------

    def step(self, x, u=None) -> np.ndarray:
        """The state one step of dt after x under the joint efforts u (nv; default zero)."""
        x = self._check_state(x, "x")
        U = self._zero_u if u is None else self._check_input(u, "u").reshape(1, self.nv)
        out = np.empty((1, self.nx))
        self._run(x.reshape(1, self.nx), U, out, parallel=False, name="x")
        return out[0]

    def step_batch(self, X, U=None, out=None, *, parallel: bool | None = None) -> np.ndarray:
        """Every row of X (N x nx) one step on, under U (N x nv, or one nv-vector for all rows,
        or None for zero) into ``out`` (N x nx, float64, C order; may be X itself), allocated
        when None. With ``out`` given (and X, U already C-ordered float64) nothing is allocated
        after the first call with N rows. ``parallel``: None chooses (threads from a few
        particles per thread up); the per-thread workspaces are made at construction, for the
        threads available then."""
        X = self._check_matrix(X, "X")
        n = X.shape[0]
        if U is None:
            U = self._zero_u
        elif np.ndim(U) == 1:
            U = self._check_input(U, "U").reshape(1, self.nv)
        else:
            U = _as_matrix(U, self.nv, "U")
            if U.shape[0] != n:
                raise ValueError(f"U must have {n} rows (one per particle), got {U.shape[0]}")
            if not all_finite_kernel(U.reshape(-1)):
                raise ValueError("U contains NaN or infinity")
        if out is None:
            out = np.empty((n, self.nx))
        elif not (isinstance(out, np.ndarray) and out.dtype == np.float64
                  and out.shape == (n, self.nx) and out.flags.c_contiguous
                  and out.flags.writeable):
            raise ValueError(f"out must be a writeable C-ordered float64 array of shape "
                             f"({n}, {self.nx})")
        if parallel is None:
            parallel = n >= PARALLEL_MIN_PARTICLES_PER_THREAD * self._ws.shape[0]
        parallel = parallel and self._ws.shape[0] > 1
        self._run(X, U, out, parallel=parallel, name="X")
        return out

    def _run(self, X, U, out, *, parallel: bool, name: str) -> None:
        n = X.shape[0]
        if self._codes.shape[0] < n:
            self._codes = np.zeros(n, dtype=np.int64)
        codes = self._codes[:n]
        m, it = self.model, self.integrator
        if self._contact is not None:
            self._contact_rows(X, U, codes, out, parallel)
        elif self.integrator_name == "variational":
            batch = variational_batch_parallel if parallel else variational_batch
            batch(m.joint_int, m.joint_real, m.gravity, m.damping, m.friction, m.armature, it.Yb,
                  self.dt, it.substeps, it.settings, *it.choices, it.tolerance, X, U, self._ws,
                  self._vws, self._buf, self._stats, codes, out)
        else:
            batch = euler_batch_parallel if parallel else euler_batch
            batch(m.joint_int, m.joint_real, m.gravity, m.damping, m.friction, m.armature,
                  self.dt, *it.treatment, X, U, self._ws, self._buf, self._mats, self._ints, codes,
                  out)
        if self.failure == "raise" and codes.max() != OK:
            failed = np.flatnonzero(codes)
            reason = self.integrator.failure_message(int(codes[failed[0]])) \
                if self._contact is None else self._contact.message
            where = "" if name == "x" else f" for {failed.size} of {n} particles (first: row " \
                f"{failed[0]})"
            raise StepFailed(f"the step failed{where}: {reason}", failed)

    def _contact_rows(self, X, U, codes, out, parallel: bool) -> None:
        """The contact integrators' rows, each from the held memory: in one compiled call
        (contact_batch.py) where the configuration has a compiled step, then the rows it
        handed back (UNFINISHED), or all of them without one, one by one on the general path
        (contact.py); a failed row NaN."""
        steps = self._contact
        chunks = steps.chunks()
        rows = range(X.shape[0])
        if chunks is not None:
            n, batch = X.shape[0], steps.batch
            if parallel and len(chunks) > 1:  # one compiled call per thread (contact_batch.py)
                count = len(chunks)
                done = [self._threads().submit(batch, X, U, c * n // count,
                                               (c + 1) * n // count, chunks[c], codes, out)
                        for c in range(count)]
                for future in done:
                    future.result()
            else:
                batch(X, U, 0, n, chunks[0], codes, out)
            rows = ()
            if codes.max() != OK:  # (first: the masks would allocate at every call)
                failed = codes[(codes != OK) & (codes != UNFINISHED)]
                if failed.size:
                    steps.message = steps.integrators[0].failure_message(int(failed[0]))
                rows = np.flatnonzero(codes == UNFINISHED)
        nq = self.nq
        for n in rows:
            q, v = X[n, :nq].copy(), X[n, nq:].copy()  # (out may be X)
            code = steps.step(0, q, v, U[0 if U.shape[0] == 1 else n], out[n, :nq], out[n, nq:])
            codes[n] = code
            if code != OK:
                out[n] = np.nan

    def _threads(self) -> ThreadPoolExecutor:
        """The threads of a parallel contact batch, one per chunk, made on first use."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(self._contact.integrators),
                                            thread_name_prefix="process-model")
        return self._pool

    # ---- linearisation ----------------------------------------------------------------------

    def jacobians(self, x, u=None, params=None) -> tuple[np.ndarray, ...]:
        """(A, B), the exact derivatives of ``step`` at (x, u): A (ndx x ndx) with respect to the
        state in the tangent space (``integrate``), B (ndx x nu) with respect to u.

        By the implicit function theorem on the step's equations (docs/ESTIMATION.md): with
        R0, R1 the derivatives of the DEL residual r with respect to q_k and q_k+1 and P0, P1
        those of p_k+1, d q_k+1 = -R1^-1 (R0 dq_k + dp_k + h/2 du) and
        dp_k+1 = P0 dq_k + P1 dq_k+1 + h/2 du. Fourth order: the product over the substeps.
        Coulomb friction: the derivative of the branch the step took (stick or slip, per joint),
        one-sided where a joint sits exactly on the switch. Euler: from the derivatives of
        inverse dynamics (``_euler_jacobians``). Compliant (true cone): exact through the
        contact solve (``_contact_jacobians``); with
        ``params`` (names among contact_jacobians.PARAMETERS: "friction", "stiffness",
        "mass:<link>") a third matrix (ndx x len(params)), the derivatives with respect to the
        scene's material and links' masses (``parameter_jacobian``)."""
        x = self._check_state(x, "x")
        u = self._zero_u[0] if u is None else self._check_input(u, "u")
        if self._contact is not None:
            A, B = self._contact_jacobians(x, u)
            return (A, B) if params is None else (A, B, parameter_jacobian(self, x, u, params))
        if params is not None:
            raise ValueError("params: derivatives with respect to parameters are the "
                             "contact integrators' (compliant)")
        if self.integrator_name == "euler":
            return self._euler_jacobians(x, u)
        nq, nv = self.nq, self.nv
        A = np.eye(2 * nv)
        B = np.zeros((2 * nv, nv))
        q, p = x[:nq].copy(), x[nq:].copy()
        for fraction in self.integrator.substeps:
            h = self.dt * fraction
            q_next, p_next = self._substep(q, p, u, h, self.model.friction)
            A_s, B_s = self._substep_jacobians(q, p, u, q_next, p_next, h)
            A = A_s @ A
            B = A_s @ B + B_s
            q, p = q_next, p_next
        return A, B

    def _contact_jacobians(self, x, u) -> tuple[np.ndarray, np.ndarray]:
        """The compliant step (true cone): A and B exact through the contact solve
        (contact_jacobians.effort_jacobian, velocity_jacobian, configuration_jacobian: the
        implicit function theorem on the solve's optimality conditions; implicit velocity
        terms) for contacts of spheres and points with the ground or a heightfield, of spheres
        with spheres, of spheres and points with boxes and of a box's corners on a static box;
        A's configuration columns by central differences of ``step`` for the other pairs of
        shapes (box against box otherwise, cylinders' and meshes' own pairs) or a joint limit
        being recovered, and all of A with explicit velocity terms (docs/ESTIMATION.md)."""
        if self.integrator_name != "compliant" or self.integrator.cone != "true":
            raise NotImplementedError(
                f"jacobians through contact: the compliant integrator with the true cone only "
                f"(here {self.integrator_name}, cone {getattr(self.integrator, 'cone', '-')}); "
                f"finite_difference_jacobians differentiates any step")
        if self.integrator.velocity_terms != "implicit":
            return self._state_differences(x, u, STATE_EPS), effort_jacobian(self, x, u)
        A, B, known = state_jacobians(self, x, u)
        if not known:  # (some pairs of boxes, a limit in recovery)
            nv = self.nv
            A[:, :nv] = self._state_differences(x, u, STATE_EPS, columns=range(nv))[:, :nv]
        return A, B

    def _state_differences(self, x, u, eps: float, columns=None) -> np.ndarray:
        """A (or its ``columns``) by central differences of ``step`` in the tangent space (2
        steps a column)."""
        x_next = self.step(x, u)
        A = np.empty((self.ndx, self.ndx))
        for k in range(self.ndx) if columns is None else columns:
            e = np.zeros(self.ndx)
            e[k] = eps
            plus = self.difference(x_next, self.step(self.integrate(x, e), u))
            minus = self.difference(x_next, self.step(self.integrate(x, -e), u))
            A[:, k] = (plus - minus) / (2.0 * eps)
        return A

    def _substep(self, q, p, u, h, friction) -> tuple[np.ndarray, np.ndarray]:
        """One DEL substep of length h (the integrator's own kernel)."""
        m, it = self.model, self.integrator
        q_next, p_next, v_next = np.empty(self.nq), np.empty(self.nv), np.empty(self.nv)
        code = variational_step_kernel(m.joint_int, m.joint_real, m.gravity, m.damping,
                                       friction, m.armature, it.Yb, h, _ONE_SUBSTEP, q, p, u,
                                       *self._unservoed, it.settings, *it.choices,
                                       it.tolerance, self._ws[0], self._vws[0], q_next, p_next,
                                       v_next, self._stats[0], self._buf[0, -1:])
        if code != OK:
            raise StepFailed(f"the step failed: {self.integrator.failure_message(code)}",
                             np.zeros(1, dtype=np.int64))
        return q_next, p_next

    def _partials(self, q, q_next, h) -> tuple[np.ndarray, ...]:
        m, nv = self.model, self.nv
        R0, R1, P0, P1 = (np.empty((nv, nv)) for _ in range(4))
        step_partials_kernel(m.joint_int, m.joint_real, m.gravity, m.damping, m.armature, h, q,
                             q_next, R0, R1, P0, P1)
        return R0, R1, P0, P1

    def _substep_jacobians(self, q, p, u, q_next, p_next, h) -> tuple[np.ndarray, np.ndarray]:
        """One DEL substep of length h: A = d(q', p')/d(q, p), B = d(q', p')/du. The DEL
        equation is solved under the effective effort u_eff = u + 2 F-/h (u without friction)."""
        nv = self.nv
        E_x, E_u = self._friction_before_derivative(q, p, u, h)  # du_eff = E_x dx + E_u du
        R0, R1, P0, P1 = self._partials(q, q_next, h)
        # dq' = -R1^-1 (R0 dq + dp + h/2 du_eff); dp' = P0 dq + P1 dq' + h/2 du
        rhs = np.hstack([R0, np.eye(nv), np.zeros((nv, nv))])
        rhs[:, :2 * nv] += 0.5 * h * E_x
        rhs[:, 2 * nv:] += 0.5 * h * E_u
        Z = -np.linalg.solve(R1, rhs)
        dq_dx, dq_du = Z[:, :2 * nv], Z[:, 2 * nv:]
        dp_dx = P1 @ dq_dx
        dp_dx[:, :nv] += P0
        dp_du = P1 @ dq_du + 0.5 * h * np.eye(nv)
        # second half of friction (friction_after): F+ = clamp(-p, +-h f/2) is constant while
        # the joint slips and takes all of its momentum while it sticks (p_k+1 = 0 exactly)
        stuck = (self.model.friction > 0.0) & (p_next == 0.0)
        dp_dx[stuck] = 0.0
        dp_du[stuck] = 0.0
        return np.vstack([dq_dx, dp_dx]), np.vstack([dq_du, dp_du])

    def _friction_before_derivative(self, q, p, u, h) -> tuple[np.ndarray, np.ndarray]:
        """d u_eff/d(dq, dp) and d u_eff/du for the first half of the friction impulse
        (variational.py friction_before): u_eff = u + 2 F-/h, F-_j = clamp(-M_jj(q) x*_j / h,
        +-h f_j / 2) with x* the frictionless step. Clamped (slipping): constant. Inside the
        bounds: dF-_j = -(dM_jj x*_j + M_jj dx*_j) / h, with dx* from the implicit function
        theorem on the frictionless DEL equation (friction acts on 1-dof joints)."""
        m, nv = self.model, self.nv
        E_x, E_u = np.zeros((nv, 2 * nv)), np.eye(nv)
        if not np.any(m.friction > 0.0):
            return E_x, E_u
        q_star, _ = self._substep(q, p, u, h, np.zeros(nv))
        x_star = np.empty(nv)
        difference_kernel(m.joint_int, q, q_star, x_star)
        diagonal, dM = np.empty(nv), np.empty((nv, nv))
        mass_diagonal_partials_kernel(m.joint_int, m.joint_real, m.armature, q, diagonal, dM)
        inside = (m.friction > 0.0) & (np.abs(diagonal * x_star / h) < 0.5 * h * m.friction)
        if not inside.any():
            return E_x, E_u
        R0, R1, _, _ = self._partials(q, q_star, h)
        # dq* = -R1^-1 (R0 dq + dp + h/2 du); dx* = dq* - dq on 1-dof joints
        dx_star = -np.linalg.solve(R1, np.hstack([R0, np.eye(nv), 0.5 * h * np.eye(nv)]))
        dx_star[:, :nv] -= np.eye(nv)
        dF = -diagonal[:, None] * dx_star / h
        dF[:, :nv] -= dM * x_star[:, None] / h
        E_x[inside] = 2.0 / h * dF[inside, :2 * nv]
        E_u[inside] += 2.0 / h * dF[inside, 2 * nv:]
        return E_x, E_u

    def _euler_jacobians(self, x, u) -> tuple[np.ndarray, np.ndarray]:
        """Semi-implicit Euler (euler.py): K a = u - D v - b(q, v), v' = v + h a,
        q' = q (+) h v', with K = M + A + h D (``velocity_terms="explicit"``) or
        K = M + A + h D + h B_v(q, v) (``"implicit"``; B_v = db/dv, b = rnea(q, v, 0)).
        Differentiating K a + b = u - D v with rnea_q, rnea_v the derivatives of
        rnea(q, v, a) = M a + b:

            K da = du - P_q dq - (P_v + D) dv,
            explicit: P_q = rnea_q(q, v, a),  P_v = rnea_v(q, v)
            implicit: P_q = rnea_q(q, v, a) + h d(B_v(q, v) a)/dq,  P_v = rnea_v(q, v + h a)

        b is quadratic in v, so B_v(q, w) is linear in w and the second derivatives reduce to
        first ones: d(B_v(q, v) y)/dv = B_v(q, y) (hence rnea_v at v + h a) and, by
        polarisation, B_v(q, v) y = (b(q, v + y) - b(q, v - y)) / 2, so
        d(B_v(q, v) y)/dq = (rnea_q(q, v + y, 0) - rnea_q(q, v - y, 0)) / 2 with y = h a.
        Exact (joint friction's clamp is not differentiated: linearise a model with friction by
        finite differences)."""
        m, nq, nv, h = self.model, self.nq, self.nv, self.dt
        q, v = x[:nq], x[nq:]
        zero = np.zeros(nv)
        K = crba(m, q) + h * np.diag(m.damping)
        if self.integrator.implicit:
            K += h * rnea_derivatives(m, q, v, zero)[1]
        a = np.linalg.solve(K, u - m.damping * v - rnea(m, q, v, zero))
        P_q, P_v = rnea_derivatives(m, q, v, a)
        if self.integrator.implicit:
            y = h * a
            plus_q, P_v = rnea_derivatives(m, q, v + y, zero)
            P_q = P_q + 0.5 * (plus_q - rnea_derivatives(m, q, v - y, zero)[0])
        # columns: d/dq, d/dv, d/du
        da = np.linalg.solve(K, np.hstack([-P_q, -P_v - np.diag(m.damping), np.eye(nv)]))
        dv_next = h * da
        dv_next[:, nv:2 * nv] += np.eye(nv)
        to_next, dexp_right = _integrate_jacobians(m, h * (v + h * a))
        dq_next = h * dexp_right @ dv_next
        dq_next[:, :nv] += to_next
        return (np.vstack([dq_next[:, :2 * nv], dv_next[:, :2 * nv]]),
                np.vstack([dq_next[:, 2 * nv:], dv_next[:, 2 * nv:]]))

    def finite_difference_jacobians(self, x, u=None, eps: float = 1e-5, eps_u: float = 1e-3
                                    ) -> tuple[np.ndarray, np.ndarray]:
        """(A, B) by central differences of ``step`` in the tangent space (2 (ndx + nu) steps),
        steps eps in the state and eps_u in u: the check of ``jacobians``, and the
        linearisation for the Euler integrator. Their accuracy is limited by the root finder's
        tolerance (its error divided by eps): check against a model with a tight tolerance."""
        x = self._check_state(x, "x")
        u = self._zero_u[0] if u is None else self._check_input(u, "u")
        x_next = self.step(x, u)
        A = self._state_differences(x, u, eps)
        B = np.empty((self.ndx, self.nu))
        for k in range(self.nu):
            e = np.zeros(self.nu)
            e[k] = eps_u
            plus = self.difference(x_next, self.step(x, u + e))
            minus = self.difference(x_next, self.step(x, u - e))
            B[:, k] = (plus - minus) / (2.0 * eps_u)
        return A, B

    # ---- guards at the door -----------------------------------------------------------------

    def _check_state(self, x, name: str) -> np.ndarray:
        x = as_vector(x, self.nx, name)
        if not x.flags.c_contiguous:  # (the contact integrators' compiled entries read it so)
            x = np.ascontiguousarray(x)
        self._check_rows(x.reshape(1, self.nx), name)
        return x

    def _check_configuration(self, q, name: str) -> np.ndarray:
        self._check_rows(q.reshape(1, self.nq), name)
        return q

    def _check_matrix(self, X, name: str) -> np.ndarray:
        X = _as_matrix(X, self.nx, name)
        self._check_rows(X, name)
        return X

    def _check_rows(self, X, name: str) -> None:
        row, code = first_bad_row(self.model.joint_int, X)
        if code == OK:
            return
        where = f" (row {row})" if X.shape[0] > 1 or name.isupper() else ""
        if code == BAD_QUATERNION:
            raise ValueError(f"{name}{where}: a free-flyer quaternion (qx, qy, qz, qw) is not of "
                             f"unit norm (tolerance {QUATERNION_TOLERANCE})")
        raise ValueError(f"{name}{where} contains NaN or infinity")

    def _check_input(self, u, name: str) -> np.ndarray:
        u = as_vector(u, self.nv, name)
        if not u.flags.c_contiguous:
            u = np.ascontiguousarray(u)
        if not all_finite_kernel(u):
            raise ValueError(f"{name} contains NaN or infinity")
        return u


def _integrate_jacobians(model, w) -> tuple[np.ndarray, np.ndarray]:
    """The derivatives of q' = q (+) w in the tangent spaces: d q' = T dq + D dw. Identity on
    1-dof joints; a free-flyer moves by M exp(w), so M exp(d) exp(w) = M exp(w) exp(Ad(exp(-w)) d)
    and exp(w + dw) = exp(w) exp(Ad(exp(-w)) dexp(w) dw) (dexp right-trivialised, spatial.py)."""
    T, D = np.eye(model.nv), np.eye(model.nv)
    for i in range(model.njoints):
        if model.joint_kinds[i] == "free_flyer":
            iv = model.idx_v[i]
            block = slice(iv, iv + 6)
            back = Ad(exp_se3(-w[block]))
            T[block, block] = back
            D[block, block] = back @ dexp(w[block].copy())
    return T, D


def _as_matrix(X, ncols: int, name: str) -> np.ndarray:
    """X as a C-ordered float64 (N, ncols) array with N >= 1, or ValueError naming it."""
    if not (isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags.c_contiguous):
        try:
            X = np.ascontiguousarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be an (N, {ncols}) array of numbers: {exc}") from None
    if X.ndim != 2 or X.shape[1] != ncols or X.shape[0] < 1:
        raise ValueError(f"{name} must have shape (N, {ncols}) with N >= 1, got {X.shape}")
    return X
