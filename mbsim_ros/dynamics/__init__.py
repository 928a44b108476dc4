"""Rigid-body dynamics over a Model, as compiled kernels: rnea, crba, aba, minv, energy,
integrate / difference, and the discrete (variational) residual del_residual / del_jacobian."""
from .aba import aba
from .configuration import difference, integrate
from .crba import crba
from .drnea import del_residual
from .drnea_derivative import del_jacobian
from .energy import energy
from .minv import minv
from .rnea import rnea

__all__ = ["aba", "crba", "del_jacobian", "del_residual", "difference", "energy", "integrate",
           "minv", "rnea"]
