"""Rigid-body dynamics over a Model, as compiled kernels: rnea, crba, aba, energy, integrate."""
from .aba import aba
from .configuration import integrate
from .crba import crba
from .energy import energy
from .rnea import rnea

__all__ = ["aba", "crba", "energy", "integrate", "rnea"]
