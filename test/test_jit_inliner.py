"""numba's inliner and compile flags as mbsim_ros._jit changes them (docs/SPEED.md, "Cold
compile, round 9"): a step's IR inlined without deep copies computes what the step computes,
at every call site and through nested steps, and the compile flags hash, read and compare as
numba's own TargetConfig does."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from numba import njit
from numba.core import inline_closurecall
from numba.core.compiler import Flags
from numba.core.inline_closurecall import InlineWorker

from mbsim_ros import _jit


def property_values(flags) -> dict:
    """numba's TargetConfig.values(): every option read through its property."""
    return {name: getattr(flags, name) for name in flags.options}


def test_the_changes_are_in_place_with_this_numba():
    assert _jit.FLAGS_READ_DIRECTLY and _jit.FRESH_IR_INLINED
    assert InlineWorker.inline_function is _jit._inline_function


def test_flags_read_hash_and_compare_as_numba_defines_them():
    unset, explicit_default, changed = Flags(), Flags(), Flags()
    explicit_default.nrt = Flags.options["nrt"].default
    changed.nrt = not Flags.options["nrt"].default
    changed.error_model = "numpy"
    for flags in (unset, explicit_default, changed):
        assert flags.values() == property_values(flags)
        assert hash(flags) == hash(tuple(sorted(property_values(flags))))
    assert unset == explicit_default and explicit_default == unset
    assert unset != changed and changed != explicit_default
    assert changed == changed.copy()
    assert len({unset: 1, explicit_default: 2, changed: 3}) == 2


@njit(inline="always")
def axpy(a, x, y, out):
    for k in range(x.shape[0]):
        out[k] = a * x[k] + y[k]


@njit(inline="always")
def two_axpys(a, x, y, out, tmp):
    axpy(a, x, y, tmp)       # a nested step
    axpy(a, tmp, y, out)     # the same step at a second site


@njit
def inlined_three_times(a, x, y, out, tmp):
    two_axpys(a, x, y, out, tmp)
    s = 0.0
    for k in range(out.shape[0]):
        s += out[k]
    axpy(s, x, out, tmp)
    return s


def test_a_step_inlined_at_several_sites_computes_what_it_computes():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    out, tmp = np.empty(5), np.empty(5)
    s = inlined_three_times(1.5, x, y, out, tmp)
    inner = 1.5 * x + y
    expected = 1.5 * inner + y
    assert np.array_equal(out, expected)
    assert s == pytest.approx(expected.sum(), rel=1e-15)
    assert np.array_equal(tmp, s * x + out)
    assert inline_closurecall.copy is copy  # numba's copy module back after the inlining
    # inlined, not called: no call to the steps' dispatchers in the compiled function
    ir_text = next(iter(inlined_three_times.inspect_llvm().values()))
    assert "axpy" not in ir_text and "two_axpys" not in ir_text
