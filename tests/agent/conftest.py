"""Agent fixtures: the agent's functions on a fakeredis runtime, talking to the scripted
model server through the real SDKs, with a workspace in a temporary folder."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.agent.deps import AgentDeps, agent_deps, build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.handlers import handle_message, run_subagent
from harness.agent.memory.distill import DISTILL_EVENT
from harness.agent.task_endings import task_ended
from harness.events import MESSAGE_RECEIVED, REPLY_READY
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.fakes.model_server import ModelServer, Reply
from tests.runtime_fixtures import ManualClock


@dataclass
class AgentRig:
    """The agent wired to a runtime and a scripted model; `say` sends a chat message."""

    runtime: Runtime
    deps: AgentDeps
    model: ModelServer
    workspace: Path

    def say(self, text: str, session: str = "chat-1", *, run: bool = True) -> str:
        """Publish a message and (by default) drain the runtime. Returns the run id."""
        result = publish(
            {
                "name": MESSAGE_RECEIVED,
                "data": {
                    "message": text,
                    "session_key": session,
                    "channel": "test",
                    "sender": {"id": "u1", "name": "Ana"},
                    "destination": {"chat_id": session},
                },
            },
            runtime=self.runtime,
        )
        if run:
            drain(self.runtime)
        return next(
            r for r in result.run_ids if r == run_id_for(handle_message.id, result.event_id)
        )

    def die_in_tool(self, tool: Tool[Any], answer: str = "All good.") -> str:
        """Register `tool` (a `KillsTheWorkerOnce`), have the model call it and then answer,
        and send "go": the worker dies in the tool, after the first think was recorded.
        Returns the run id; `resume` finishes the run."""
        self.deps.tools.register(tool)
        self.model.script(Reply.tool(tool.name, {}), Reply.answer(answer))
        run_id = self.say("go", run=False)
        with pytest.raises(KeyboardInterrupt):
            drain(self.runtime)
        return run_id

    def resume(self, clock: ManualClock) -> None:
        """Let the dead worker's lease expire and run what is due again."""
        clock.advance(self.runtime.lease_ttl + 1)
        drain(self.runtime)

    def distill(self, *, force: bool = False) -> dict[str, Any]:
        """Publish `agent.memory.distill` (the heartbeat's event), drain, and return the
        heartbeat run's outcome; the run must have completed."""
        result = publish({"name": DISTILL_EVENT, "data": {"force": force}}, runtime=self.runtime)
        drain(self.runtime)
        record = self.runtime.ledger.run(result.run_ids[0])
        assert record is not None and record.status == "completed", record
        outcome: dict[str, Any] = record.result
        return outcome

    def replies(self) -> list[str]:
        """Responses of every `agent.reply.ready` event so far, in order."""
        return [
            str(json.loads(fields["event"])["data"]["response"])
            for _id, fields in self.runtime.redis.xrange(self.runtime.keys.events)
            if fields["name"] == REPLY_READY
        ]

    def session_lines(self, session: str = "chat-1") -> list[dict[str, Any]]:
        """The session file's lines as dicts."""
        return [line.model_dump(mode="json") for line in self.deps.sessions.load(session)]


class KillsTheWorkerOnce(Tool[ToolParams]):
    """A tool whose first call kills the worker running it: it does its work, then sends the
    main thread SIGINT, so `KeyboardInterrupt` ends the run in the main thread after the tool ran
    but before its step was recorded, as a kill of the worker would. Later calls just work.
    `calls` counts the calls."""

    name = "kills_the_worker_once"
    description = "Does some work; the first time, the worker dies right after."
    parameters = ToolParams

    def __init__(self) -> None:
        self.calls = 0

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        self.calls += 1
        if self.calls == 1:
            # Aimed at the main thread, whose wait for this tool it interrupts at once. A
            # process-wide SIGINT may land in this thread instead; the main thread then meets
            # it at whatever bytecode runs next, possibly in a finaliser that swallows it
            # (the likely cause of rare "DID NOT RAISE" failures in the full suite). Waiting
            # for the cancel keeps this result from being returned before the interrupt.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            if ctx.cancel is not None:
                ctx.cancel.wait(2)
        return "work done"


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of each user message of a model request body (tool results and the volatile
    `<system-reminder>` tail left out)."""
    texts = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [b["text"] for b in content if b.get("type") == "text"]
    return [t for t in texts if not t.startswith("<system-reminder>")]


def make_settings(workspace: Path, model: ModelServer, **overrides: Any) -> Settings:
    """Settings for a test agent pointed at the scripted model server, ignoring any .env."""
    values: dict[str, Any] = {
        "agent_workspace": workspace,
        "mcp_config": workspace.parent / "mcp.json",  # the operator's, beside the workspace
        "anthropic_api_key": model.api_key,
        "anthropic_base_url": model.url,
        "agent_timezone": "UTC",
        # HARNESS_TEST_MODEL_CALLS=gateway runs the agent's tests with offloaded model calls
        "model_calls": os.environ.get("HARNESS_TEST_MODEL_CALLS", "inline"),
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture(autouse=True)
def model_gateway(request: pytest.FixtureRequest) -> None:
    """Where a test's runtime is on the gateway path (`MODEL_CALLS=gateway`, as
    HARNESS_TEST_MODEL_CALLS=gateway makes every test's), drain has a model gateway make the
    due model calls, in drain's thread, with the settings the test runs with at that time."""
    if "runtime" not in request.fixturenames:
        return
    runtime: Runtime = request.getfixturevalue("runtime")
    runtime.call_servers.append(ModelGateway.drained(runtime, lambda: agent_deps().settings))


@pytest.fixture
def agent(
    tmp_path: Path, model_server: ModelServer, runtime: Runtime, registry: FunctionRegistry
) -> Iterator[AgentRig]:
    registry.register(handle_message)
    registry.register(run_subagent)
    registry.register(task_ended)
    runtime.register_functions()
    workspace = tmp_path / "workspace"
    deps = build_deps(make_settings(workspace, model_server))
    set_agent_deps(deps)
    yield AgentRig(runtime=runtime, deps=deps, model=model_server, workspace=workspace)
    set_agent_deps(None)
