"""The one way the peer benchmarks time things: per-call times (medians keep the other jobs of
a shared machine out of the figure), blocks of calls (the mean cost per call) and the best of
several blocks (bench/profile_step.py: the cost of a call on a quiet moment)."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np


def per_call(call: Callable[[], object], calls: int,
             after: Callable[[int], object] | None = None) -> np.ndarray:
    """The time of each of `calls` calls (s); ``after(k)`` runs untimed after the k-th call
    (reading results out)."""
    times = np.empty(calls)
    for k in range(calls):
        start = time.perf_counter()
        call()
        times[k] = time.perf_counter() - start
        if after is not None:
            after(k)
    return times


def median_us(call: Callable[[], object], calls: int) -> float:
    """The median time of one call (us) over `calls` timed calls, after an untimed one
    (compilation, caches)."""
    call()
    return float(np.median(per_call(call, calls))) * 1e6


def block(call: Callable[[], object], calls: int) -> float:
    """The time of `calls` calls in a row (s)."""
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return time.perf_counter() - start


def best_block_us(call: Callable[[], object], calls: int = 1000, blocks: int = 7) -> float:
    """The cost of one call (us) in the fastest of ``blocks`` blocks of ``calls`` calls, after
    an untimed one (compilation, caches)."""
    call()
    return min(block(call, calls) for _ in range(blocks)) / calls * 1e6
