"""Small array helpers every layer may use (this module imports only numpy)."""
from __future__ import annotations

import numpy as np


def copy_into(target: dict, saved: dict, owner: str) -> None:
    """Write saved arrays back into an object's live arrays in place (same shapes), or raise
    ValueError naming the owner and the entry that does not fit."""
    for name, value in saved.items():
        live = target.get(name)
        if isinstance(live, np.ndarray) and isinstance(value, np.ndarray):
            if live.shape != value.shape:
                raise ValueError(f"set_state: {owner}.{name} has shape {value.shape}, this "
                                 f"simulation's has {live.shape} (another model or options?)")
            np.copyto(live, value)
        else:
            raise ValueError(f"set_state: {owner} has no array '{name}'")


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of array (its data stays writable through array)."""
    view = array.view()
    view.setflags(write=False)
    return view
