"""How we compile. ``kernel``: entry points called from Python. ``step``: small passes
(a few dozen lines, per body) that numba inlines into the caller at IR level, so views and
scalars stay in registers with no call or reference-count traffic per body. ``routine``: larger
compiled functions called from kernels without IR inlining (inlining them multiplies the
caller's size and numba's compile time grows much faster than linearly with it).
``error_model="numpy"``: a division by zero gives inf/nan (caught at the door or by the caller)
instead of a Python exception check on every division in the hot loop."""
from numba import njit

kernel = njit(cache=True, error_model="numpy")
step = njit(cache=True, error_model="numpy", inline="always")
routine = njit(cache=True, error_model="numpy")
