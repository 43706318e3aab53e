"""`agent-heartbeat` on the durable runtime, against the scripted model server."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.memory.distill import DISTILL_EVENT, PendingLogs, Thresholds, load_state
from harness.agent.memory.heartbeat import (
    DistillPlan,
    apply_distillation,
    heartbeat,
    plan_distillation,
)
from harness.agent.memory.history import MemoryHistory
from harness.agent.memory.notes import append_note, log_path
from harness.runtime import publish
from harness.runtime.cron_ticks import fire_due_ticks
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock

START = datetime(2027, 1, 15, 10, 0, tzinfo=UTC)
MEMORY = "# Memory\n\n## People\n- Ana's sister is called Ada.\n- Ana's dentist is Dr Lopes.\n"


@pytest.fixture
def rig(agent: AgentRig, clock: ManualClock) -> AgentRig:
    agent.runtime.registry.register(heartbeat)
    agent.runtime.register_functions()
    clock.now = START.timestamp()
    (agent.workspace / "MEMORY.md").write_text(MEMORY)
    return agent


def _now(clock: ManualClock) -> datetime:
    return datetime.fromtimestamp(clock.now, UTC)


def _request_text(rig: AgentRig, index: int = -1) -> str:
    return json.dumps(rig.model.requests[index].body["messages"], ensure_ascii=False)


def test_heartbeat_below_the_thresholds_makes_no_model_call(
    rig: AgentRig, clock: ManualClock
) -> None:
    # Given a distillation an hour ago and one short note since
    append_note(rig.workspace, "Ana likes green tea.", _now(clock))
    rig.model.script(Reply.answer(MEMORY + "- Likes green tea.\n"))
    rig.distill(force=True)
    clock.advance(3600)
    append_note(rig.workspace, "Ana's cat is called Miso.", _now(clock))
    # When the heartbeat runs
    outcome = rig.distill()
    # Then it records a skip and the model server saw no new request
    assert outcome["status"] == "skipped", outcome
    assert "below the thresholds" in outcome["reason"]
    assert len(rig.model.requests) == 1, "only the forced distillation may reach the model"


def test_heartbeat_with_nothing_new_makes_no_model_call(rig: AgentRig) -> None:
    outcome = rig.distill()
    assert outcome["status"] == "skipped" and "nothing new" in outcome["reason"]
    assert rig.model.requests == []


def test_cron_tick_runs_the_heartbeat(rig: AgentRig, clock: ManualClock) -> None:
    # Given the scheduler has seen the heartbeat's cron trigger
    fire_due_ticks(rig.runtime)
    # When half an hour passes
    clock.advance(30 * 60)
    published = fire_due_ticks(rig.runtime)
    drain(rig.runtime)
    # Then one tick ran the heartbeat, which skipped without calling the model
    assert len(published) == 1
    runs = [r for r in rig.runtime.ledger.recent() if r.function_id == heartbeat.id]
    assert [r.status for r in runs] == ["completed"]
    assert rig.model.requests == []


def test_enough_new_bytes_distils_and_keeps_the_old_version(
    rig: AgentRig, clock: ManualClock
) -> None:
    # Given more than HEARTBEAT_MIN_BYTES of new notes
    for i in range(40):
        append_note(rig.workspace, f"Note {i}: " + "Ana plans a trip to Lisbon. " * 4, _now(clock))
    updated = MEMORY + "\n## Plans\n- A trip to Lisbon.\n"
    rig.model.script(Reply.answer(updated))
    # When the heartbeat runs
    outcome = rig.distill()
    # Then the model got the current MEMORY.md and the new notes, MEMORY.md is the answer,
    # and the previous text is version 1 of the history
    assert outcome["status"] == "written", outcome
    assert outcome["tokens"]["input_tokens"] == 100
    sent = _request_text(rig)
    assert "Dr Lopes" in sent and "Note 39" in sent
    assert (rig.workspace / "MEMORY.md").read_text() == updated
    history = MemoryHistory(rig.workspace)
    assert [v.version for v in history.versions()] == [1]
    assert history.read(1) == MEMORY
    assert "distillation" in history.versions()[0].reason


def test_max_age_with_one_new_entry_distils(rig: AgentRig, clock: ManualClock) -> None:
    # Given a distillation, then one short note, then nine hours of quiet
    append_note(rig.workspace, "Ana likes green tea.", _now(clock))
    rig.model.script(Reply.answer(MEMORY + "- Likes green tea.\n"))
    rig.distill(force=True)
    append_note(rig.workspace, "Ana's cat is called Miso.", _now(clock))
    clock.advance(9 * 3600)
    rig.model.script(Reply.answer(MEMORY + "- Likes green tea.\n- Cat: Miso.\n"))
    # When the heartbeat runs
    outcome = rig.distill()
    # Then it distilled, sending only the note written since the last distillation
    assert outcome["status"] == "written", outcome
    sent = _request_text(rig)
    assert "Miso" in sent and "green tea." not in sent.split("<new_notes>")[1]


def test_destructive_answer_is_held_back(rig: AgentRig, clock: ManualClock) -> None:
    # Given a note, and a model that answers with a fraction of the memory
    append_note(rig.workspace, "Ana moved to Porto.", _now(clock))
    rig.model.script(Reply.answer("# Memory\n- Porto.\n"))
    # When a distillation runs
    outcome = rig.distill(force=True)
    # Then MEMORY.md is untouched, the candidate is kept as rejected, the note is still pending
    assert outcome["status"] == "held back" and "drop" in outcome["reason"], outcome
    assert (rig.workspace / "MEMORY.md").read_text() == MEMORY
    rejected = MemoryHistory(rig.workspace).rejected()
    assert len(rejected) == 1 and "drop" in rejected[0].reason
    assert load_state(rig.workspace).positions == {}, "held-back notes must be offered again"


@pytest.mark.parametrize(
    "answer", ["", "I'm sorry, but I can't help with that.", "I cannot update memory files."]
)
def test_answer_that_is_not_a_memory_document_is_held_back(
    rig: AgentRig, clock: ManualClock, answer: str
) -> None:
    append_note(rig.workspace, "Ana moved to Porto.", _now(clock))
    rig.model.script(Reply.answer(answer))
    outcome = rig.distill(force=True)
    assert outcome["status"] == "held back", outcome
    assert (rig.workspace / "MEMORY.md").read_text() == MEMORY


def test_held_back_notes_are_sent_again_after_the_wait(rig: AgentRig, clock: ManualClock) -> None:
    # Given a held-back distillation of enough notes to pass the byte threshold
    for i in range(40):
        append_note(rig.workspace, f"Note {i}: " + "Ana plans a trip to Lisbon. " * 4, _now(clock))
    rig.model.script(Reply.answer(""))
    rig.distill()
    # When the heartbeat runs soon after, then after HEARTBEAT_MAX_AGE
    soon = rig.distill()
    clock.advance(8 * 3600 + 1)
    rig.model.script(Reply.answer(MEMORY + "- Lisbon.\n"))
    later = rig.distill()
    # Then it waited, then sent the same notes again
    assert soon["status"] == "skipped" and "held back" in soon["reason"]
    assert later["status"] == "written", later
    assert "Note 0:" in _request_text(rig)


def test_hand_edits_are_the_starting_point_of_the_next_distillation(
    rig: AgentRig, clock: ManualClock
) -> None:
    # Given a person adds a line to MEMORY.md by hand
    edited = MEMORY + "- Ana's birthday is on 3 March.\n"
    (rig.workspace / "MEMORY.md").write_text(edited)
    append_note(rig.workspace, "Ana moved to Porto.", _now(clock))
    rig.model.script(Reply.answer(edited + "- Lives in Porto.\n"))
    # When a distillation runs
    rig.distill(force=True)
    # Then the model saw the edit, and the edited file is the version kept in the history
    assert "3 March" in _request_text(rig)
    assert MemoryHistory(rig.workspace).read(1) == edited


def test_restore_brings_a_version_back_as_a_new_version(rig: AgentRig, clock: ManualClock) -> None:
    # Given a distillation that replaced MEMORY.md
    append_note(rig.workspace, "Ana moved to Porto.", _now(clock))
    distilled = MEMORY + "- Lives in Porto.\n"
    rig.model.script(Reply.answer(distilled))
    rig.distill(force=True)
    history = MemoryHistory(rig.workspace)
    # When version 1 is restored
    history.restore(1, now=_now(clock))
    # Then MEMORY.md is the old text and the distilled text is kept as version 2
    assert (rig.workspace / "MEMORY.md").read_text() == MEMORY
    assert history.read(2) == distilled
    assert history.versions()[-1].reason == "restore of version 1"


def test_retention_prunes_only_distilled_logs(rig: AgentRig, clock: ManualClock) -> None:
    # Given an old log that gets distilled, and another old log written after that
    old = _now(clock) - timedelta(days=40)
    append_note(rig.workspace, "Old fact B.", old - timedelta(days=1))
    rig.model.script(Reply.answer(MEMORY + "- B.\n"))
    first = rig.distill(force=True)
    append_note(rig.workspace, "Old fact A, logged late.", old)
    # When the heartbeat runs again (and skips the model: one short new note)
    clock.advance(60)
    second = rig.distill()
    # Then the distilled log was deleted, and the undistilled one kept
    assert first["pruned"] == [f"{(old - timedelta(days=1)).date()}.md"]
    assert second["status"] == "skipped" and second["pruned"] == []
    assert log_path(rig.workspace, old.date()).exists()


def test_replayed_apply_writes_one_version(rig: AgentRig, clock: ManualClock) -> None:
    # Given a distillation that has been applied
    append_note(rig.workspace, "Ana moved to Porto.", _now(clock))
    rig.model.script(Reply.answer(MEMORY + "- Lives in Porto.\n"))
    rig.distill(force=True)
    # When the same answer is applied again (a replay after a crash mid-step)
    plan = DistillPlan(due=True, reason="forced", memory_text=MEMORY, pending=PendingLogs())
    again = apply_distillation(
        rig.workspace, plan, MEMORY + "- Lives in Porto.\n", max_shrink=0.5,
        now=_now(clock), run="r1",
    )  # fmt: skip
    # Then nothing new is written
    assert again["status"] == "unchanged"
    assert len(MemoryHistory(rig.workspace).versions()) == 1


def test_an_edit_made_during_a_distillation_wins(rig: AgentRig, clock: ManualClock) -> None:
    # Given a distillation planned from the current MEMORY.md
    append_note(rig.workspace, "Ana moved to Porto.", _now(clock))
    plan = plan_distillation(rig.workspace, _now(clock), Thresholds(), force=True)
    # When the person edits MEMORY.md before the model's answer is applied
    edited = MEMORY + "- Ana's birthday is on 3 March.\n"
    (rig.workspace / "MEMORY.md").write_text(edited)
    outcome = apply_distillation(
        rig.workspace, plan, MEMORY + "- Lives in Porto.\n", max_shrink=0.5,
        now=_now(clock), run="r1",
    )  # fmt: skip
    # Then the answer is held back, the edit stays, and the note is still pending
    assert outcome["status"] == "held back" and "edited" in outcome["reason"]
    assert (rig.workspace / "MEMORY.md").read_text() == edited
    assert load_state(rig.workspace).positions == {}


def test_distillation_falls_back_to_the_second_model_like_the_agent(
    rig: AgentRig, clock: ManualClock
) -> None:
    # Given a fallback model, and a primary that fails twice
    settings = make_settings(
        rig.workspace, rig.model, fallback_llm_provider="openai",
        openai_api_key=rig.model.api_key, openai_base_url=rig.model.openai_url,
    )  # fmt: skip
    set_agent_deps(build_deps(settings))
    append_note(rig.workspace, "Ana moved to Porto.", _now(clock))
    rig.model.script(
        Reply.error(529, "overloaded"), Reply.error(500, "boom"), Reply.answer(MEMORY + "- Porto\n")
    )
    # When a distillation runs and its retries come due
    result = publish({"name": DISTILL_EVENT, "data": {"force": True}}, runtime=rig.runtime)
    drain(rig.runtime)
    for _ in range(3):
        clock.advance(30)
        drain(rig.runtime)
    # Then the third attempt went to the fallback, and its answer was written
    assert [r.api for r in rig.model.requests] == ["anthropic", "anthropic", "openai"]
    record = rig.runtime.ledger.run(result.run_ids[0])
    assert record is not None and record.result["status"] == "written"
    assert (rig.workspace / "MEMORY.md").read_text() == MEMORY + "- Porto\n"


def test_heartbeat_distils_each_chat_memory_on_its_own(rig: AgentRig, clock: ManualClock) -> None:
    # Given per-chat memory, where one chat wrote plenty of notes and the shared log is quiet
    from harness.agent.memory.scope import memory_root

    chat = memory_root(rig.workspace, "per-chat", "telegram-42", rig.deps.private)
    chat.mkdir(parents=True)
    (chat / "MEMORY.md").write_text("# Memory\n\n- Bo likes tea.\n")
    for i in range(40):
        append_note(chat, f"Note {i}: " + "Bo is moving to Porto in May. " * 4, _now(clock))
    rig.model.script(Reply.answer("# Memory\n\n- Bo likes tea.\n- Bo moves to Porto in May.\n"))
    # When the heartbeat runs
    outcome = rig.distill()
    # Then only the chat's memory was distilled, with that chat's notes alone
    assert outcome["status"] == "skipped", outcome
    assert outcome["chats"][chat.name]["status"] == "written", outcome
    assert "Porto" in (chat / "MEMORY.md").read_text()
    assert "Porto" not in (rig.workspace / "MEMORY.md").read_text()
    assert len(rig.model.requests) == 1 and "Bo likes tea" in _request_text(rig)


def test_on_the_gateway_path_the_distillation_parks_until_the_gateway_answers(
    rig: AgentRig, clock: ManualClock
) -> None:
    # Given offloaded model calls, no gateway yet, and enough new notes to distil
    settings = make_settings(rig.workspace, rig.model, model_calls="gateway")
    set_agent_deps(build_deps(settings))
    rig.runtime.call_servers.clear()
    for i in range(40):
        append_note(rig.workspace, f"Note {i}: " + "Ana plans a trip to Lisbon. " * 4, _now(clock))
    updated = MEMORY + "\n## Plans\n- A trip to Lisbon.\n"
    rig.model.script(Reply.answer(updated))
    # When the heartbeat runs
    run_id = publish({"name": DISTILL_EVENT, "data": {}}, runtime=rig.runtime).run_ids[0]
    drain(rig.runtime)
    # Then it waits on its model call, which nobody has made yet
    record = rig.runtime.ledger.run(run_id)
    assert record is not None and record.status == "waiting", record
    assert rig.model.requests == []
    # When a gateway makes the call
    assert ModelGateway(rig.runtime, settings).serve_due() == 1
    drain(rig.runtime)
    # Then the distillation completes with the gateway's answer
    record = rig.runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed", record
    assert (rig.workspace / "MEMORY.md").read_text() == updated
