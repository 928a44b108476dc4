"""The two ways we compile: ``kernel`` for entry points and ``step`` for the small passes they
call (inlined into the caller at numba-IR level, so views and scalars stay in registers and no
call or reference-count traffic remains per body). ``error_model="numpy"``: a division by zero
gives inf/nan (caught at the door or by the caller) instead of a Python exception check on every
division in the hot loop."""
from numba import njit

kernel = njit(cache=True, error_model="numpy")
step = njit(cache=True, error_model="numpy", inline="always")
