"""Made-up history for the console's screenshots (`bench.console_screenshots`).

A fleet's worth of it on an in-memory Redis (fakeredis) with a clock this module moves, so
runs get known durations and regenerating draws the same pictures:
- a day of chat turns by the real agent (`handle_message`), in four chats, talking through
  the Anthropic SDK to the scripted model server (`tests.fakes.model_server`), which answers
  from a script and moves the clock a few seconds per answer; the featured chat reads a file
  (a folded tool call), then writes in `functions/` and waits for the person's approval,
  which they give; another chat's write is still waiting (a pending approval);
- a nightly report every few hours: a step that fails once and is retried, a sleep, a sub-run
  (the summary) and a publish step; some nights it fails for good with a token in its error
  (masked on the page);
- two weeks of token usage, a pairing code, an undelivered reply, a function file that failed
  to load, two workers, a scheduler and a sidecar beating.

The transcripts live in session files under a temporary state folder (the dashboard reads
them there); their times come from the same clock (`harness.agent.session_lines`, where a
line is stamped, is told the time by this module, as only a benchmark may).
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import fakeredis
from pydantic import SecretStr

import harness.agent.session_lines as session_module
from channels.approvals import answer_approval, ask_approval
from harness.addresses import CAN_ANSWER_META
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import handle_message
from harness.composition import extend_runtime
from harness.events import APPROVAL_GIVEN, MESSAGE_HANDLER, MESSAGE_RECEIVED
from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Context, Runtime, event, function, publish, run_id_for
from harness.runtime.function_sources import FILE_SOURCE, LoadError, replace_source
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.presence import beat
from harness.runtime.testing import drain
from harness.settings import Settings
from tests.fakes.model_server import ModelServer, Reply

START = 1_800_000_000.0
"""The clock's "now" when the history ends (2027-01-15): fixed, so the pictures are too."""
FEATURED = ("telegram", "42", "Ann")
"""The chat whose transcript is shown: channel, chat id, person."""
LEAKED = "sk-ant-api03-Screenshot0nlyNotARealKey0000"
"""A key the failing report's error carries, to show it masked."""
CHATS = [("slack", "C07OPS", "Grace"), ("discord", "ops-room", "Linus"),
         ("api", "api-7f3e", "harness chat")]  # fmt: skip
"""The other chats, which get the day's turns (the featured one only its last two)."""
QUESTIONS = ["What is on my calendar tomorrow?", "Summarise the overnight alerts.",
             "Any new issues on the tracker?", "Draft a reply to the landlord.",
             "How much did we spend on the model this week?",
             "Remind me what Bob asked."]  # fmt: skip
ANSWERS = ["Two meetings: stand-up at 9:30 and the design review at 14:00.",
           "Three alerts overnight, all from the disk check on db-2; it recovered at 04:10.",
           "Two new ones: a flaky test in CI and a typo in the README.",
           "Here is a short, polite draft; tell me if it should be firmer.",
           "About $4.10 so far this week, mostly on chat turns.",
           "Bob asked whether the report can include last month's numbers."]  # fmt: skip


@dataclass
class Clock:
    """A clock that only moves when told to (runs then get known durations)."""

    now: float = START

    def __call__(self) -> float:
        return self.now


@dataclass
class History:
    """What the screenshots open: the runtime, its state folder (sessions), the featured
    chat's session key, a report run that finished and one that failed."""

    runtime: Runtime
    state: Path
    chat: str
    report: str
    failed: str


@dataclass
class Model:
    """The scripted model's answers, in order, each moving the clock by its `seconds`."""

    clock: Clock
    queue: deque[tuple[Reply, float]] = field(default_factory=deque)

    def say(self, reply: Reply, seconds: float) -> None:
        """Queue `reply`, which takes `seconds` of the made-up clock."""
        self.queue.append((reply, seconds))

    def __call__(self, api: str, body: Any) -> Reply:
        reply, seconds = self.queue.popleft() if self.queue else (Reply.answer("Done."), 1.0)
        self.clock.now += seconds
        return reply


def _clock_datetime(clock: Clock) -> type[datetime]:
    class ClockDatetime(datetime):
        """`datetime` whose `now` reads the made-up clock (for the session lines' times)."""

        @classmethod
        def now(cls, tz: tzinfo | None = None) -> ClockDatetime:
            return cls.fromtimestamp(clock.now, tz or UTC)

    return ClockDatetime


def build(clock: Clock, model: ModelServer, folder: Path) -> History:
    """The whole history (see the module docstring), with the agent's workspace and state
    under `folder`; the agent's dependencies stay set (`set_agent_deps(None)` frees them).
    The same clock start gives the same runs, ids and times, apart from the approval ids
    and the pairing code (secure random, as they must be)."""
    saved = random.getstate(), session_module.datetime  # type: ignore[attr-defined]
    random.seed(7)  # the retry backoff's jitter
    session_module.datetime = _clock_datetime(clock)  # type: ignore[attr-defined]
    try:
        return _build(clock, model, folder)
    finally:
        random.setstate(saved[0])
        session_module.datetime = saved[1]  # type: ignore[attr-defined]


def _build(clock: Clock, model: ModelServer, folder: Path) -> History:
    registry = FunctionRegistry()
    runtime = extend_runtime(Runtime(
        redis=fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True),
        kicker=RecordingKicker(), registry=registry, clock=clock,
    ))  # fmt: skip
    report_fns(registry, clock)
    for fn in (handle_message, ask_approval, answer_approval):
        registry.register(fn)
    runtime.register_functions()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, agent_workspace=folder / "workspace", harness_state_dir=folder / "state",
        anthropic_api_key=SecretStr(model.api_key), anthropic_base_url=model.url,
        agent_timezone="UTC", model_calls="inline",
    )  # fmt: skip
    set_agent_deps(build_deps(settings))
    notes = folder / "workspace" / "notes"
    notes.mkdir(exist_ok=True)
    (notes / "todo.md").write_text("- renew passport\n- call the plumber\n- book flights\n")
    (notes / "trip.md").write_text("Lisbon, 12-16 March.\n")
    script = Model(clock)
    model.respond_with(script)
    report, failed = _day(runtime, clock, script)
    chat = _featured(runtime, clock, script)
    _records(runtime, clock, chat)
    return History(runtime, folder / "state", chat, report, failed)


def report_fns(registry: FunctionRegistry, clock: Clock) -> None:
    """The nightly report (collect, fetch (fails once), a sleep, the summary as a sub-run,
    publish) and its summary."""
    tries: dict[str, int] = {}

    def work(seconds: float, result: str) -> Any:
        def run() -> str:
            clock.now += seconds
            return result

        return run

    def fetch(run_id: str, fail: bool) -> str:
        tries[run_id] = tries.get(run_id, 0) + 1
        clock.now += 4.0
        if fail:
            raise ConnectionError(f"warehouse refused the key {LEAKED}: 401 Unauthorized")
        if tries[run_id] == 1:
            raise TimeoutError("warehouse did not answer within 30 s")
        return "1,284 rows"

    @function(id="nightly-report", trigger=event("demo/report"), retries=2, registry=registry)
    def report(ctx: Context) -> str:
        ctx.step.run("collect", work(2.5, "12 sources"))
        fail = bool(ctx.event.data.get("fail"))
        rows = ctx.step.run("fetch", lambda: fetch(ctx.run_id, fail))
        ctx.step.sleep("cool-down", "40s")
        summary = ctx.step.invoke("summarise", "report-summary", {"rows": rows})
        ctx.step.run("publish", work(1.5, "posted to #reports"))
        return str(summary)

    @function(id="report-summary", trigger=event("demo/summary"), retries=0, registry=registry)
    def summary(ctx: Context) -> str:
        ctx.step.run("group", work(3.0, "by team"))
        return str(ctx.step.run("write", work(6.0, "Sales up 4%, support tickets down 11%.")))


def settle(runtime: Runtime, clock: Clock) -> None:
    """Drain, then let the made-up minutes pass that retries and sleeps wait for."""
    drain(runtime)
    for _ in range(12):
        clock.now += 15
        drain(runtime)


def _say(runtime: Runtime, chat: tuple[str, str, str], text: str) -> str:
    """Publish a message from `chat` (a person there can answer approvals); returns the
    turn's run id. Does not drain."""
    channel, chat_id, name = chat
    data = {"message": text, "session_key": f"{channel}:{chat_id}", "channel": channel,
            "sender": {"id": "7", "name": name}, "destination": {"chat_id": chat_id},
            "channel_meta": {CAN_ANSWER_META: True}}  # fmt: skip
    message = {"name": MESSAGE_RECEIVED, "id": f"msg-{int(runtime.now_ms())}", "data": data}
    result = publish(message, runtime=runtime)
    return run_id_for(MESSAGE_HANDLER, result.event_id)


def _day(runtime: Runtime, clock: Clock, script: Model) -> tuple[str, str]:
    """24 hours of chat turns and a report every four hours; returns the last report that
    finished and the last that failed."""
    start = clock.now - 23 * 3600
    report = failed = ""
    for hour in range(23):
        clock.now = start + hour * 3600
        for k in range(hour % 4 + 1):
            n = hour * 3 + k
            script.say(Reply.answer(ANSWERS[n % len(ANSWERS)], output_tokens=40 + n % 90),
                       1.2 + (hour * 7 + k * 3) % 9)  # fmt: skip
            _say(runtime, CHATS[n % len(CHATS)], QUESTIONS[n % len(QUESTIONS)])
            drain(runtime)
            clock.now += 40
        if hour % 4 == 1:
            fail = hour in (5, 17)
            night = {"name": "demo/report", "id": f"report-{hour}", "data": {"fail": fail}}
            result = publish(night, runtime=runtime)
            settle(runtime, clock)
            if fail:
                failed = result.run_ids[0]
            else:
                report = result.run_ids[0]
    return report, failed


def _featured(runtime: Runtime, clock: Clock, script: Model) -> str:
    """The featured chat's last turns: a read, then a write approved by Ann; and a write in
    another chat still waiting for its approval. Returns the featured session key."""
    clock.now = START - 1800
    script.say(Reply.tool("ls", {"path": "notes"}, text="Let me look at your notes."), 2.1)
    notes = "You have todo.md (3 items: passport, plumber, flights) and trip.md (Lisbon, March)."
    script.say(Reply.answer(notes), 3.4)
    _say(runtime, FEATURED, "What notes do I have?")
    drain(runtime)
    clock.now += 300
    job = "def nightly(ctx):\n    ...  # email the digest at 07:00\n"
    script.say(Reply.tool("write", {"path": "functions/digest.py", "content": job}), 4.2)
    _say(runtime, FEATURED, "Set up a morning digest email, please.")
    drain(runtime)
    approval = redis_records(runtime).approvals.pending("telegram:42")
    clock.now += 45
    script.say(Reply.answer("Done: functions/digest.py sends the digest at 07:00."), 2.8)
    data = {"approval_id": approval, "decision": "approve", "subject": "telegram:user:7",
            "label": "Ann", "channel": "telegram", "destination": {"chat_id": "42"}}  # fmt: skip
    publish({"name": APPROVAL_GIVEN, "id": f"answer-{approval}", "data": data}, runtime=runtime)
    drain(runtime)
    clock.now += 600
    script.say(Reply.tool("write", {"path": "functions/backup.py", "content": "..."}), 3.1)
    _say(runtime, CHATS[0], "Back up the wiki every Sunday night.")
    drain(runtime)
    clock.now = START
    return "telegram:42"


def _records(runtime: Runtime, clock: Clock, chat: str) -> None:
    """Usage for two weeks, a pairing code, an undelivered reply, a load error, beats."""
    usage = redis_records(runtime).usage
    for day in range(14):
        tokens = {"model": "claude-haiku-4-5", "in": 40_000 + 9_000 * (day % 5),
                  "out": 6_000 + 1_500 * (day % 3)}  # fmt: skip
        usage.add(int((clock.now - (13 - day) * 86_400) * 1000), tokens, session=chat,
                  function=MESSAGE_HANDLER)  # fmt: skip
    records = redis_records(runtime)
    records.pairing.request("telegram:user:9", "Bob", "telegram")
    records.undelivered.record(UndeliveredReply(
        reply_id="reply-5f1e", run_id="", channel="discord", chat_id="ops-room",
        error="Forbidden: bot was removed from the channel", at_ms=int(clock.now * 1000) - 90_000,
    ))  # fmt: skip
    typo = "NameError: name 'shedule' is not defined"
    replace_source(runtime, FILE_SOURCE, {}, [LoadError(file="digest.py", line=12, error=typo)])
    members = [("worker-1", "worker", ("harness",)), ("worker-2", "worker", ("harness",)),
               ("scheduler-1", "scheduler", ()), ("sidecar-1", "sidecar", ())]  # fmt: skip
    for member, role, queues in members:
        beat(dataclasses.replace(runtime, worker_id=f"demo-host:{member}"), role, queues)
