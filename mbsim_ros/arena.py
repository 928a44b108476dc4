"""A simulation's arrays in one float64 and one int64 buffer (docs/SPEED.md, "The arena's
buffers").

    plan = ArenaPlan("data")
    plan.add("state.q", (nq,))                    # declared first: name, shape, dtype
    plan.add("servo.iq", (nv,), "int64")
    arena = plan.allocate()                       # the two buffers, allocated once
    q = arena["state.q"]                          # a C-contiguous view, for the array's owner

Each array is a view of its buffer starting on a 64-byte boundary (a cache line), zeroed;
``spans()`` gives every array's place, so a test can check that no two overlap, and
``holds(array)`` whether an array lies inside this arena's buffers. The owners (State, Data,
the integrator and its servos, the physical bounds; the Model in a pair of its own) keep an
attribute pointing at their view, as they kept their own arrays before: the compiled steps'
tables (layout.ArrayTable) hold the views' addresses, which are now the arena's.
"""
from __future__ import annotations

import math

import numpy as np

try:  # numpy >= 2
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # pragma: no cover
    byte_bounds = np.byte_bounds

ALIGNMENT = 64  # bytes: each array starts on a cache line
DTYPES = ("float64", "int64")


def _aligned(n: int) -> int:
    """n items of 8 bytes rounded up to a whole number of cache lines."""
    per_line = ALIGNMENT // 8
    return -(-n // per_line) * per_line


class ArenaPlan:
    """The arrays of one arena, declared before it is allocated: ``add(name, shape, dtype)``
    per array (names unique), then ``allocate()`` once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: dict[str, tuple[tuple[int, ...], str]] = {}
        self.values: dict[str, np.ndarray] = {}  # add_array's

    def add(self, name: str, shape: tuple, dtype: str = "float64") -> None:
        if name in self.entries:
            raise ValueError(f"arena {self.name}: {name} is declared twice")
        if dtype not in DTYPES:
            raise ValueError(f"arena {self.name}: {name}: dtype {dtype!r} (one of {DTYPES})")
        shape = tuple(int(e) for e in shape)
        if any(e < 0 for e in shape):
            raise ValueError(f"arena {self.name}: {name}: a negative extent in {shape}")
        self.entries[name] = (shape, dtype)

    def add_array(self, name: str, array: np.ndarray) -> None:
        """An array made before the arena (computed at construction): declared with its shape
        and dtype, its values copied in when the arena is allocated, and its view read-only
        when it was (a compiled function is specialized on that)."""
        self.add(name, array.shape, array.dtype.name)
        self.values[name] = array

    def allocate(self) -> "Arena":
        return Arena(self)


class Arena:
    """The two buffers of an ArenaPlan and a view of them per declared array (module
    docstring). ``floats``, ``ints``: the buffers; ``arena[name]``: the view."""

    def __init__(self, plan: ArenaPlan) -> None:
        self.name = plan.name
        self._spans: dict[str, tuple[str, int, int]] = {}
        ends = {dtype: 0 for dtype in DTYPES}
        for name, (shape, dtype) in plan.entries.items():
            start = ends[dtype]
            size = math.prod(shape)
            self._spans[name] = (dtype, start, start + size)
            ends[dtype] = start + _aligned(size)
        self.floats = _buffer(ends["float64"], np.float64)
        self.ints = _buffer(ends["int64"], np.int64)
        buffers = {"float64": self.floats, "int64": self.ints}
        self._views = {name: buffers[dtype][start:end].reshape(plan.entries[name][0])
                       for name, (dtype, start, end) in self._spans.items()}
        for name, values in plan.values.items():
            self._views[name][...] = values
            if not values.flags.writeable:
                self._views[name].setflags(write=False)

    def __getitem__(self, name: str) -> np.ndarray:
        return self._views[name]

    def names(self) -> list[str]:
        return list(self._views)

    def spans(self) -> dict[str, tuple[str, int, int]]:
        """name -> (dtype, start, end): each array's items in its buffer (for tests and
        tools)."""
        return dict(self._spans)

    def holds(self, array: np.ndarray) -> bool:
        """Whether all of ``array``'s memory lies inside one of this arena's buffers."""
        start, end = byte_bounds(array)
        for buffer in (self.floats, self.ints):
            low, high = byte_bounds(buffer)
            if low <= start and end <= high:
                return True
        return False

    def read_only_except(self, *writable: str) -> None:
        """Every view read-only but the ``writable`` ones (the Model's pair: what users tune,
        gravity and armature, is written through its own view)."""
        for name, view in self._views.items():
            if name not in writable:
                view.setflags(write=False)


def _buffer(n: int, dtype) -> np.ndarray:
    """n zeros of dtype starting on an ALIGNMENT boundary."""
    per_line = ALIGNMENT // 8
    raw = np.zeros(n + per_line, dtype=dtype)
    shift = (-raw.ctypes.data % ALIGNMENT) // 8
    return raw[shift:shift + n]
