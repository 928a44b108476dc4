"""The codes every kernel and every integrator share: one table, so a number means one thing.

Status codes are what a compiled kernel returns (``OK`` or the reason it stopped); ``MESSAGES``
says each in words for a StepInfo or an exception. Row kinds label the constraint rows the
contact integrators assemble; variable kinds label the reduced cone problem's unknowns. This
module imports nothing: every layer may read it.
"""
from __future__ import annotations

# Kernel status codes (unique across the package).
OK = 0
BAD_ARG0, BAD_ARG1, BAD_ARG2 = 1, 2, 3  # the kernel's first, second, third vector argument
BAD_QUATERNION = 4  # a free-flyer quaternion in q is not of unit norm
SINGULAR = 5  # a matrix the kernel factors (joint-space inertia, step matrix) is singular
DIVERGED = 6  # the new state is not finite
NOT_CONVERGED = 7  # an iterative solver reached its iteration cap
NOT_POSITIVE = 8  # the cone solver's matrix lost its positive definiteness
UNSETTLED = 9  # an LCP solver's index sets did not settle
CYCLING = 10  # pivoting met an index set it had left before
UNFINISHED = 11  # a compiled step handed the step back to Python (a buffer to grow, a fallback)
OUT_OF_BOUNDS = 12  # the new state left its physical bounds (integrators/bounds.py): refused

MESSAGES = {
    OK: "",
    BAD_ARG0: "the first argument contains NaN or infinity",
    BAD_ARG1: "the second argument contains NaN or infinity",
    BAD_ARG2: "the third argument contains NaN or infinity",
    BAD_QUATERNION: "a free-flyer quaternion is not of unit norm",
    SINGULAR: "singular matrix",
    DIVERGED: "diverged: the new state is not finite",
    NOT_CONVERGED: "not converged",
    NOT_POSITIVE: "not positive definite",
    UNSETTLED: "the index sets did not settle",
    CYCLING: "pivoting cycled",
    UNFINISHED: "the compiled step handed the step back",
    OUT_OF_BOUNDS: "diverged: the new state left its physical bounds",
}

# Constraint row kinds (compliant and rigid steps). FIXED: a row held at zero.
BILATERAL, UNILATERAL, NORMAL, TANGENT, FIXED, FRICTION = 0, 1, 2, 3, 4, 5

# The reduced cone problem's variable kinds (cone solver).
FREE, NONNEG, CONE, PART, PYRAMID, BOX = 0, 1, 2, 3, 4, 5


def message(code: int) -> str:
    """The words for a status code (the number itself for one this table does not know)."""
    return MESSAGES.get(code, f"kernel code {code}")
