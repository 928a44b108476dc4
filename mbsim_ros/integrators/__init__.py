"""Integrators by name: importing this package registers every one of them."""
from . import compliant, euler, rigid, variational  # noqa: F401  (register each by name)
from .base import INTEGRATORS, Integrator, StepInfo, make_integrator, register

__all__ = ["INTEGRATORS", "Integrator", "StepInfo", "make_integrator", "register"]
