"""The pytest plugin (the ``pytest11`` entry point ``mbsim_ros``): the ``mbsim`` fixture, a
factory of simulations with the test's controller in the loop (simulation.py), and the
controller's output in the report of a test that failed.

    def test_stands(mbsim):
        run = mbsim(scene="solo12_standing.yaml", controller=["python3", "solo12_pd.py"])
        assert run.advance(0.5).base_height.min() > 0.2

Every simulation a test started is closed when the test ends, passed, failed or interrupted:
its controller's process group is stopped (and, should pytest itself be killed, the kernel
kills the controller: PR_SET_PDEATHSIG). Each pytest process (each pytest-xdist worker) has a
DDS domain of its own (ros/domains.py); one simulation runs at a time in it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPORTED_BYTES = 20000  # of a controller's output, in a failed test's report (the end)


class SimulationFactory:
    """What the ``mbsim`` fixture gives a test: ``mbsim(config or scene=..., controller=[...],
    **options)`` starts a ControllerSimulation (its options: interface, pacing, env,
    ready_timeout, tick_timeout) with its controller's output in ``logs``."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.runs: list = []

    def __call__(self, config=None, *, scene=None, controller: list[str], **options):
        __tracebackhide__ = True
        from .simulation import ControllerSimulation

        if any(run.process is not None for run in self.runs):
            raise RuntimeError("one simulation at a time in a test process (they would share "
                               "its DDS domain): close() the first one before starting another")
        run = ControllerSimulation(config, scene=scene, controller=controller, logs=self.logs,
                                   name=f"controller-{len(self.runs)}", **options)
        self.runs.append(run)
        return run

    def close(self) -> None:
        for run in self.runs:
            run.close()


@pytest.fixture
def mbsim(request, tmp_path_factory):
    """A factory of simulations with a controller in the loop, closed at the test's end:
    ``run = mbsim(scene="my_scene.yaml", controller=["python3", "my_controller.py"])``, then
    ``trace = run.advance(seconds)`` (docs/TESTING.md)."""
    name = re.sub(r"\W", "_", request.node.name)[:30]
    factory = SimulationFactory(tmp_path_factory.mktemp(f"mbsim-{name}"))
    request.node.stash[RUNS] = factory
    try:
        yield factory
    finally:
        factory.close()


RUNS = pytest.StashKey[SimulationFactory]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report gets a section per controller it ran: the end of its output."""
    outcome = yield
    report = outcome.get_result()
    factory = item.stash.get(RUNS, None)
    if factory is None or not report.failed or report.when != "call":
        return
    for run in factory.runs:
        if run.log is not None and run.log.is_file():
            text = run.log.read_bytes()[-REPORTED_BYTES:].decode(errors="replace")
            report.sections.append((f"controller output ({run.log})", text or "(none)"))
