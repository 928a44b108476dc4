"""numba's front end as mbsim_ros._jit changes it (docs/SPEED.md, "Cold compile", rounds 9
and 10): a step's IR inlined without deep copies computes what the step computes, at every
call site and through nested steps; the compile flags hash, read and compare as numba's own
TargetConfig does; a call's type, resolved once, is the same Signature when asked again and a
call that does not type fails every time; ABI sizes remembered are LLVM's; lowering's probe for
an implementation that does not exist refreshes the context once, not at every probe; round 11:
an array (a range, an iterator) read from its value gives what numba's in memory gives, through
every kind of use, and leaves no copy of its structure in memory; C-ordered elements addressed
without identities and deletions lowered to nothing without NRT compute the same with fewer
instructions."""
from __future__ import annotations

import copy
import operator

import numpy as np
import pytest
from llvmlite import ir
from numba import njit, types
from numba.core import inline_closurecall
from numba.core.errors import TypingError
from numba.core.imputils import Registry
from numba.core.registry import cpu_target
from numba.core.typing import signature
from numba.core.compiler import Flags
from numba.core.inline_closurecall import InlineWorker

from mbsim_ros import _jit


def property_values(flags) -> dict:
    """numba's TargetConfig.values(): every option read through its property."""
    return {name: getattr(flags, name) for name in flags.options}


def test_the_changes_are_in_place_with_this_numba():
    assert _jit.FLAGS_READ_DIRECTLY and _jit.FRESH_IR_INLINED
    assert _jit.CALL_TYPES_REMEMBERED and _jit.ABI_SIZES_REMEMBERED and _jit.PROBES_REMEMBERED
    assert _jit.STRUCTURES_READ_FROM_VALUES and _jit.C_ELEMENTS_ADDRESSED_DIRECTLY
    assert _jit.DELETIONS_WITHOUT_NRT
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


def test_a_call_type_is_resolved_once_and_a_failing_one_fails_every_time():
    context = cpu_target.typing_context
    context.refresh()
    multiply = context.resolve_value_type(operator.mul)
    first = multiply.get_call_type(context, (types.float64, types.int64), {})
    assert first.return_type == types.float64 and first.args == (types.float64, types.float64)
    assert multiply.get_call_type(context, (types.float64, types.int64), {}) is first
    # another question, another answer (numba's rules: int * int stays an integer)
    assert multiply.get_call_type(context, (types.int64, types.int64), {}).return_type == \
        types.int64
    index = context.resolve_value_type(operator.getitem)
    matrix = types.Array(types.float64, 2, "C")
    entry = index.get_call_type(context, (matrix, types.UniTuple(types.int64, 2)), {})
    row = index.get_call_type(context, (matrix, types.int64), {})
    assert entry.return_type == types.float64 and row.return_type == types.Array(
        types.float64, 1, "C")
    for _ in range(2):  # not remembered: numba's error each time
        with pytest.raises(TypingError):
            multiply.get_call_type(context, (types.unicode_type, matrix), {})


def test_remembered_abi_sizes_are_llvms():
    context = cpu_target.target_context
    double, int32 = ir.DoubleType(), ir.IntType(32)
    for ty, size in ((ir.IntType(64), 8), (ir.LiteralStructType([double, int32]), 16),
                     (ir.ArrayType(double, 3), 24), (ir.LiteralStructType([int32] * 3), 12)):
        assert context.get_abi_sizeof(ty) == size == context.get_abi_sizeof(ty)
        assert ty.get_abi_size(context.target_data) == size  # llvmlite's own measure


def test_a_failed_probe_refreshes_the_context_once_until_a_registry_is_added(monkeypatch):
    context = cpu_target.target_context
    refreshes = []
    refresh = context.refresh
    monkeypatch.setattr(context, "refresh", lambda: refreshes.append(1) or refresh())
    vector = types.Array(types.float64, 1, "C")
    probe = signature(types.float64, vector, types.IntegerLiteral(7))  # a[7]: no static impl
    with pytest.raises(NotImplementedError, match="static_getitem"):
        context.get_function("static_getitem", probe)  # refreshes (the first in a process
    refreshes.clear()                                   # sets up the runtime: many)
    for _ in range(3):
        with pytest.raises(NotImplementedError, match="static_getitem"):
            context.get_function("static_getitem", probe)
    assert refreshes == []
    found = context.get_function(operator.getitem,
                                 signature(types.float64, vector, types.intp))
    assert callable(found)  # what lowering falls back on is still found
    context.install_registry(Registry("empty"))  # the context installs another registry
    with pytest.raises(NotImplementedError):
        context.get_function("static_getitem", probe)
    assert refreshes  # asked again, with a refresh


def every_use_of_arrays(a, b, m, k):
    """Reads, writes, shape and strides, slices, views, iteration, a reshape, a pointer taken
    (ctypes): what our kernels do, without allocating (compiled without NRT, the proxies of a,
    b and m are made from values)."""
    total = 0.0
    for i in range(a.shape[0]):
        b[i] = 2.0 * a[i] + a[-1 - i]
        total += a[i] * b[i]
    b[0] += m.strides[0] / 8.0 + m.shape[1]
    s = a[1:k]
    s[0] = 7.0
    t = m.T
    for row in m:
        total += row[0] + row[-1]
    r = a.reshape((2, a.shape[0] // 2))
    r[1, 0] = -1.0
    total += a.ctypes.data % 8 + t[0, 1] + len(a)
    return total


def allocating_uses(a, m):
    """BLAS through np.dot, LAPACK through solve, copies: compiled with NRT, where numba's own
    proxies are used."""
    c = a.copy()
    c[2] = 100.0
    return np.dot(m, m[0])[1] + np.linalg.solve(m, a[:3])[2] + c.sum()


def lowered_ir(function, *args) -> str:
    """The LLVM IR numba's lowering gave ``function`` (before any optimisation): its own
    module, not those of the overloads it compiled on the way."""
    from numba.core.codegen import CPUCodeLibrary
    texts, original = [], CPUCodeLibrary.add_ir_module

    def add_ir_module(library, module):
        texts.append(str(module))
        return original(library, module)
    CPUCodeLibrary.add_ir_module = add_ir_module
    try:
        function(*args)
    finally:
        CPUCodeLibrary.add_ir_module = original
    name = function.py_func.__qualname__
    return "\n".join(text for text in texts if text.startswith(f'; ModuleID = "{name}$'))


def test_arrays_read_from_their_values_compute_what_numba_computes():
    """Every use against the same function in Python: to the last bit (the change touches how
    an array's fields are read, never arithmetic); the allocating uses to rounding, as numba's
    BLAS and LAPACK (scipy's) are not numpy's."""
    a, m = np.linspace(0.5, 4.0, 6), np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2],
                                               [0.5, 0.2, 2.0]])
    b1, b2, a1, a2 = np.zeros(6), np.zeros(6), a.copy(), a.copy()
    expected = every_use_of_arrays(a1, b1, m.copy(), 4)
    assert njit(_nrt=False)(every_use_of_arrays)(a2, b2, m.copy(), 4) == expected
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(a1, a2)
    assert njit(allocating_uses)(a, m) == pytest.approx(allocating_uses(a, m), rel=1e-13,
                                                        abs=0.0)


def test_reads_and_writes_of_an_array_leave_no_copy_of_it_in_memory(monkeypatch):
    """A loop that reads x.shape, x[i] and y[i] and writes y[i]: numba's lowering stores the
    array's structure into a stack slot of its own for each of the four; read from the value,
    none is made (the slots left are the function's variables and its Python wrapper's). The
    structure of a C-contiguous float64 vector: two pointers, two integers, the data pointer,
    shape and strides."""
    from numba.np import arrayobj

    def axpy(x, y):
        for i in range(x.shape[0]):
            y[i] += 2.0 * x[i]
    slot = "alloca {i8*, i8*, i64, i64, double*, [1 x i64], [1 x i64]}"
    x, y = np.arange(4.0), np.ones(4)
    from_values = lowered_ir(njit(_nrt=False)(axpy), x, y).count(slot)
    with_nrt = lowered_ir(njit(axpy), x, y).count(slot)  # a user's function: numba's own
    monkeypatch.setattr(arrayobj, "make_array", arrayobj.make_array.numbas)
    in_memory = lowered_ir(njit(_nrt=False)(axpy), x, y).count(slot)
    assert in_memory - from_values == 4 and with_nrt >= in_memory
    np.testing.assert_array_equal(y, 1.0 + 6.0 * x)


def elements_of_a_block(t, i, j):
    """Constant, variable and negative indices (constant and variable) of a 3-D C-ordered
    array, read and written, in loops over ranges with a start, a stop and a step."""
    total = t[0, 0, 0] + t[1, 2, 3] + t[-1, -2, -3] + t[i, j, 1] + t[-i, j - 4, -1]
    for a in range(t.shape[0]):
        for b in range(1, t.shape[1], 2):
            for c in range(t.shape[2] - 1, -1, -1):
                t[a, b, c] += a * 100.0 + b * 10.0 + c + total
    t[i, -j, 0] = total
    return total + t[1, 1, 1] + t[-1].sum() + t[i].sum()


def test_c_ordered_elements_are_addressed_as_numba_addresses_them(monkeypatch):
    """The same values to the last bit with numba's own addressing (the change only drops
    identities: the same integer offsets), and fewer instructions lowered."""
    from numba.cpython import slicing
    from numba.core import cgutils
    from numba.np import arrayobj
    block = np.arange(60.0).reshape(3, 4, 5) / 7.0
    ours_t = block.copy()
    ours_ir = lowered_ir(njit(elements_of_a_block), block.copy(), 2, 3)
    ours = njit(elements_of_a_block)(ours_t, 2, 3)
    monkeypatch.setattr(slicing, "fix_index", slicing.fix_index.numbas)
    monkeypatch.setattr(cgutils, "get_item_pointer", cgutils.get_item_pointer.numbas)
    monkeypatch.setattr(arrayobj, "basic_indexing", arrayobj.basic_indexing.numbas)
    numbas_t = block.copy()
    numbas_ir = lowered_ir(njit(elements_of_a_block), block.copy(), 2, 3)
    numbas = njit(elements_of_a_block)(numbas_t, 2, 3)
    python_t = block.copy()
    assert ours == numbas == elements_of_a_block(python_t, 2, 3)
    np.testing.assert_array_equal(ours_t, numbas_t)
    np.testing.assert_array_equal(ours_t, python_t)
    assert len(ours_ir.splitlines()) < len(numbas_ir.splitlines())


def test_deletions_without_nrt_lower_to_nothing(monkeypatch):
    """A function compiled without NRT: a variable that lives across blocks is not loaded and
    zeroed where it dies (numba's lowering does both), and the function computes the same."""
    from numba.core import lowering

    def running_maximum(x):
        best = x[0]
        for i in range(x.shape[0]):
            value = x[i] * 2.0
            if value > best:
                best = value
        return best
    x = np.array([0.5, 3.0, -1.0, 2.5])
    options = {"_nrt": False, "error_model": "numpy"}
    ours_ir = lowered_ir(njit(**options)(running_maximum), x)
    monkeypatch.setattr(lowering.Lower, "delvar", lowering.Lower.delvar.numbas)
    numbas_ir = lowered_ir(njit(**options)(running_maximum), x)
    assert njit(**options)(running_maximum)(x) == running_maximum(x) == 6.0
    for access in ("= load ", "  store "):  # value and best die in the loop, best at the end
        assert ours_ir.count(access) <= numbas_ir.count(access) - 2
