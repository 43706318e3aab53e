from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness.redaction import MASK, register_secret
from harness.tools import (
    Tool,
    ToolContext,
    ToolError,
    ToolOutcome,
    ToolParams,
    ToolRegistry,
    default_registry,
)
from harness.tools.read import ReadParams
from tests.secrets_registry import forget_registered_secrets


class EchoParams(ToolParams):
    text: str


class RaisingTool(Tool[EchoParams]):
    name = "boom"
    description = "Raises."
    parameters = EchoParams

    def __init__(self, error: Exception) -> None:
        self.error = error

    def run(self, params: EchoParams, ctx: ToolContext) -> str:
        raise self.error


class BlockingTool(Tool[EchoParams]):
    """Blocks until its call is cancelled; records that it saw the cancellation."""

    name = "block"
    description = "Blocks."
    parameters = EchoParams
    timeout = 0.2

    def __init__(self) -> None:
        self.started = threading.Event()
        self.saw_cancel = threading.Event()

    def run(self, params: EchoParams, ctx: ToolContext) -> str:
        assert ctx.cancel is not None
        self.started.set()
        if ctx.cancel.wait(30):
            self.saw_cancel.set()
        return "stopped"


def test_registry_specs_use_each_tools_generated_schema() -> None:
    registry = default_registry(allow_shell=True)

    specs = {spec.name: spec for spec in registry.specs()}

    assert set(specs) == {"read", "write", "edit", "ls", "find", "grep", "bash", "web_fetch"}
    assert specs["read"].parameters == ReadParams.model_json_schema()
    assert all(spec.description for spec in specs.values())


def test_a_tools_schema_is_a_fresh_copy_each_time() -> None:
    # Given the schema of a tool, changed by its caller (a provider adapting it)
    tool = RaisingTool(RuntimeError("unused"))
    first = tool.json_schema()
    first["properties"]["text"]["title"] = "changed"
    first["extra"] = True
    # When it is asked for again
    second = tool.json_schema()
    # Then it is the model's schema, untouched by the first caller's changes
    assert second == EchoParams.model_json_schema()


def test_default_registry_without_shell_leaves_out_bash() -> None:
    assert "bash" not in default_registry(allow_shell=False).names()


def test_registry_unknown_tool_is_an_error_outcome(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    outcome = registry.execute("teleport", {}, ctx)

    assert outcome.is_error
    assert "unknown tool 'teleport'" in outcome.content
    assert "read" in outcome.content, "the error should list the available tools"


def test_registry_missing_required_argument_is_an_error_outcome(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    outcome = registry.execute("read", {"offset": 2}, ctx)

    assert outcome.is_error
    assert "- path: Field required" in outcome.content


def test_registry_wrong_argument_type_is_an_error_outcome(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    outcome = registry.execute("read", {"path": "a.txt", "offset": "soon"}, ctx)

    assert outcome.is_error
    assert "- offset: Input should be a valid integer" in outcome.content
    assert "'soon'" in outcome.content, "the error should show the bad value"


def test_registry_every_invalid_argument_is_listed(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    outcome = registry.execute("read", {"offset": 0, "colour": "red"}, ctx)

    assert outcome.is_error
    for expected in ("- path:", "- offset:", "- colour: Extra inputs are not permitted"):
        assert expected in outcome.content


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [('{"path": "a.txt",', "not valid JSON"), ('["a.txt"]', "must be a JSON object")],
    ids=["not-json", "not-an-object"],
)
def test_registry_string_arguments_that_are_not_a_json_object_are_an_error_outcome(
    registry: ToolRegistry, ctx: ToolContext, arguments: str, expected: str
) -> None:
    outcome = registry.execute("read", arguments, ctx)

    assert outcome.is_error
    assert expected in outcome.content, outcome.content


def test_registry_json_string_arguments_are_parsed(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    (ctx.workspace / "a.txt").write_text("hello\n")

    outcome = registry.execute("read", '{"path": "a.txt"}', ctx)

    assert outcome == ToolOutcome("hello")


def test_registry_tool_raising_is_an_error_outcome(ctx: ToolContext) -> None:
    registry = ToolRegistry([RaisingTool(RuntimeError("disk on fire"))])

    outcome = registry.execute("boom", {"text": "x"}, ctx)

    assert outcome == ToolOutcome("tool 'boom' failed: RuntimeError: disk on fire", True)


def test_registry_tool_error_message_reaches_the_model_verbatim(ctx: ToolContext) -> None:
    registry = ToolRegistry([RaisingTool(ToolError("file not found: a.txt"))])

    outcome = registry.execute("boom", {"text": "x"}, ctx)

    assert outcome == ToolOutcome("file not found: a.txt", True)


def test_registry_timeout_is_an_error_outcome_and_cancels_the_tool(ctx: ToolContext) -> None:
    tool = BlockingTool()
    registry = ToolRegistry([tool])

    outcome = registry.execute("block", {"text": "x"}, ctx)

    assert outcome.is_error
    assert "timed out after 0.2 s" in outcome.content
    assert tool.saw_cancel.wait(10), "the tool's ctx.cancel should be set on timeout"


def test_registry_caller_cancel_stops_a_running_tool(tmp_path: Path) -> None:
    tool = BlockingTool()
    tool.timeout = 60.0
    registry = ToolRegistry([tool])
    cancel = threading.Event()
    ctx = ToolContext(workspace=tmp_path, cancel=cancel)
    outcomes: list[ToolOutcome] = []
    caller = threading.Thread(
        target=lambda: outcomes.append(registry.execute("block", {"text": "x"}, ctx))
    )
    caller.start()
    assert tool.started.wait(10)

    cancel.set()
    caller.join(30)

    assert outcomes == [ToolOutcome("stopped")], "the tool should see the cancel and return"
    assert tool.saw_cancel.is_set()


def test_registry_does_not_start_a_tool_once_cancelled(tmp_path: Path) -> None:
    tool = BlockingTool()
    cancel = threading.Event()
    cancel.set()

    outcome = ToolRegistry([tool]).execute("block", {"text": "x"}, ToolContext(tmp_path, cancel))

    assert outcome.is_error
    assert "cancelled" in outcome.content
    assert not tool.started.is_set()


def test_registry_register_refuses_a_taken_name() -> None:
    registry = ToolRegistry([BlockingTool()])

    with pytest.raises(ValueError, match="already registered"):
        registry.register(BlockingTool())


def test_registry_register_adds_a_tool_to_the_specs() -> None:
    registry = default_registry(allow_shell=False)

    registry.register(BlockingTool())

    assert "block" in [spec.name for spec in registry.specs()]


class PrintingTool(Tool[EchoParams]):
    """Returns its text, as a command printing a file would."""

    name = "print"
    description = "Prints."
    parameters = EchoParams

    def run(self, params: EchoParams, ctx: ToolContext) -> str:
        return params.text


def test_registry_masks_registered_secrets_in_a_tools_output(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a registered secret (the Redis password), and a tool printing it beside a
    # credential-shaped example of the agent's own
    forget_registered_secrets(monkeypatch)
    register_secret("RedisPw-0123456789")
    printed = "url redis://:RedisPw-0123456789@host; example: token=example123"
    # When the tool runs
    outcome = ToolRegistry([PrintingTool()]).execute("print", {"text": printed}, ctx)
    # Then the model reads the output without the secret, and the example as it was
    assert outcome == ToolOutcome(f"url redis://:{MASK}@host; example: token=example123")
