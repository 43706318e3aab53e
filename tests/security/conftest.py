"""The attacker's bench: a fleet reached only through the real Telegram webhook, an agent whose
model is scripted to make exactly the attacker's tool calls, and a canary secret that must
reach no model request, run record or workspace file.

The agent runs with the default trust settings (`AGENT_APPROVAL=risky`, `DM_POLICY=pairing`
with Alice paired) and with the shell sandbox of the `sandbox` parameter: every security test
that uses `attack` runs once per sandbox mode this machine supports.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from channels import registry as channel_registry
from channels.handlers import FUNCTIONS
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE, handle_message, run_subagent
from harness.records.pairing import RedisAccessStore
from harness.runtime import Runtime, run_id_for, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.tools.sandbox import SandboxSetting, ShellPolicy, sandbox_mode, unavailable_reason
from harness.web import create_app
from harness.web.webhooks import router
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.approval_presses import BOB, TELEGRAM_HEADERS
from tests.channels.conftest import slack, slack_api, telegram, telegram_api  # noqa: F401
from tests.fakes.model_server import ModelServer
from tests.fakes.telegram_api import FakeTelegramApi

CANARY = "canary-7f3a9c1e5b2d4068a1b2c3d4e5f60718"
"""A secret that lives in the project's `.env` and in the fleet's environment
(`HARNESS_TEST_CANARY`): it must never reach the model, a run record or the workspace."""

CANARY_ENV = "HARNESS_TEST_CANARY"
GROUP_ID = payloads.GROUP_CHAT["id"]
BUTTON_CODES = {"approve": "a", "deny": "d", "session": "s"}


def _mode(name: SandboxSetting) -> object:
    runs = sandbox_mode(name) == name
    reason = "" if runs else f"{name} cannot run here: {unavailable_reason(ShellPolicy(name))}"
    return pytest.param(name, marks=pytest.mark.skipif(not runs, reason=reason), id=name)


@pytest.fixture(params=[_mode("bwrap"), _mode("landlock")])
def sandbox(request: pytest.FixtureRequest) -> SandboxSetting:
    """Each shell sandbox mode this machine can run."""
    name: SandboxSetting = request.param
    return name


@dataclass
class Attack:
    """One fleet under attack. Everything goes in through the webhook; `drain` runs the bus
    in-process until every run waits or ends."""

    client: TestClient
    runtime: Runtime
    model: ModelServer
    telegram: FakeTelegramApi
    workspace: Path
    state: Path
    settings: Settings
    canary: str = CANARY
    _update: int = field(default=70000)

    def _next_update(self) -> int:
        self._update += 1
        return self._update

    def _post(self, update: dict[str, Any]) -> str:
        response = self.client.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
        assert response.status_code == 200, response.text
        drain(self.runtime)
        event_id = response.json().get("event_id")
        return run_id_for(HANDLE_MESSAGE, event_id) if event_id else ""

    def say(self, text: str) -> str:
        """Alice (paired) writes `text` in her private chat. Returns the turn's run id."""
        return self._post(payloads.tg_private_text(self._next_update(), text=text))

    def say_in_group(self, text: str, member: dict[str, Any] | None = None) -> str:
        """`member` (Alice by default; Bob is allowed too) mentions the bot in the paired
        group with `text`. Returns the turn's run id."""
        update = payloads.tg_group_mention(self._next_update())
        message = update["message"]
        message["from"] = dict(member or payloads.ALICE)
        message["message_id"] = self._update
        message["text"] = f"@harness_test_bot {text}"
        message["entities"] = [{"offset": 0, "length": 17, "type": "mention"}]
        return self._post(update)

    def _requests(self) -> list[dict[str, Any]]:
        """The approval requests posted so far (sendMessage calls with buttons), oldest first."""
        return [
            call.params
            for call in self.telegram.calls_to("sendMessage")
            if "callback_data" in json.dumps(call.params.get("reply_markup") or {})
        ]

    def approvals_asked(self) -> list[str]:
        """The text of every approval request posted so far, oldest first."""
        return [str(params.get("text", "")) for params in self._requests()]

    def press(self, decision: str, user: dict[str, Any] | None = None) -> None:
        """Press `decision` ("approve", "deny" or "session") on the newest request, as `user`
        (Alice by default), then run the bus."""
        params = self._requests()[-1]
        markup = params["reply_markup"]
        if isinstance(markup, str):
            markup = json.loads(markup)
        (button,) = [
            b
            for row in markup["inline_keyboard"]
            for b in row
            if b["callback_data"].endswith(f":{BUTTON_CODES[decision]}")
        ]
        chat = str(params["chat_id"])
        shown = [
            m
            for m in self.telegram.messages
            if str(m["chat"]["id"]) == chat and m.get("reply_markup") is not None
        ] or [m for m in self.telegram.messages if str(m["chat"]["id"]) == chat]
        message = shown[-1]
        update_id = self._next_update()
        update = {
            "update_id": update_id,
            "callback_query": {
                "id": f"cb-{update_id}",
                "from": dict(user or payloads.ALICE),
                "chat_instance": "42",
                "message": {
                    "message_id": message["message_id"],
                    "chat": message["chat"],
                    "date": 1441645600,
                    "text": message.get("text", ""),
                },
                "data": button["callback_data"],
            },
        }
        self._post(update)

    def tool_results(self) -> list[str]:
        """Every tool_result the model was sent, in order (a result sent again with a later
        request counts again), as JSON text."""
        found: list[str] = []
        for request in self.model.requests:
            for message in request.body.get("messages", []):
                content = message.get("content")
                if isinstance(content, list):
                    for block in content:
                        if isinstance(block, dict) and block.get("type") == "tool_result":
                            found.append(json.dumps(block.get("content")))
        return found

    def status(self, run_id: str) -> str:
        """The run's status; fails the test when the run is unknown."""
        run = self.runtime.ledger.run(run_id)
        assert run is not None, f"run {run_id} is unknown"
        return run.status

    def assert_no_canary(self) -> None:
        """The canary is in no model request, no Redis record and no file under the
        workspace (links are not followed: a link is not a file the fleet wrote)."""
        for request in self.model.requests:
            assert self.canary not in json.dumps(request.body), "the canary reached the model"
        for key, value in _redis_dump(self.runtime):
            assert self.canary not in value, f"the canary is in the record {key}"
        for path in _files_under(self.workspace):
            assert self.canary.encode() not in path.read_bytes(), f"the canary is in {path}"


def _redis_dump(runtime: Runtime) -> Iterator[tuple[str, str]]:
    """Every key of the runtime's Redis with its value as text, whatever its type."""
    redis = runtime.redis
    for raw_key in redis.scan_iter(count=1000):
        key = raw_key.decode() if isinstance(raw_key, bytes) else str(raw_key)
        kind = redis.type(raw_key)
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        if kind == "string":
            value: Any = redis.get(raw_key)
        elif kind == "hash":
            value = redis.hgetall(raw_key)
        elif kind == "list":
            value = redis.lrange(raw_key, 0, -1)
        elif kind == "set":
            value = redis.smembers(raw_key)
        elif kind == "zset":
            value = redis.zrange(raw_key, 0, -1)
        elif kind == "stream":
            value = redis.xrange(raw_key)
        else:
            value = ""
        yield key, repr(value)


def _files_under(root: Path) -> Iterator[Path]:
    for folder, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path


@pytest.fixture
def attack_fleet(
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    telegram: TelegramChannel,  # noqa: F811
    slack: SlackChannel,  # noqa: F811
    telegram_api: FakeTelegramApi,  # noqa: F811
    sandbox: SandboxSetting,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[..., Attack]]:
    """Build the fleet under attack, with any setting overridden (`agent_approval_allow=...`).
    The project folder is `tmp_path`: its `.env` holds the canary, beside `workspace/` and the
    state folder `.harness/`. Call it once per test."""
    project = tmp_path
    (project / ".env").write_text(f"{CANARY_ENV}={CANARY}\nANTHROPIC_API_KEY={CANARY}\n")
    monkeypatch.setenv(CANARY_ENV, CANARY)
    for fn in (handle_message, run_subagent, *FUNCTIONS):
        registry.register(fn)
    runtime.register_functions()
    set_runtime(runtime)
    store = RedisAccessStore(runtime)
    store.grant(f"telegram:user:{payloads.ALICE['id']}", "Alice", "test")
    store.grant(f"telegram:user:{BOB['id']}", "Bob", "test")
    store.grant(f"telegram:chat:{GROUP_ID}", "Wonderland", "test")
    channel_registry.reset()
    channel_registry.register("telegram", lambda: telegram)
    channel_registry.register("slack", lambda: slack)
    clients: list[TestClient] = []

    def build(**overrides: Any) -> Attack:
        workspace = project / "workspace"
        values: dict[str, Any] = {"stream_replies": False, "agent_shell_sandbox": sandbox}
        values.update(overrides)
        settings = make_settings(workspace, model_server, **values)
        deps = build_deps(settings)
        set_agent_deps(deps)
        web_settings = Settings(_env_file=None, agent_workspace=workspace)  # type: ignore[call-arg]
        client = TestClient(create_app(lambda: runtime, web_settings, routers=[router]))
        client.__enter__()
        clients.append(client)
        return Attack(
            client=client,
            runtime=runtime,
            model=model_server,
            telegram=telegram_api,
            workspace=workspace,
            state=deps.private,
            settings=settings,
        )

    yield build
    for client in clients:
        client.__exit__(None, None, None)
    channel_registry.reset()
    set_agent_deps(None)
    set_runtime(None)


@pytest.fixture
def attack(attack_fleet: Callable[..., Attack]) -> Attack:
    """The fleet under attack with the default settings."""
    return attack_fleet()
