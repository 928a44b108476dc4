"""Ending a ROS 2 process on Ctrl-C or SIGTERM as a clean exit, for the node and the examples.

rclpy's signal handler shuts the context down; the executor then raises
ExternalShutdownException, or the spin is interrupted by KeyboardInterrupt. A callback running
at that moment can also meet the closed context (a publish raises RCLError "publisher's context
is invalid"): that is the same stop, not a failure, and must not turn exit 0 into a traceback.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import rclpy
import rclpy.executors


@contextlib.contextmanager
def until_shutdown(context=None) -> Iterator[None]:
    """Run the block (the spin) and end it quietly when the process is told to stop; an error
    raised while the context is still up propagates."""
    try:
        yield
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok(context=context):
            raise
