"""The trusted side of the function host's pipe: which events a function may publish, what of
a host's report is admitted, and how exceptions cross (the decisions stay the runtime's)."""

from __future__ import annotations

import json

import pytest

from harness.errors import NonRetriableError, StepError, StepFailedError
from harness.events import APPROVAL_GIVEN, MESSAGE_RECEIVED, REPLY_READY
from harness.runtime.functions import CronTrigger, EventTrigger, FunctionSpec
from harness.sidecar.admission import admit
from harness.sidecar.faults import executor_exception, fault_of, host_exception, unencodable
from harness.sidecar.loader import LoadReport
from harness.sidecar.publish_policy import refusal
from harness.sidecar.wire import Loaded


def _message(session_key: str, sender_id: str) -> dict[str, object]:
    return {
        "name": MESSAGE_RECEIVED,
        "data": {"message": "yes", "session_key": session_key, "sender": {"id": sender_id}},
    }


def test_publish_policy_refuses_the_fleets_own_events() -> None:
    # Given events only the fleet emits
    forged: list[dict[str, object]] = [{"name": APPROVAL_GIVEN, "data": {}}]
    forged += [{"name": REPLY_READY, "data": {}}, {"name": "harness/cron", "data": {}}]
    forged += [{"name": "function.failed", "data": {}}]
    # the console operator's override, which would skip a request's approvers
    operator = {"subject": "dashboard:operator", "channel": "dashboard", "override": True}
    forged += [{"name": APPROVAL_GIVEN, "data": operator}]

    # When a function asks to publish them, Then each is refused with a reason
    for event in forged:
        assert refusal(event), event


def test_publish_policy_allows_a_system_message_and_the_functions_own_events() -> None:
    # Given the documented way to reach the agent, and an event of the function's own
    allowed = [_message("system-morning-triage", "system"), {"name": "shop/order.placed"}]

    # When checked, Then neither is refused
    assert [refusal(event) for event in allowed] == [None, None]


def test_publish_policy_refuses_a_message_in_a_persons_session_or_name() -> None:
    # Given a "yes" typed in Alice's session, and one in a system session but in her name
    in_her_session = _message("telegram:111", "system")
    in_her_name = _message("system-x", "111")

    # When checked, Then both are refused: either would answer her pending approval
    assert refusal(in_her_session) is not None
    assert refusal(in_her_name) is not None


def _spec(function_id: str, trigger: EventTrigger | CronTrigger) -> FunctionSpec:
    return FunctionSpec(id=function_id, triggers=(trigger,), queue="sidecar")


def test_admission_refuses_what_a_lying_host_reports() -> None:
    # Given a host that reports the agent's handler id, a bad cron, a duplicate and a good one
    loaded = Loaded(
        report=LoadReport(),
        specs=[
            _spec("agent-handle-message", EventTrigger(name=MESSAGE_RECEIVED)),
            _spec("broken-cron", CronTrigger(expression="every morning")),
            _spec("fine", EventTrigger(name="app/x")),
            _spec("fine", EventTrigger(name="app/y")),
        ],
        files={"agent-handle-message": "evil.py", "broken-cron": "cron.py", "fine": "fine.py"},
    )

    # When the executor admits it
    admitted = admit(loaded, reserved={"agent-handle-message"})

    # Then only the good function is registered, and each refusal is a load error of its file
    assert [spec.id for spec in admitted.specs] == ["fine"]
    assert admitted.specs[0].triggers == (EventTrigger(name="app/x"),)
    assert sorted(e.file for e in admitted.errors) == ["cron.py", "evil.py", "fine.py"]


def test_faults_keep_the_runtimes_decision_and_the_error_text() -> None:
    # Given exceptions raised by the agent's code in the host
    retried = executor_exception(fault_of(ValueError("boom")))
    final = executor_exception(fault_of(NonRetriableError("stop")))
    failed_step = executor_exception(fault_of(StepFailedError("fetch", "ValueError: x")))

    # Then the executor sees them with their names, retried or not as before
    assert f"{type(retried).__name__}: {retried}" == "ValueError: boom"
    assert not isinstance(retried, NonRetriableError | StepError)
    assert isinstance(final, NonRetriableError)
    assert isinstance(failed_step, StepError)


def test_faults_rebuild_a_step_failure_in_the_host() -> None:
    # Given a step that spent its retries on the trusted side
    fault = fault_of(StepFailedError("fetch", "ValueError: x"))

    # When the host raises it, Then a handler catches the same class with the same fields
    with pytest.raises(StepFailedError) as caught:
        raise host_exception(fault)
    assert (caught.value.step_id, caught.value.error) == ("fetch", "ValueError: x")


def test_unencodable_value_is_refused_by_json_as_the_original_was() -> None:
    # Given the type name of a value the host could not encode
    value = unencodable("set")

    # When the runtime encodes it, Then json refuses it naming the same type
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        json.dumps(value)
