"""Wall-clock pacing of the simulation loop, and the statistics of how well it keeps time.

The loop sleeps to absolute deadlines ``start + k * period`` (never to "now + period", which
accumulates every late wake-up as drift). A late tick runs at once, so the loop catches up; a
lag beyond ``max_catchup`` periods (the process was stopped, the machine swapped) is given up:
the deadlines move on and the skipped ticks are counted as missed.
"""
from __future__ import annotations

import time

import numpy as np


class Pacer:
    """Absolute-deadline sleeper for one loop thread."""

    def __init__(self, period_ns: int, max_catchup: int = 100) -> None:
        if period_ns <= 0:
            raise ValueError("period must be positive")
        self.period_ns = int(period_ns)
        self.max_lag_ns = int(max_catchup) * self.period_ns
        self.next_ns = 0
        self.missed = 0

    def start(self, now_ns: int | None = None) -> None:
        """Anchor the deadlines: the first tick is due one period from now."""
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        self.next_ns = now_ns + self.period_ns

    def wait(self) -> int:
        """Sleep until the next deadline (at once if it has passed) and return the wake-up time
        (monotonic ns). Advances the deadline by one period."""
        now = time.monotonic_ns()
        remaining = self.next_ns - now
        if remaining > 0:
            time.sleep(remaining * 1e-9)
            now = time.monotonic_ns()
        elif -remaining > self.max_lag_ns:
            skipped = (-remaining) // self.period_ns
            self.missed += int(skipped)
            self.next_ns += skipped * self.period_ns
        self.next_ns += self.period_ns
        return now


class TickLog:
    """Wake-up times (monotonic ns) and solver iterations of the last ``capacity`` ticks in a
    ring (a read returns at most capacity - 1 of them: the slot the writer fills next is left
    out), plus, when ``keep`` > 0, the first ``keep`` wake-up times in full (for benchmarks).
    Writing is two stores per tick, then ``count`` (one writer: the loop thread); reading
    copies (diagnostics, at 1 Hz, on another thread) without a lock, as a sequence lock
    does: ``count`` read before and after the copy says which slots the writer may have
    changed meanwhile, and those are left out."""

    def __init__(self, capacity: int = 1 << 14, keep: int = 0) -> None:
        self.times = np.zeros(capacity, dtype=np.int64)
        self.iterations = np.zeros(capacity, dtype=np.int64)
        self.all_times = np.zeros(keep, dtype=np.int64)
        self.count = 0

    def record(self, t_ns: int, iterations: int) -> None:
        i = self.count % self.times.shape[0]
        self.times[i] = t_ns
        self.iterations[i] = iterations
        if self.count < self.all_times.shape[0]:
            self.all_times[self.count] = t_ns
        self.count += 1

    def since(self, t0_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """(times, iterations) of the ticks at or after t0_ns that the ring still holds, in
        order; safe while the loop thread records. Ticks before ``written`` were whole when
        the copy began; the writer may have been storing ticks written .. ended (the last one
        not yet counted) during the copy, so the slots kept are those of ticks
        ended + 1 - capacity .. written - 1."""
        capacity = self.times.shape[0]
        written = self.count
        times, iterations = self.times.copy(), self.iterations.copy()
        ended = self.count
        order = np.arange(max(0, ended + 1 - capacity), written) % capacity
        times, iterations = times[order], iterations[order]
        keep = times >= t0_ns
        return times[keep], iterations[keep]

    def recorded(self) -> np.ndarray:
        return self.all_times[:min(self.count, self.all_times.shape[0])].copy()


def period_errors(times_ns: np.ndarray, period_ns: int) -> np.ndarray:
    """|actual tick period - nominal period| in seconds, one per consecutive pair of ticks."""
    return np.abs(np.diff(times_ns) - period_ns) * 1e-9


def timing_summary(times_ns: np.ndarray, period_ns: int) -> dict:
    """Mean rate and period-error percentiles of a sequence of tick wake-up times."""
    if times_ns.shape[0] < 2:
        return {"ticks": int(times_ns.shape[0]), "rate_hz": 0.0, "p50_s": 0.0, "p99_s": 0.0,
                "max_s": 0.0}
    errors = period_errors(times_ns, period_ns)
    span = (times_ns[-1] - times_ns[0]) * 1e-9
    return {"ticks": int(times_ns.shape[0]), "rate_hz": (times_ns.shape[0] - 1) / span,
            "p50_s": float(np.percentile(errors, 50)), "p99_s": float(np.percentile(errors, 99)),
            "max_s": float(errors.max())}


def deadline_floor(rate_hz: float, seconds: float, max_catchup: int = 100) -> dict:
    """What the machine allows: the same Pacer with no work per tick, for ``seconds``. The
    benchmark prints the node's figures next to these, measured in the same run. Returns the
    timing summary plus ``missed`` and the period ``errors`` (s)."""
    period_ns = int(round(1e9 / rate_hz))
    pacer = Pacer(period_ns, max_catchup)
    log = TickLog(keep=int(rate_hz * seconds) + 1)
    pacer.start()
    end = time.monotonic_ns() + int(seconds * 1e9)
    while True:
        now = pacer.wait()
        if now >= end:
            break
        log.record(now, 0)
    times = log.recorded()
    summary = timing_summary(times, period_ns)
    summary["missed"] = pacer.missed
    summary["errors"] = period_errors(times, period_ns)
    return summary
