"""How we compile. ``kernel``: entry points called from Python. ``step``: small passes
(a few dozen lines, per body) that numba inlines into the caller at IR level, so views and
scalars stay in registers with no call or reference-count traffic per body. ``routine``: larger
compiled functions called from kernels without IR inlining (inlining them multiplies the
caller's size and numba's compile time grows much faster than linearly with it).
``parallel_kernel``: entry points whose outer loop is a ``prange`` (batches of independent
problems, e.g. the particles of mbsim_ros.estimation).
``error_model="numpy"``: a division by zero gives inf/nan (caught at the door or by the caller)
instead of a Python exception check on every division in the hot loop.

The compiled-code cache lives in ``$XDG_CACHE_HOME/mbsim_ros/numba/<digest of our sources>``
(``NUMBA_CACHE_DIR`` overrides it). numba invalidates a cached function only when its own file
changes, not when a function it calls or inlines from another file does; keying the directory
on the sources that hold compiled code (those that import numba or this module) makes any edit to them
start a fresh, correct cache, while edits to pure-Python layers (node, CLI) keep it.
"""
import hashlib
import os
from pathlib import Path

import numba
from numba import njit


def _source_digest() -> str:
    root = Path(__file__).resolve().parent
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        source = path.read_bytes()
        if b"_jit import" not in source and b"numba" not in source:
            continue
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(source)
    return digest.hexdigest()[:16]


if not os.environ.get("NUMBA_CACHE_DIR"):
    _base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    numba.config.CACHE_DIR = str(_base / "mbsim_ros" / "numba" / _source_digest())

kernel = njit(cache=True, error_model="numpy")
step = njit(cache=True, error_model="numpy", inline="always")
routine = njit(cache=True, error_model="numpy")
parallel_kernel = njit(cache=True, error_model="numpy", parallel=True)
