"""The standard simulator services of ROS 2's ``simulation_interfaces`` package (ROS 2 Kilted
and later; not on PyPI), where it imports: ``~/reset_simulation`` (ResetSimulation),
``~/step_simulation`` (StepSimulation), ``~/set_simulation_state`` (SetSimulationState) and
``~/get_simulation_state`` (GetSimulationState). Each is the node's own service underneath
(``~/reset``, ``~/step``, ``~/pause``), so both behave the same.

Written against simulation_interfaces 1.1-2.1 (the definitions these services use did not
change between them): ``Result.RESULT_OK / RESULT_FEATURE_UNSUPPORTED /
RESULT_OPERATION_FAILED``, ``SimulationState.STATE_STOPPED / STATE_PLAYING / STATE_PAUSED /
STATE_QUITTING``, ``SetSimulationState.Response.ALREADY_IN_TARGET_STATE``,
``ResetSimulation.Request.scope`` with ``SCOPE_DEFAULT / SCOPE_TIME / SCOPE_STATE /
SCOPE_SPAWNED / SCOPE_ALL``, ``StepSimulation.Request.steps``.
"""
from __future__ import annotations

from std_srvs.srv import SetBool, Trigger

try:  # a ROS installation (Kilted or later)
    from simulation_interfaces.msg import Result, SimulationState
    from simulation_interfaces.srv import (GetSimulationState, ResetSimulation,
                                           SetSimulationState, StepSimulation)
except ImportError:
    Result = None


def available() -> bool:
    return Result is not None


def _result(response, code: int, message: str = ""):
    response.result.result = code
    response.result.error_message = message
    return response


class SimulationServices:
    """The four services on ``node`` (a SimulationNode), delegating to its std_srvs
    handlers."""

    def __init__(self, node) -> None:
        self.node = node
        node.create_service(ResetSimulation, "~/reset_simulation", self._reset)
        node.create_service(StepSimulation, "~/step_simulation", self._step)
        node.create_service(SetSimulationState, "~/set_simulation_state", self._set_state)
        node.create_service(GetSimulationState, "~/get_simulation_state", self._get_state)

    def _trigger(self, handler):
        return handler(Trigger.Request(), Trigger.Response())

    def _pause(self, pause: bool):
        return self.node._on_pause(SetBool.Request(data=pause), SetBool.Response())

    def _reset(self, request, response):
        """Any scope that includes the state (DEFAULT, STATE, ALL) is ``~/reset``: time per
        the clock_on_reset parameter; nothing is ever spawned, so SPAWNED has nothing to
        do. TIME alone (time back without the state) is not supported."""
        scope = request.scope
        if scope not in (ResetSimulation.Request.SCOPE_DEFAULT,
                         ResetSimulation.Request.SCOPE_ALL) \
                and not scope & ResetSimulation.Request.SCOPE_STATE:
            if scope & ResetSimulation.Request.SCOPE_TIME:
                return _result(response, Result.RESULT_FEATURE_UNSUPPORTED,
                               "resetting time without the state is not supported")
            return _result(response, Result.RESULT_OK, "nothing spawned: nothing to reset")
        answer = self._trigger(self.node._on_reset)
        return _result(response, Result.RESULT_OK, answer.message)

    def _step(self, request, response):
        """``steps`` steps while paused (a running simulation fails, as the standard says)."""
        if not self.node.paused:
            return _result(response, Result.RESULT_OPERATION_FAILED,
                           "the simulation is running; pause it first")
        for _ in range(max(int(request.steps), 1)):
            answer = self._trigger(self.node._on_step)
            if not answer.success:
                return _result(response, Result.RESULT_OPERATION_FAILED, answer.message)
        return _result(response, Result.RESULT_OK, answer.message)

    def _set_state(self, request, response):
        """PLAYING resumes, PAUSED pauses, STOPPED pauses and resets; QUITTING is not
        supported (end the node with SIGINT)."""
        target = request.state.state
        paused = self.node.paused
        if target == SimulationState.STATE_STOPPED:
            self._pause(True)
            return _result(response, Result.RESULT_OK,
                           self._trigger(self.node._on_reset).message)
        if target not in (SimulationState.STATE_PLAYING, SimulationState.STATE_PAUSED):
            return _result(response, Result.RESULT_FEATURE_UNSUPPORTED,
                           f"state {target} is not supported (SIGINT ends the node)")
        pause = target == SimulationState.STATE_PAUSED
        if pause == paused:
            return _result(response, SetSimulationState.Response.ALREADY_IN_TARGET_STATE,
                           "paused" if paused else "running")
        answer = self._pause(pause)
        return _result(response, Result.RESULT_OK if answer.success
                       else Result.RESULT_OPERATION_FAILED, answer.message)

    def _get_state(self, request, response):
        response.state.state = SimulationState.STATE_PAUSED if self.node.paused \
            else SimulationState.STATE_PLAYING
        return _result(response, Result.RESULT_OK)
