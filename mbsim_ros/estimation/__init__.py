"""State estimation: the simulator as a process model (docs/ESTIMATION.md)."""
from .process import ProcessModel, StepFailed

__all__ = ["ProcessModel", "StepFailed"]
