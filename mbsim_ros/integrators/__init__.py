"""Integrators by name: importing this package registers every one of them."""
from . import euler  # noqa: F401  (registers "euler")
from .base import INTEGRATORS, Integrator, StepInfo, make_integrator, register

__all__ = ["INTEGRATORS", "Integrator", "StepInfo", "make_integrator", "register"]
