"""Tools plug in through the `harness.tools` entry points: the built-in ones first, then those
of installed packages; a broken plug-in loses its own tools and nothing else."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from typing import Any

import pytest

from harness import plugins
from harness.tools import ToolSettings, default_registry
from harness.tools.base import Tool
from harness.tools.catalog import load_tool_plugins
from harness.tools.ls import LsTool

GROUP = plugins.TOOLS
BUILTIN = EntryPoint("builtin", "harness.tools.builtin:builtin_tools", GROUP)
BUILTIN_NAMES = ["read", "write", "edit", "ls", "find", "grep", "web_fetch"]


class ListingTool(LsTool):
    """A stand-in third-party tool: ls under another name."""

    name = "listing"


def listing_tools(settings: ToolSettings) -> list[Tool[Any]]:
    """A plug-in adding `listing`, only where the shell is allowed."""
    return [ListingTool()] if settings.allow_shell else []


def failing_tools(settings: ToolSettings) -> list[Tool[Any]]:
    """A plug-in whose factory breaks."""
    raise RuntimeError("no API key for the weather service")


def shadowing_tools(settings: ToolSettings) -> list[Tool[Any]]:
    """A plug-in offering a tool named like a built-in."""
    return [LsTool()]


def entry_point(name: str, target: str) -> EntryPoint:
    """An entry point of the tools group, as an installed package would declare it."""
    return EntryPoint(name, f"{__name__}:{target}", GROUP)


@pytest.fixture(autouse=True)
def builtin_plugins_back() -> Iterator[None]:
    """Each test loads its own plug-ins; the installed ones come back afterwards."""
    yield
    load_tool_plugins()


def test_default_registry_offers_the_builtin_tools_through_their_entry_point() -> None:
    # Given the project's declared tool entry points
    declared = [ep.name for ep in plugins.declared(GROUP)]

    # When the installed plug-ins are loaded and a registry is built
    load_tool_plugins()
    registry = default_registry(allow_shell=True)

    # Then the built-in tools come through the `builtin` entry point, in their usual order
    assert declared[0] == "builtin", f"pyproject.toml declares {declared}"
    assert registry.names()[:8] == [*BUILTIN_NAMES, "bash"]


def test_default_registry_adds_a_plugins_tools_after_the_builtin_ones() -> None:
    # Given an installed package adding `listing` where the shell is allowed
    load_tool_plugins([BUILTIN, entry_point("listing", "listing_tools")])

    # When the agent's registry and a sub-agent's (no shell) are built
    agent = default_registry(allow_shell=True)
    subagent = default_registry(allow_shell=False)

    # Then the plug-in decides per registry, after the built-in tools
    assert agent.names() == [*BUILTIN_NAMES, "bash", "listing"]
    assert subagent.names() == BUILTIN_NAMES


def test_default_registry_leaves_out_a_failing_plugin_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a plug-in that fails to import and one whose factory raises
    missing = EntryPoint("missing", "harness_no_such_tools:tools", GROUP)
    load_tool_plugins([BUILTIN, missing, entry_point("weather", "failing_tools")])

    # When a registry is built
    with caplog.at_level(logging.ERROR):
        registry = default_registry(allow_shell=False)

    # Then the built-in tools are all there, and each broken plug-in is named once
    assert registry.names() == BUILTIN_NAMES
    text = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert "'weather'" in text and "no API key" in text, text


def test_tool_plugins_load_names_a_plugin_that_fails_to_import(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a plug-in whose module is not installed
    missing = EntryPoint("missing", "harness_no_such_tools:tools", GROUP)

    # When the plug-ins are loaded
    with caplog.at_level(logging.ERROR, logger="harness.plugins"):
        loaded = load_tool_plugins([BUILTIN, missing])

    # Then the others load, and the log names the entry point in one line
    assert loaded == ["builtin"]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "missing = harness_no_such_tools:tools" in lines[0], lines


def test_default_registry_keeps_the_builtin_tool_when_a_plugin_takes_its_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a plug-in offering its own `ls`
    load_tool_plugins([BUILTIN, entry_point("shadow", "shadowing_tools")])

    # When a registry is built
    with caplog.at_level(logging.WARNING, logger="harness.tools.catalog"):
        registry = default_registry(allow_shell=False)

    # Then the built-in `ls` is offered once, and the clash is logged
    assert registry.names() == BUILTIN_NAMES
    assert any("'ls' is already offered" in r.getMessage() for r in caplog.records)
