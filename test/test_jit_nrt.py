"""Kernels and routines compiled without numba's reference-counted memory (mbsim_ros._jit: NRT
off, a tenth less cold compile of the variational tree, docs/SPEED.md "Cold compile:
specializations"): what that compiles, and the guard against its one silent failure, an array
returned to Python (boxed as its parent object without NRT: a view would come back whole)."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba import types as numba_types


def ours(function):
    """The function filed as one of the package's (the guard looks at ours only)."""
    function.__module__ = "mbsim_ros.dynamics.probe"
    return function


def halves(x):
    return x[:1], x[1:]


def test_an_array_returned_without_nrt_is_refused():
    """Compiled as `kernel` compiles (NRT off; without the cache: a test's function has no
    file in the package), views returned to Python in a tuple are refused at the compile,
    naming the cure (numba refuses a lone array itself, not one in a tuple); as `allocating`
    compiles (NRT on), the same function returns the views."""
    refused = njit(error_model="numpy", _nrt=False)(ours(halves))
    with pytest.raises(TypeError, match="compiled without NRT: declare it `allocating`"):
        refused(np.arange(3.0))
    allowed = njit(error_model="numpy", _nrt=True)(ours(halves))
    x = np.arange(3.0)
    head, rest = allowed(x)
    assert head.tolist() == [0.0] and rest.tolist() == [1.0, 2.0]
    rest[0] = 9.0
    assert x[1] == 9.0  # a view of x, not a copy


def test_the_decorators_settings():
    """kernel and routine compile without NRT (the fused steps, their routines, the variational
    step's fallback Newton solve, whose LAPACK solve writes into the workspace), allocating
    with it (functions that return new arrays to Python)."""
    from mbsim_ros.dynamics.drnea import del_residual_kernel
    from mbsim_ros.integrators.euler import euler_advance, implicit_velocity
    from mbsim_ros.integrators.variational import newton_solve, variational_advance

    for function in (euler_advance, implicit_velocity, variational_advance, newton_solve):
        assert function.targetoptions["_nrt"] is False, function
    assert del_residual_kernel.targetoptions["_nrt"] is True


def test_a_users_jitclass_compiles_beside_our_compile_listeners():
    """numba makes a jitclass's constructor itself, with no module: the compile notice and the
    NRT guard, which listen to every compile in the process, let it be (they raised on it)."""
    from numba.experimental import jitclass

    @jitclass([("x", numba_types.float64)])
    class Counter:
        def __init__(self, x):
            self.x = x

        def bump(self):
            self.x += 1.0
            return self.x

    counter = Counter(1.5)
    assert counter.bump() == 2.5
