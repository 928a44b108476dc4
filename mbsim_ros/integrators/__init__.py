"""Integrators by name: importing this package registers every one of them."""
from . import euler, variational  # noqa: F401  (register "euler", "variational")
from .base import INTEGRATORS, Integrator, StepInfo, make_integrator, register

__all__ = ["INTEGRATORS", "Integrator", "StepInfo", "make_integrator", "register"]
