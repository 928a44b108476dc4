"""Workspaces declared once (mbsim_ros/layout.py): every declared layout's views tile its buffer
exactly (consecutive, disjoint, the declared size), and the compiled carve step hands each name
exactly its slice, so no two names can alias one piece of a buffer."""
import gc

import numpy as np
import pytest

from mbsim_ros.dynamics.workspace import DYNAMICS
from mbsim_ros.estimation.batch import EULER_CHUNK, VARIATIONAL_CHUNK
from mbsim_ros.integrators.variational import VARIATIONAL
from mbsim_ros.layout import Layout

LAYOUTS = [DYNAMICS, VARIATIONAL, VARIATIONAL_CHUNK, EULER_CHUNK]
SIZES = [(1, 1, 1), (7, 7, 7), (13, 18, 19)]  # (nj, nv, nq): a pendulum, an arm, a free robot


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
@pytest.mark.parametrize("nj, nv, nq", SIZES)
def test_views_tile_the_buffer(layout, nj, nv, nq):
    spans = layout.spans(nj, nv, nq)
    ends = [0] + [end for _, end in spans.values()]
    assert [start for start, _ in spans.values()] == ends[:-1], "consecutive, no gaps"
    assert all(end > start for start, end in spans.values()), "no empty view"
    assert ends[-1] == layout.size(nj, nv, nq)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_the_compiled_carve_gives_each_name_its_slice(layout):
    nj, nv, nq = 5, 6, 7
    sizes = {"nj": nj, "nv": nv, "nq": nq}
    ws = layout.allocate(nj, nv, nq)
    views = layout.carve(ws, *(sizes[d] for d in layout.dimensions))
    assert type(views).__name__ == layout.name and views._fields == tuple(
        name for name, _ in layout.fields)
    for k, (name, shape) in enumerate(layout.fields):
        view = getattr(views, name)
        assert view.shape == tuple(sizes.get(e, e) for e in shape)
        view[...] = k + 1
    for k, (start, end) in enumerate(layout.spans(nj, nv, nq).values()):
        assert np.all(ws[start:end] == k + 1)


def test_a_bad_declaration_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        Layout("Twice", [("a", (3,)), ("a", (4,))], __name__)
    with pytest.raises(ValueError, match="bad extent"):
        Layout("Bad", [("a", ("n_links", 3))], __name__)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_python_views_are_the_kernels_views_and_keep_the_buffer(layout):
    """Layout.views (for Python code) names the same slices as the compiled carve, and each
    view holds the buffer: a ConstraintKinematics made for one call and dropped left the
    compiled carve's views pointing into freed memory (the standing scenes' start heights)."""
    nj, nv, nq = 4, 5, 6
    sizes = {"nj": nj, "nv": nv, "nq": nq}
    ws = np.arange(float(layout.size(nj, nv, nq)))
    compiled = layout.carve(ws, *(sizes[d] for d in layout.dimensions))
    views = layout.views(ws, nj, nv, nq)
    for name in views._fields:
        assert np.array_equal(getattr(views, name), getattr(compiled, name))
        assert np.shares_memory(getattr(views, name), ws)
    del ws, compiled
    gc.collect()
    assert views[0].ravel()[0] == 0.0 and views[-1].ravel()[-1] == layout.size(nj, nv, nq) - 1


def test_leading_entries_viewed_as_an_array():
    """layout.leading(flat, shape) in a kernel: the same array as flat[:prod].reshape(shape)
    (float64 and int64, 1 to 3 extents, writes land in flat), a ValueError for a buffer that
    is too short or a negative extent."""
    from numba import njit

    from mbsim_ros.layout import leading

    @njit
    def views(flat, ints, m, n):
        a = leading(flat, (m, n))
        a[1, 2] = -1.0
        return a.copy(), leading(flat, (2, m, n // 2)).copy(), leading(ints, (m * n,)).copy()

    flat, ints = np.arange(40.0), np.arange(40)
    two, three, one = views(flat, ints, 3, 4)
    expected = np.arange(40.0)
    expected[6] = -1.0
    np.testing.assert_array_equal(flat, expected)
    np.testing.assert_array_equal(two, expected[:12].reshape(3, 4))
    np.testing.assert_array_equal(three, expected[:12].reshape(2, 3, 2))
    np.testing.assert_array_equal(one, np.arange(12))
    with pytest.raises(ValueError, match="shorter"):
        views(flat, ints, 7, 6)
    with pytest.raises(ValueError, match="negative"):
        views(flat, ints, -3, 4)
