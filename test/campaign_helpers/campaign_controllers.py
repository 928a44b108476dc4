"""Controllers that test/test_campaign.py names as module:function (imported by Ray workers
from this folder, which the tests put on PYTHONPATH)."""
import os
import signal
from pathlib import Path


def killer(sim, options):
    """A factory: the first run to reach it (no marker file yet) kills its own worker process
    mid-run, as a crash would; every later run, the retried one included, runs through."""
    marker = Path(options["marker"])

    def control(t, state, readings):
        if t > 0.05 and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return {"position": {"joint2": 0.6}}

    return control


def hold_joint2(t, state, readings):
    return {"position": {"joint2": 0.6}}
