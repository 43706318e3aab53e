"""Model calls offloaded to the model gateway (`MODEL_CALLS=gateway`): the run parks holding
no worker, a gateway makes the call on the async SDK client and the run resumes with it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio

from harness.agent import platforms
from harness.agent import turn as turn_module
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.model_calls import MODEL_SERVICE
from harness.agent.system_prompt import build_system_prompt
from harness.agent.user_hooks import RunInfo, load_hook_plugins
from harness.events import ReplyTarget
from harness.llm.types import ToolCall
from harness.runtime import Runtime
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import AgentRig, make_settings, user_texts
from tests.fakes.installed_package import installed_package
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock
from tests.waiting import wait_until


def _on_gateway(agent: AgentRig, **overrides: Any) -> Settings:
    """Switch the rig to offloaded model calls, with no gateway drain would call itself."""
    settings = make_settings(agent.workspace, agent.model, model_calls="gateway", **overrides)
    set_agent_deps(build_deps(settings))
    agent.runtime.call_servers.clear()
    return settings


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None, f"run {run_id} has no record"
    return record.status


@pytest.fixture
def gateways(agent: AgentRig) -> Iterator[list[ModelGateway]]:
    started: list[ModelGateway] = []
    yield started
    for gateway in started:
        gateway.stop()


def _started(agent: AgentRig, settings: Settings, gateways: list[ModelGateway]) -> ModelGateway:
    gateway = ModelGateway(agent.runtime, settings, poll_s=0.01)
    gateways.append(gateway)
    gateway.start()
    return gateway


def test_a_turns_model_call_parks_the_run_until_the_gateway_answers(agent: AgentRig) -> None:
    # Given the gateway path, and no gateway running yet
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("Hello from the gateway."))
    # When a message is handled
    run_id = agent.say("hi")
    # Then the run waits on its model call, no call was made, no reply went out
    assert _status(agent.runtime, run_id) == "waiting"
    assert agent.model.requests == [] and agent.replies() == []
    # When a gateway makes the due call
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)
    # Then the run resumed and answered
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["Hello from the gateway."]


def test_a_gateway_killed_mid_stream_has_the_call_made_again_and_one_answer(
    agent: AgentRig, clock: ManualClock, gateways: list[ModelGateway]
) -> None:
    # Given a gateway whose call stalls mid-stream
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("First try.", delay=30), Reply.answer("Second try."))
    run_id = agent.say("hi")
    dying = _started(agent, settings, gateways)
    assert agent.model.wait_until_stalled(), "the first call should have started streaming"
    # When that gateway dies, and its lease runs out
    dying.kill()
    clock.advance(agent.runtime.lease_ttl + 1)
    # Then another gateway makes the call again and the turn completes with one answer
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["Second try."]
    assert len(agent.model.requests) == 2, "once per lease, at most twice"


def test_a_stopping_gateway_hands_its_calls_back_at_once(
    agent: AgentRig, gateways: list[ModelGateway]
) -> None:
    # Given a gateway whose call stalls mid-stream
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("First try.", delay=30), Reply.answer("Second try."))
    run_id = agent.say("hi")
    stopping = _started(agent, settings, gateways)
    assert agent.model.wait_until_stalled()
    # When it stops (its worker shuts down), no time passing
    stopping.stop()
    # Then another gateway makes the call at once, and the turn completes
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["Second try."]


def test_cancelling_a_run_aborts_its_offloaded_call(
    agent: AgentRig, gateways: list[ModelGateway]
) -> None:
    # Given a call in flight at a gateway whose lease is so long that it renews no call
    # during the test: the run's cancel alone must reach it (`Keys.call_stops`)
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("Never finished.", delay=30))
    run_id = agent.say("hi")
    agent.runtime.lease_ttl = 600.0
    gateway = _started(agent, settings, gateways)
    assert agent.model.wait_until_stalled()
    # When the run is cancelled
    ok, kicks = agent.runtime.ledger.request_cancel(run_id, "stop", agent.runtime.now_ms())
    assert ok
    for kick in kicks:
        agent.runtime.kicker.kick(kick)
    drain(agent.runtime)
    # Then the run ends cancelled, the gateway drops the stream, and nothing is asked again
    assert _status(agent.runtime, run_id) == "cancelled"
    wait_until(lambda: gateway.peak == 1 and not gateway._inflight, "the stream to be aborted")
    assert agent.runtime.calls.due(MODEL_SERVICE, agent.runtime.now_ms() + 10**9) == 0
    assert len(agent.model.requests) == 1 and agent.replies() == []


def test_a_message_steered_in_during_an_offloaded_call_is_seen_by_the_next_think(
    agent: AgentRig,
) -> None:
    # Given a run waiting on its model call
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("Coffee, then."), Reply.answer("Tea it is."))
    run_id = agent.say("make coffee")
    # When another message arrives in the same chat (steer mode)
    second = agent.say("actually, make it tea")
    assert _status(agent.runtime, second) == "steered"
    # And the gateway answers the first call
    gateway = ModelGateway(agent.runtime, settings)
    agent.runtime.call_servers.append(gateway.serve_due)
    drain(agent.runtime)
    # Then the steered message reached the model before the run ended, in one run
    assert _status(agent.runtime, run_id) == "completed"
    assert "actually, make it tea" in user_texts(agent.model.requests[1].body)
    assert agent.replies()[-1] == "Tea it is."


class _Drafts:
    """Chat platforms whose drafts record what they were shown."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def open_draft(
        self, runtime: Runtime, run_id: str, reply: ReplyTarget, stream_default: bool
    ) -> _Drafts:
        return self

    def acknowledge(
        self, runtime: Runtime, run_id: str, reply: ReplyTarget, *, keep_alive: bool
    ) -> bool:
        return False

    def show(self, text: str) -> None:
        self.shown.append(text)

    def close(self, *, interrupted: bool = False) -> None:
        pass

    def fetch(self, channel: str, attachment: Any, max_bytes: int) -> Any:
        raise NotImplementedError


def test_an_offloaded_calls_text_streams_to_the_draft(agent: AgentRig) -> None:
    # Given a chat platform that draws drafts, and the gateway path
    drafts = _Drafts()
    before = platforms.installed()
    platforms.install(drafts)  # type: ignore[arg-type]
    try:
        settings = _on_gateway(agent)
        # a model that writes slowly: the gateway passes the text on once per tick (50 ms)
        agent.model.script(Reply.answer("One two three four five six.", chunk=4, pace=0.12))
        agent.runtime.call_servers.append(ModelGateway(agent.runtime, settings).serve_due)
        # When a message is answered
        agent.say("count")
    finally:
        platforms.install(before)
    # Then the draft grew tick by tick while the gateway streamed the answer
    answer = "One two three four five six."
    assert drafts.shown[-1] == answer and agent.replies() == [answer]
    partial = [text for text in drafts.shown if text != answer]
    assert partial and all(answer.startswith(text) for text in partial), drafts.shown


def test_an_offloaded_calls_pieces_are_passed_on_per_tick_not_per_piece(agent: AgentRig) -> None:
    # Given a chat platform that draws drafts, and a model that streams its answer one
    # character a piece, as fast as it can
    drafts = _Drafts()
    before = platforms.installed()
    platforms.install(drafts)  # type: ignore[arg-type]
    answer = "One two three four five six."
    try:
        settings = _on_gateway(agent)
        agent.model.script(Reply.answer(answer, chunk=1))
        agent.runtime.call_servers.append(ModelGateway(agent.runtime, settings).serve_due)
        # When a message is answered
        agent.say("count")
    finally:
        platforms.install(before)
    # Then the draft was updated once per gateway tick, far fewer times than pieces came
    assert drafts.shown[-1] == answer and agent.replies() == [answer]
    assert len(drafts.shown) < len(answer) // 2, f"{len(drafts.shown)} draft updates"


def test_a_model_that_never_answers_is_bounded_by_the_model_timeout(
    agent: AgentRig, clock: ManualClock
) -> None:
    # Given a small AGENT_MODEL_TIMEOUT and a model that stalls on the first call
    settings = _on_gateway(agent, agent_model_timeout=0.3)
    agent.model.script(Reply.answer("Stalled.", delay=30), Reply.answer("Here now."))
    agent.runtime.call_servers.append(ModelGateway(agent.runtime, settings).serve_due)
    # When the turn runs, and the step's retry comes due
    run_id = agent.say("hi")
    assert _status(agent.runtime, run_id) == "sleeping", "the failed call waits for its retry"
    think = agent.runtime.ledger.journal(run_id)
    assert any("timed out" in str(rec.get("e", "")) for rec in think.values()), think
    clock.advance(60)
    drain(agent.runtime)
    # Then the retry's new call answered
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["Here now."]


def test_the_gateways_concurrency_limit_queues_calls_rather_than_failing(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a gateway that makes at most 2 calls at once, and 5 chats waiting on the model
    settings = _on_gateway(agent)
    agent.model.respond_with(lambda api, body: Reply.answer("ok", pace=0.02))
    runs = [agent.say("hi", session=f"chat-{n}") for n in range(5)]
    assert all(_status(agent.runtime, r) == "waiting" for r in runs)
    gateway = ModelGateway(agent.runtime, settings, concurrency=2, poll_s=0.01)
    # When it serves them
    agent.runtime.call_servers.append(gateway.serve_due)
    drain(agent.runtime)
    # Then every chat was answered, never more than 2 calls at once
    assert [_status(agent.runtime, r) for r in runs] == ["completed"] * 5
    assert gateway.made == 5 and gateway.peak == 2
    assert agent.replies() == ["ok"] * 5


def test_a_parked_call_is_taken_at_once_not_at_the_idle_tick(
    agent: AgentRig, gateways: list[ModelGateway]
) -> None:
    # Given a gateway that looks on its own only once a minute, and has looked once already
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("Woken."))
    gateway = ModelGateway(agent.runtime, settings, idle_s=60, poll_s=60)
    gateways.append(gateway)
    wake = agent.runtime.keys.call_wake(MODEL_SERVICE)
    agent.runtime.redis.lpush(wake, "stale")  # its first take clears what nothing stands for
    gateway.start()
    wait_until(lambda: not agent.runtime.redis.exists(wake), "the gateway's first look")
    # When a message's model call parks
    run_id = agent.say("hi")
    # Then the gateway makes it well before its next look of its own
    wait_until(lambda: gateway.made == 1 and not gateway._inflight, "the call to be made")
    drain(agent.runtime)
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["Woken."]


def test_an_idle_gateway_makes_a_round_trip_per_idle_interval(
    agent: AgentRig, redis_url: str, gateways: list[ModelGateway]
) -> None:
    # Given a gateway on a real Redis, nothing to do, looking every 0.2 s when idle
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    runtime = Runtime(
        redis=client,
        kicker=RecordingKicker(),
        registry=FunctionRegistry(),
        keys=Keys(f"idle{uuid.uuid4().hex[:8]}"),
        aredis_factory=lambda: redis.asyncio.Redis.from_url(redis_url, decode_responses=True),
    )
    gateway = ModelGateway(runtime, _on_gateway(agent), idle_s=0.2)
    gateways.append(gateway)
    client.config_resetstat()
    began = time.monotonic()
    # When it has waited for calls a few times
    gateway.start()
    wait_until(lambda: _calls(client, "blpop") >= 5, "five waits for calls")
    window = time.monotonic() - began
    # the round trips: a script's own commands count too, under their names, so count the
    # scripts called, and the waits (the gateway sends nothing else once connected)
    sent = _calls(client, "evalsha", "eval", "blpop")
    gateway.stop()
    client.close()
    # Then it made two round trips (a wait, a take) per idle interval, not one per poll
    most = 2 * (window / gateway.idle_s + 1) + 2  # + a script's first call (NOSCRIPT)
    assert sent <= most, f"{sent} commands in {window:.2f} s, at most {most:.0f} expected"


def _calls(client: redis.Redis, *commands: str) -> int:
    """How often Redis ran `commands` since its last CONFIG RESETSTAT."""
    stats: dict[str, dict[str, int]] = client.info("commandstats")
    return sum(stats.get(f"cmdstat_{command}", {}).get("calls", 0) for command in commands)


def test_two_full_gateways_share_the_calls_by_wake_tokens_each_made_once(
    agent: AgentRig, gateways: list[ModelGateway]
) -> None:
    # Given two gateways of two slots each that look on their own only once a minute
    settings = _on_gateway(agent)
    agent.model.respond_with(lambda api, body: Reply.answer("ok", pace=0.02))
    pair = [ModelGateway(agent.runtime, settings, concurrency=2, idle_s=60) for _ in range(2)]
    gateways.extend(pair)
    for gateway in pair:
        gateway.start()
    # When five chats' model calls park
    runs = [agent.say("hi", session=f"chat-{n}") for n in range(5)]
    # Then every call is made, once, by the tokens and the freed slots alone
    wait_until(lambda: sum(g.made for g in pair) == 5, "five calls to be made")
    wait_until(lambda: not any(g._inflight for g in pair), "the calls to be recorded")
    drain(agent.runtime)
    assert [_status(agent.runtime, r) for r in runs] == ["completed"] * 5
    assert len(agent.model.requests) == 5 and agent.replies() == ["ok"] * 5
    assert all(g.peak <= 2 for g in pair)


class _Counter(Tool[ToolParams]):
    """A tool that counts its executions (its side effect)."""

    name = "count"
    description = "Counts."
    parameters = ToolParams

    def __init__(self) -> None:
        self.calls = 0

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        self.calls += 1
        return f"counted {self.calls}"


class _StallsBeforeTheTool:
    """A plug-in hook standing for a worker starved past its lease: the first time a tool
    call is about to run, the clock moves past the lease (no renewal came) and another
    worker takes the run over meanwhile (`advance`, here). `arm` it for a test first."""

    def __init__(self) -> None:
        self.agent: AgentRig | None = None
        self.clock: ManualClock | None = None
        self.run_id = ""
        self.other_worker: list[str] = []  # what the other worker's execution came to

    def arm(self, agent: AgentRig, clock: ManualClock) -> None:
        """Stall once, in `agent`'s runtime with `clock`."""
        self.agent, self.clock, self.run_id, self.other_worker = agent, clock, "", []

    def on_start(self, info: RunInfo) -> None:
        self.run_id = info.run_id

    def before_tool(self, call: ToolCall) -> None:
        if self.other_worker or self.agent is None or self.clock is None:
            return
        self.other_worker.append("stalled")
        self.clock.advance(self.agent.runtime.lease_ttl + 1)
        self.other_worker[0] = advance(self.agent.runtime, self.run_id)


STALL = _StallsBeforeTheTool()


def test_a_worker_stalled_past_its_lease_after_a_resume_does_not_run_the_tool_again(
    agent: AgentRig, clock: ManualClock, tmp_path: Path
) -> None:
    # Given the gateway path, a tool, and a worker that resumes the turn after its first
    # model call, records it, then stalls past its lease before the tool step while another
    # worker takes the run over, runs the tool and parks on the next model call
    settings = _on_gateway(agent, agent_approval="off")
    tool = _Counter()
    agent.deps = build_deps(settings)
    agent.deps.tools.register(tool)
    set_agent_deps(agent.deps)
    agent.model.script(Reply.tool("count", {}), Reply.answer("Counted."))
    STALL.arm(agent, clock)
    entries = {"stall": f"{__name__}:STALL"}
    with installed_package(tmp_path / "site", "harness-stall", "harness.hooks", entries,
                           load_hook_plugins):  # fmt: skip
        load_hook_plugins()
        run_id = agent.say("count once")
        assert ModelGateway(agent.runtime, settings).serve_due() == 1
        # When the stalled worker goes on
        resumed = drain(agent.runtime)
    # Then it stopped at the tool step's boundary: the tool ran once, by the other worker
    assert STALL.other_worker == ["suspended"], "the other worker parked on the next call"
    assert (run_id, "lease-lost") in resumed
    assert tool.calls == 1, "the stalled worker ran the tool the other worker had run"
    # And the turn completes with one answer, the model having seen one result
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["Counted."]


def test_a_resumed_think_builds_no_prompt_again(
    agent: AgentRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the gateway path, and the turn's prompt builder counted (it still builds)
    settings = _on_gateway(agent)
    built: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return build_system_prompt(*args, **kwargs)

    monkeypatch.setattr(turn_module, "build_system_prompt", counted)
    agent.model.script(Reply.answer("Built once."))
    # When a message parks on its model call, and the run resumes with the answer
    run_id = agent.say("hi")
    assert len(built) == 1, f"the first execution should build the prompt once, built {built}"
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)
    # Then the resumed execution answered from the recorded outcome, building no prompt
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["Built once."]
    assert len(built) == 1, f"the resumed execution rebuilt the prompt: {len(built)} builds"


def test_a_gateway_that_takes_its_own_call_again_keeps_its_stream_and_asks_once(
    agent: AgentRig, gateways: list[ModelGateway]
) -> None:
    # Given a gateway streaming a slow answer, that renews its leases rarely (so a take,
    # woken by a token, comes before a renewal)
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("The one answer.", delay=1.5))
    run_id = agent.say("hi")
    gateway = ModelGateway(agent.runtime, settings, poll_s=60, idle_s=60)
    gateways.append(gateway)
    gateway.start()
    assert agent.model.wait_until_stalled(), "the call should have started streaming"
    # When its lease runs out while it still streams (its loop held up past the lease) and
    # it is woken to take calls: it takes its own call again, under a new token
    client, keys = agent.runtime.redis, agent.runtime.keys
    (call_id,) = client.zrange(keys.call_leases(MODEL_SERVICE), 0, -1)
    client.zadd(keys.call_leases(MODEL_SERVICE), {call_id: 0})
    client.lpush(f"{keys.calls(MODEL_SERVICE)}:wake", "1")
    token = f"{keys.prefix}:call:{call_id}"
    wait_until(lambda: int(client.hget(token, "token") or 0) == 2, "the call taken again")
    # Then the stream goes on under the new lease: the model is asked once (a second ask
    # would find no scripted reply), and its answer is recorded, not refused, and given
    wait_until(lambda: gateway.made >= 1 and not gateway._inflight, "the call to be recorded")
    drain(agent.runtime)
    assert len(agent.model.requests) == 1, "the model was asked again for a call in flight"
    assert _status(agent.runtime, run_id) == "completed"
    assert agent.replies() == ["The one answer."]
